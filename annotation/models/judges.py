"""Machine judges: an automatic assessor's verdicts (a language or vision-language model), imported
to be measured against people.

They live in their own tables, apart from `Label`, on purpose: the queue, resolution, agreement,
exports and rater quality control read `Label` only, so a machine verdict can never be counted as a
human one, whatever those rules become.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from .datasets import Caption, Clip, Dataset

__all__ = ["MachineJudge", "MachineJudgment"]


class MachineJudge(models.Model):
    """One import of one automatic assessor's judgments, attached to a pool (judging its pairs) or
    to a judgment set (judging the pairs that set has verdicts on)."""

    class Kind(models.TextChoices):
        MACHINE = "machine"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="machine_judges")
    pool = models.ForeignKey("annotation.Pool", on_delete=models.CASCADE, related_name="machine_judges",
                             null=True, blank=True)
    judgment_set = models.ForeignKey("annotation.JudgmentSet", on_delete=models.CASCADE, related_name="machine_judges",
                                     null=True, blank=True)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.MACHINE, editable=False)
    name = models.CharField(max_length=200)
    model_name = models.CharField(max_length=300, blank=True, help_text="The model the file names (e.g. gpt-4o).")
    prompt_version = models.CharField(max_length=300, blank=True, help_text="Prompt or version the file names.")
    source_name = models.CharField(max_length=500, blank=True)
    checksum = models.CharField(max_length=64, help_text="SHA-256 of the imported file.")
    counts = models.JSONField(default=dict, blank=True, help_text="Records read, judgments by label.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "name"], name="machinejudge_unique_name"),
            models.CheckConstraint(condition=(Q(pool__isnull=False) & Q(judgment_set__isnull=True))
                                   | (Q(pool__isnull=True) & Q(judgment_set__isnull=False)),
                                   name="machinejudge_pool_xor_set"),
        ]

    def __str__(self) -> str:
        return self.name


class MachineJudgment(models.Model):
    """The machine's verdict on one caption–clip pair, with its score when the file gives one."""

    class Label(models.TextChoices):
        RELEVANT = "relevant"
        NOT_RELEVANT = "not_relevant"

    judge = models.ForeignKey(MachineJudge, on_delete=models.CASCADE, related_name="judgments")
    caption = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="+")
    clip = models.ForeignKey(Clip, on_delete=models.CASCADE, related_name="+")
    label = models.CharField(max_length=14, choices=Label.choices)
    score = models.FloatField(null=True, blank=True, help_text="The model's confidence or grade, as the file gives it.")
    source_record = models.CharField(max_length=100, blank=True, help_text="Where in the file, e.g. 'line 12'.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["judge", "caption", "clip"], name="machinejudgment_unique_pair")]
