"""Moment pools and sampled deep pools: the designs behind two special kinds of pool.

Both are ordinary pools whose PooledPair rows feed the rater queue unchanged. What the queue does
not need, but the analyses do, lives here: which predictions were merged into a moment pair's
judged span, and, for a sampled pool, every pooled document with its stratum and inclusion
probability (including the ones the sample left unjudged, which the infAP estimators count).
"""
from __future__ import annotations

from django.db import models
from django.db.models import Q

from .datasets import Caption, Clip
from .pools import Pool, PooledPair
from .runs import Run

__all__ = ["MomentPoolDesign", "MomentMember", "SampledPoolDesign", "SampledDocument"]


class MomentPoolDesign(models.Model):
    """Marks a pool as a moment pool and keeps the threshold its spans were merged at."""

    pool = models.OneToOneField(Pool, on_delete=models.CASCADE, related_name="moment_design")
    iou_threshold = models.FloatField(default=0.7, help_text="Predictions whose temporal IoU reaches this merge into one span.")

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(iou_threshold__gt=0) & Q(iou_threshold__lte=1), name="moment_design_iou_range"),
        ]

    def __str__(self) -> str:
        return f"moment design of {self.pool}"


class MomentMember(models.Model):
    """One pooled prediction inside a judged span: which run, at which rank, with which span."""

    pair = models.ForeignKey(PooledPair, on_delete=models.CASCADE, related_name="moment_members")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    rank = models.PositiveIntegerField()
    start = models.FloatField()
    end = models.FloatField()
    score = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pair", "run", "rank"], name="moment_member_unique"),
            models.CheckConstraint(condition=Q(start__gte=0) & Q(start__lt=models.F("end")), name="moment_member_span_valid"),
        ]


class SampledPoolDesign(models.Model):
    """Marks a pool as sampled: the strata it was drawn with and how many judgments that saves."""

    pool = models.OneToOneField(Pool, on_delete=models.CASCADE, related_name="sampled_design")
    strata = models.JSONField(help_text="[[lo, hi, rate], ...]: rank ranges from 1 and the share of each judged.")
    size_rule = models.CharField(max_length=10, default="ceil", help_text="How rate x documents becomes a sample size.")
    full_pool_size = models.PositiveIntegerField(default=0, help_text="Judgments the whole depth would need.")
    sampled_count = models.PositiveIntegerField(default=0, help_text="Judgments the sample asks for.")

    def __str__(self) -> str:
        return f"sampled design of {self.pool}"

    @property
    def judgments_saved(self) -> int:
        return self.full_pool_size - self.sampled_count


class SampledDocument(models.Model):
    """A caption–clip pair of a sampled pool's full depth; only sampled ones have a pair to judge."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="sampled_documents")
    caption = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="+")
    clip = models.ForeignKey(Clip, on_delete=models.CASCADE, related_name="+")
    stratum = models.PositiveSmallIntegerField(help_text="Index into the design's strata, from the best rank over runs.")
    best_rank = models.PositiveIntegerField()
    sampled = models.BooleanField()
    inclusion_probability = models.FloatField()
    pair = models.OneToOneField(PooledPair, on_delete=models.CASCADE, null=True, blank=True, related_name="sampled_document")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pool", "caption", "clip"], name="sampled_document_unique"),
            models.CheckConstraint(condition=Q(inclusion_probability__gte=0) & Q(inclusion_probability__lte=1),
                                   name="sampled_document_probability"),
            models.CheckConstraint(condition=Q(sampled=False) | Q(pair__isnull=False), name="sampled_document_has_pair"),
        ]
        indexes = [models.Index(fields=["pool", "caption", "stratum"], name="sampled_document_stratum")]
