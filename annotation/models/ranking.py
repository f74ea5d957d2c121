"""Five-caption ranking studies: how well a semantic proxy agrees with people (methodology §7).

A study samples clips of a dataset; for each sampled clip and each proxy a task shows the clip and
five captions chosen by the proxy (most similar, least similar, quartile positions), and
`raters_per_task` distinct raters each order the five by relevance. Tasks are handed out like pool
pairs: short leases, counters kept on the task row under its row lock, one partial index over
`available` tasks (see annotation/services/ranking.py).

Proxy matrices themselves are stored as `Artefact(kind="proxy_matrix")` files, not as models.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from .datasets import Caption, Clip, Dataset
from .jobs import Job
from .labels import Lease, new_lease_token

__all__ = ["RankingLease", "RankingMembership", "RankingStudy", "RankingSubmission", "RankingTask", "RankingTaskCaption"]


class RankingStudy(models.Model):
    class Mode(models.TextChoices):
        PAPER = "paper", "As published (NLTK 3.5 behaviour)"
        MODERN = "modern", "Cleaned-up pipeline (NLTK 3.10)"

    class Synsets(models.TextChoices):
        WORDNET = "wordnet", "WordNet 3.0 synsets chosen by Lesk"
        EPIC100 = "epic100", "EPIC-KITCHENS-100 verb/noun classes"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="ranking_studies")
    name = models.CharField(max_length=200)
    proxies = models.JSONField(default=list, help_text="Proxy names, e.g. ['bow', 'met']; one task per clip and proxy.")
    n_clips = models.PositiveIntegerField(default=100)
    seed = models.BigIntegerField(default=0)
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.MODERN)
    synsets = models.CharField(max_length=10, choices=Synsets.choices, default=Synsets.WORDNET)
    min_fraction = models.FloatField(default=0.25, help_text="Multi-caption clips: share of captions a word must appear in.")
    raters_per_task = models.PositiveSmallIntegerField(default=3)
    lease_seconds = models.PositiveIntegerField(default=600)
    pipelines = models.JSONField(default=dict, blank=True, help_text="describe_pipeline() of each proxy, with versions.")
    raters = models.ManyToManyField(settings.AUTH_USER_MODEL, through="RankingMembership",
                                    related_name="rater_ranking_studies")
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "name"], name="ranking_study_unique_name"),
            # Consistency ("all raters put A above B") needs at least two raters.
            models.CheckConstraint(condition=Q(raters_per_task__gte=2) & Q(raters_per_task__lte=10),
                                   name="ranking_study_raters_per_task"),
            models.CheckConstraint(condition=Q(min_fraction__gte=0) & Q(min_fraction__lte=1),
                                   name="ranking_study_min_fraction"),
        ]

    def __str__(self) -> str:
        return self.name


class RankingMembership(models.Model):
    study = models.ForeignKey(RankingStudy, on_delete=models.CASCADE, related_name="memberships")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="ranking_memberships")
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["study", "rater"], name="ranking_membership_unique")]


class RankingTask(models.Model):
    """One clip and the five captions one proxy chose for it, to be ordered by several raters.

    `submission_count` counts the orderings that count (at most `required_submissions`);
    `available` is true exactly when `active_leases + submission_count < required_submissions`.
    """

    study = models.ForeignKey(RankingStudy, on_delete=models.CASCADE, related_name="tasks")
    clip = models.ForeignKey(Clip, on_delete=models.CASCADE, related_name="+")
    proxy = models.CharField(max_length=10)
    n_candidates = models.PositiveIntegerField(help_text="Captions the proxy ranked (all but the clip's own).")
    required_submissions = models.PositiveSmallIntegerField()
    submission_count = models.PositiveSmallIntegerField(default=0)
    active_leases = models.PositiveSmallIntegerField(default=0)
    available = models.BooleanField(default=True)
    priority = models.PositiveSmallIntegerField(default=0, help_text="1 once started: finish tasks before opening new ones.")
    queue_order = models.BigIntegerField(default=0, help_text="Seeded random position in the queue.")
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["study", "clip", "proxy"], name="ranking_task_unique"),
            # Never more holders than the task needs, whatever the interleaving of requests.
            models.CheckConstraint(
                condition=Q(submission_count__lte=models.F("required_submissions") - models.F("active_leases")),
                name="ranking_task_capacity"),
        ]
        indexes = [
            models.Index(fields=["study", "-priority", "queue_order"], condition=Q(available=True),
                         name="ranking_task_queue"),
            models.Index(fields=["study", "proxy"], name="ranking_task_proxy"),
        ]

    def __str__(self) -> str:
        return f"{self.proxy}:{self.clip_id}"


class RankingTaskCaption(models.Model):
    """One of a task's five captions with the proxy's view of it (never shown to raters)."""

    class Position(models.TextChoices):
        MOST = "most", "Most similar"
        RANK_Q1 = "rank_q1", "First quartile"
        RANK_MEDIAN = "rank_median", "Median"
        RANK_Q3 = "rank_q3", "Third quartile"
        LEAST = "least", "Least similar"

    task = models.ForeignKey(RankingTask, on_delete=models.CASCADE, related_name="captions")
    caption = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="+")
    position = models.CharField(max_length=12, choices=Position.choices)
    candidate_rank = models.PositiveIntegerField(help_text="0-based rank among the candidates, most similar first.")
    score = models.FloatField(help_text="Proxy similarity of the caption to the clip.")

    class Meta:
        ordering = ["candidate_rank"]
        constraints = [
            models.UniqueConstraint(fields=["task", "caption"], name="ranking_caption_unique"),
            models.UniqueConstraint(fields=["task", "position"], name="ranking_caption_position_unique"),
        ]


class RankingLease(models.Model):
    """A task held by one rater for a short time; renewed by the page's heartbeat."""

    State = Lease.State

    task = models.ForeignKey(RankingTask, on_delete=models.CASCADE, related_name="leases")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="ranking_leases")
    token = models.CharField(max_length=32, unique=True, default=new_lease_token, editable=False,
                             help_text="Opaque id shown to the rater instead of the lease id.")
    state = models.CharField(max_length=10, choices=Lease.State.choices, default=Lease.State.ACTIVE)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "rater"], condition=Q(state="active"), name="ranking_lease_one_live"),
        ]
        indexes = [
            models.Index(fields=["expires_at"], condition=Q(state="active"), name="ranking_lease_live_expiry"),
            models.Index(fields=["rater", "state"], name="ranking_lease_rater_state"),
        ]


class RankingSubmission(models.Model):
    """One rater's ordering of a task's five captions, most relevant first (caption ids).

    A submission that arrives when the task no longer needs it (its lease ended and others took
    the place) is stored with `counted=False` and never enters the report."""

    task = models.ForeignKey(RankingTask, on_delete=models.CASCADE, related_name="submissions")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="ranking_submissions")
    client_id = models.CharField(max_length=64, help_text="Generated by the client; a replay returns this submission.")
    order = models.JSONField(help_text="Caption ids, most relevant first.")
    seconds = models.FloatField(null=True, blank=True)
    lease = models.ForeignKey(RankingLease, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    counted = models.BooleanField(default=True)
    surplus_reason = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "rater"], name="ranking_submission_one_per_rater"),
            models.UniqueConstraint(fields=["rater", "client_id"], name="ranking_submission_idempotent"),
            models.CheckConstraint(condition=Q(seconds__isnull=True) | Q(seconds__gte=0), name="ranking_submission_seconds"),
        ]
        indexes = [models.Index(fields=["rater", "created_at"], name="ranking_submission_rater_time")]
