"""Crowd studies (Prolific / MTurk workers entering a pool by link) and rater quality control."""
from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.db.models import Q

from .pools import Pool

__all__ = ["CrowdStudy", "CrowdWorker", "QualityRule", "QualityAction"]


def new_study_token() -> str:
    """The public part of a study link: random, so links of other studies cannot be guessed."""
    return secrets.token_urlsafe(18)


def new_secret() -> str:
    return secrets.token_urlsafe(16)


class CrowdStudy(models.Model):
    """One pool opened to a crowd platform: how workers arrive, what they agree to, how much they
    judge and how they are sent back."""

    class Platform(models.TextChoices):
        PROLIFIC = "prolific", "Prolific"
        MTURK = "mturk", "Amazon Mechanical Turk"

    pool = models.OneToOneField(Pool, on_delete=models.CASCADE, related_name="crowd_study")
    token = models.CharField(max_length=32, unique=True, default=new_study_token, editable=False)
    platform = models.CharField(max_length=10, choices=Platform.choices)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True, help_text="What the task is; shown on the MTurk preview and the entry page.")
    completion_code = models.CharField(max_length=64, blank=True, help_text="Prolific: the code shown at the end.")
    quota_pairs = models.PositiveIntegerField(null=True, blank=True, help_text="Pairs each worker judges (gold included).")
    quota_minutes = models.PositiveIntegerField(null=True, blank=True, help_text="Minutes of judging each worker does.")
    consent_text = models.TextField()
    guidelines_extra = models.TextField(blank=True, help_text="Shown after the platform's rater guidelines.")
    training_required = models.BooleanField(default=True, help_text="Workers take the pool's training queue first.")
    idle_timeout_seconds = models.PositiveIntegerField(default=600, help_text="Silence after which a worker's pairs go back.")
    is_open = models.BooleanField(default=True)
    places = models.PositiveIntegerField(null=True, blank=True,
                                         help_text="How many workers may take part; empty: no cap. A worker who returned "
                                                   "the task having judged nothing frees their place.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(places__isnull=True) | Q(places__gte=1), name="crowdstudy_places_positive"),
            models.CheckConstraint(condition=Q(quota_pairs__isnull=False) | Q(quota_minutes__isnull=False),
                                   name="crowdstudy_has_quota"),
            models.CheckConstraint(condition=~Q(platform="prolific") | ~Q(completion_code=""),
                                   name="crowdstudy_prolific_code"),
            models.CheckConstraint(condition=Q(idle_timeout_seconds__gte=30), name="crowdstudy_idle_timeout_min"),
        ]

    def __str__(self) -> str:
        return f"{self.title} ({self.get_platform_display()})"


class CrowdWorker(models.Model):
    """A platform worker's account in one study. The platform id is unique per study; the account
    has no usable password and is reached only through the study link."""

    class Stage(models.TextChoices):
        CONSENT = "consent"
        GUIDELINES = "guidelines"
        WORK = "work", "Training and judging"
        DONE = "done"
        DECLINED = "declined", "Declined consent"
        RETURNED = "returned", "Returned the task"  # judged nothing; their place is free

    study = models.ForeignKey(CrowdStudy, on_delete=models.CASCADE, related_name="workers")
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="crowd_worker")
    worker_id = models.CharField(max_length=64, help_text="PROLIFIC_PID or MTurk workerId.")
    session_id = models.CharField(max_length=64, blank=True, help_text="Latest SESSION_ID or assignmentId.")
    external_study_id = models.CharField(max_length=64, blank=True, help_text="Latest STUDY_ID or hitId.")
    submit_to = models.CharField(max_length=200, blank=True, help_text="MTurk turkSubmitTo (an MTurk host).")
    stage = models.CharField(max_length=10, choices=Stage.choices, default=Stage.CONSENT)
    arrivals = models.PositiveIntegerField(default=1)
    consented_at = models.DateTimeField(null=True, blank=True)
    guidelines_read_at = models.DateTimeField(null=True, blank=True)
    work_started_at = models.DateTimeField(null=True, blank=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    completed_session_id = models.CharField(max_length=64, blank=True, help_text="The session/assignment that completed.")
    # Neither is a code itself: the resume code is an HMAC of (pk, resume_salt) under SECRET_KEY, so
    # a copy of the database does not give away workers' codes; entry_nonce is the one in the
    # signed entry form that created the account (the same form posted twice proves the browser).
    resume_salt = models.CharField(max_length=32, default=new_secret, editable=False)
    entry_nonce = models.CharField(max_length=32, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["study", "worker_id"], name="crowdworker_unique_per_study")]
        indexes = [models.Index(fields=["study", "stage"], name="crowdworker_study_stage")]


class QualityRule(models.Model):
    """A pool's rule on gold answers: after `min_gold_answers`, a rater whose gold accuracy is
    below `min_gold_accuracy` is paused (and optionally their labels set aside)."""

    pool = models.OneToOneField(Pool, on_delete=models.CASCADE, related_name="quality_rule")
    enabled = models.BooleanField(default=True)
    min_gold_answers = models.PositiveIntegerField(default=10)
    min_gold_accuracy = models.FloatField(default=0.7)
    set_aside_labels = models.BooleanField(default=False, help_text="The paused rater's pool labels stop counting.")
    too_fast_seconds = models.FloatField(default=2.0, help_text="Answers quicker than this count as too fast.")

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(min_gold_accuracy__gte=0) & Q(min_gold_accuracy__lte=1),
                                   name="qualityrule_accuracy_fraction"),
            models.CheckConstraint(condition=Q(min_gold_answers__gte=1), name="qualityrule_min_gold_positive"),
            models.CheckConstraint(condition=Q(too_fast_seconds__gte=0), name="qualityrule_too_fast_nonnegative"),
        ]


class QualityAction(models.Model):
    """What a pool's quality rule did to a rater, with the figures it acted on (the audit trail)."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="quality_actions")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="quality_actions")
    gold_answers = models.PositiveIntegerField()
    gold_correct = models.PositiveIntegerField()
    threshold = models.FloatField()
    labels_set_aside = models.PositiveIntegerField(default=0)
    pairs_reopened = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
