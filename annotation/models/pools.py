"""Pools of caption–clip pairs to judge, where they came from, and who may judge them."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

# The judging columns' defaults are the settings' declared defaults (analysis/judging/settings.py).
from annotation.analysis.judging.settings import JUDGING_PARAMS

from .datasets import Caption, Clip, Dataset
from .runs import Run


class Pool(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="pools")
    name = models.CharField(max_length=200)
    depth = models.PositiveIntegerField(default=10, help_text="Top-k of each run that is pooled.")
    include_original_positives = models.BooleanField(default=False, help_text="Judge the original pairs too, as a check.")
    redundancy = models.FloatField(default=0.1, help_text="Share of pairs that get a second label.")
    seed = models.BigIntegerField(default=0)
    gold_rate = models.FloatField(default=0.0, help_text="Share of production assignments that are known (gold) pairs.")
    training_pass_mark = models.FloatField(default=0.8)
    lease_seconds = models.PositiveIntegerField(default=300)
    broken_reports_limit = models.PositiveIntegerField(default=3, help_text="'Clip doesn't play' reports before a pair is set aside.")
    # Judging order and stopping (annotation/services/judging). "pool_order" is the seeded random
    # order every pool had before; the others rewrite queue_order per query as labels arrive.
    judging_strategy = models.CharField(max_length=16, default=JUDGING_PARAMS["strategy"].default,
                                        choices=[(s, s) for s in JUDGING_PARAMS["strategy"].choices])
    # 'active': the machine judge whose uncertainty draws the sample (its verdicts are read when
    # the design is drawn; the pairs keep their inclusion probabilities after).
    judging_machine_judge = models.ForeignKey("annotation.MachineJudge", on_delete=models.SET_NULL, null=True,
                                              blank=True, related_name="+",
                                              help_text="'active': the machine judge whose uncertainty draws the sample.")
    # 'active': the pool's allocation constants [c0, c1] (analysis/judging/strategies.py
    # active_scale): a pair outside the top stratum has pi = min(1, c0 + c1 a), a its Neyman score;
    # drawn with the design over every query of the pool, so a query's pi need no other query.
    judging_active_scale = models.JSONField(null=True, blank=True,
                                            help_text="'active': [c0, c1], pi = min(1, c0 + c1 a) (drawn with the design).")
    judging_warmup_depth = models.PositiveIntegerField(default=JUDGING_PARAMS["warmup_depth"].default,
                                                       help_text="Pairs at rank <= this in any run go first.")
    judging_bandit_variant = models.CharField(max_length=10, default=JUDGING_PARAMS["bandit_variant"].default,
                                              choices=[("mm_ns", "MM-NS"), ("thompson", "Thompson sampling")])
    judging_sample_rate = models.FloatField(default=JUDGING_PARAMS["sample_rate"].default,
                                            help_text="'sampled': expected share of the pool judged.")
    judging_top_stratum_depth = models.PositiveIntegerField(default=JUDGING_PARAMS["top_stratum_depth"].default,
                                                            help_text="'sampled': ranks <= this always judged.")
    judging_query_budget = models.PositiveIntegerField(null=True, blank=True, help_text="Judged pairs per query, then stop.")
    judging_pool_budget = models.PositiveIntegerField(null=True, blank=True, help_text="Judged pairs in the pool, then stop.")
    judging_stop_remaining_below = models.FloatField(null=True, blank=True,
                                                     help_text="Stop a query when its estimated remaining relevant pairs fall below this.")
    judging_stop_misses_in_a_row = models.PositiveIntegerField(null=True, blank=True,
                                                               help_text="Stop a query after this many non-relevant judgments in a row.")
    judging_stopped_reason = models.CharField(max_length=20, blank=True, help_text="'pool_budget' once the pool stopped.")
    judging_stopped_at = models.DateTimeField(null=True, blank=True)
    judging_judged_at_resume = models.PositiveIntegerField(default=0, help_text="Pool budget counts judgments after this.")
    runs = models.ManyToManyField(Run, through="PoolRun", related_name="pools")
    raters = models.ManyToManyField(settings.AUTH_USER_MODEL, through="PoolMembership", related_name="rater_pools")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "name"], name="pool_unique_name"),
            models.CheckConstraint(condition=Q(redundancy__gte=0) & Q(redundancy__lte=1), name="pool_redundancy_fraction"),
            models.CheckConstraint(condition=Q(gold_rate__gte=0) & Q(gold_rate__lte=1), name="pool_gold_rate_fraction"),
        ]

    def __str__(self) -> str:
        return self.name


class PoolRun(models.Model):
    pool = models.ForeignKey(Pool, on_delete=models.CASCADE)
    run = models.ForeignKey(Run, on_delete=models.CASCADE)
    added_at = models.DateTimeField(auto_now_add=True)
    pairs_added = models.PositiveIntegerField(default=0, help_text="New pairs this run brought into the pool.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["pool", "run"], name="poolrun_unique")]


class PooledPair(models.Model):
    """One caption–clip pair to judge, judged once whichever runs proposed it.

    `role`: 'pool' pairs come from runs; 'gold' pairs have a known answer and are mixed into
    production unannounced; 'training' pairs have a known answer and form the training queue.
    The counters are kept in step with labels and leases in the same transaction, so the queue
    query can use one partial index over `available` pairs.
    """

    class Role(models.TextChoices):
        POOL = "pool"
        GOLD = "gold"
        TRAINING = "training"

    class State(models.TextChoices):
        OPEN = "open", "Needs labels"
        RESOLVED = "resolved"
        ADJUDICATION = "adjudication", "Escalated to an admin"
        SET_ASIDE = "set_aside", "Set aside (clip does not play)"
        DISAGREEMENT = "disagreement", "No majority"
        # Out of the queue by the pool's judging strategy (annotation/services/judging): the
        # query or pool stopped (an admin can resume it), or the pair is outside the sample.
        STOPPED = "stopped", "Stopped (judging rule)"
        NOT_SAMPLED = "not_sampled", "Not in the sample"

    class Answer(models.TextChoices):
        RELEVANT = "relevant"
        NOT_RELEVANT = "not_relevant"

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="pairs")
    caption = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="+")
    clip = models.ForeignKey(Clip, on_delete=models.CASCADE, related_name="+")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.POOL)
    is_original_positive = models.BooleanField(default=False)
    required_labels = models.PositiveSmallIntegerField(default=1)
    vote_count = models.PositiveSmallIntegerField(default=0)
    active_leases = models.PositiveSmallIntegerField(default=0)
    broken_reports = models.PositiveSmallIntegerField(default=0)
    state = models.CharField(max_length=14, choices=State.choices, default=State.OPEN)
    available = models.BooleanField(default=True, help_text="Open and short of labels counting live leases.")
    priority = models.PositiveSmallIntegerField(default=0, help_text="1 when started and needing more (finish first).")
    queue_order = models.BigIntegerField(default=0, help_text="Seeded random position in the queue.")
    resolved_label = models.CharField(max_length=14, choices=Answer.choices, blank=True)
    inclusion_probability = models.FloatField(default=1.0, help_text="Chance the judging design judges this pair.")
    judged_at = models.DateTimeField(null=True, blank=True, help_text="When the judging strategy counted it judged.")
    resolved_by_admin = models.BooleanField(default=False)
    known_answer = models.CharField(max_length=14, choices=Answer.choices, blank=True, help_text="Gold/training only.")
    explanation = models.TextField(blank=True, help_text="Training only: the guideline the answer rests on.")
    adjudication_note = models.TextField(blank=True)
    # Moment pools judge a span of the clip's video; empty for whole-clip pairs.
    start = models.FloatField(null=True, blank=True)
    end = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pool", "role", "caption", "clip"], condition=Q(start__isnull=True),
                                    name="pair_unique_in_pool"),
            models.UniqueConstraint(fields=["pool", "role", "caption", "clip", "start", "end"], condition=Q(start__isnull=False),
                                    name="pair_span_unique_in_pool"),
            models.CheckConstraint(condition=Q(required_labels__gte=1) & Q(required_labels__lte=3), name="pair_required_labels"),
            models.CheckConstraint(condition=Q(vote_count__lte=3), name="pair_vote_count_bounded"),
            models.CheckConstraint(condition=(Q(start__isnull=True) & Q(end__isnull=True))
                                   | (Q(start__gte=0) & Q(start__lt=models.F("end"))), name="pair_span_valid"),
        ]
        indexes = [
            # The queue: only available pool pairs, in the order they are handed out.
            models.Index(fields=["pool", "-priority", "queue_order"], condition=Q(available=True, role="pool"),
                         name="pair_queue"),
            models.Index(fields=["pool", "role", "state"], name="pair_pool_state"),
        ]

    def __str__(self) -> str:
        return f"{self.caption_id}->{self.clip_id}"


class PairProvenance(models.Model):
    """Which runs proposed a pair, and at which rank (needed by leave-one-run-out and overlap)."""

    pair = models.ForeignKey(PooledPair, on_delete=models.CASCADE, related_name="provenance")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    rank = models.PositiveIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["pair", "run"], name="provenance_unique")]


class RaterProfile(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="rater_profile")
    paused = models.BooleanField(default=False)
    pseudonym = models.PositiveIntegerField(unique=True, help_text="Rater id used in exports instead of the user name.")

    def __str__(self) -> str:
        return f"rater {self.pseudonym}"


class RaterInvitation(models.Model):
    """A one-use link that lets a rater set their own password (services/accounts/invitations.py).
    Only the token's sha256 is kept: the link carries the token, and a copy of the database opens
    no account."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="invitations")
    token_sha256 = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True, help_text="Replaced by a newer invitation.")

    def __str__(self) -> str:
        return f"invitation of user {self.user_id}"


class PoolMembership(models.Model):
    class Training(models.TextChoices):
        PENDING = "pending"
        PASSED = "passed"
        FAILED = "failed"

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="memberships")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    training = models.CharField(max_length=10, choices=Training.choices, default=Training.PENDING)
    training_score = models.FloatField(null=True, blank=True)
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["pool", "rater"], name="membership_unique")]
