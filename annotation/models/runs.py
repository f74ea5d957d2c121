"""One model's ranked predictions for a dataset."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from .datasets import Caption, Clip, Dataset


class Run(models.Model):
    class Kind(models.TextChoices):
        CLIP = "clip", "Clip retrieval"
        MOMENT = "moment", "Moment retrieval"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="runs")
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.CLIP)
    uploader = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    source_name = models.CharField(max_length=500, blank=True)
    source_format = models.CharField(max_length=20, blank=True)
    checksum = models.CharField(max_length=64, help_text="SHA-256 of the uploaded file.")
    depth = models.PositiveIntegerField(default=0, help_text="Deepest rank in the run.")
    prediction_count = models.PositiveIntegerField(default=0)
    caption_count = models.PositiveIntegerField(default=0)
    scores_file = models.CharField(max_length=1000, blank=True,
                                   help_text="A score matrix run (.npz) as imported, relative to RUNS_ROOT; its "
                                             "predictions are the rows' rankings and are not stored one by one.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dataset", "name"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "name"], name="run_unique_name"),
            # The same file imported twice (a retried upload) must not create a second run.
            models.UniqueConstraint(fields=["dataset", "checksum"], name="run_unique_checksum"),
        ]

    def __str__(self) -> str:
        return self.name


class Prediction(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="predictions")
    caption = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="+")
    clip = models.ForeignKey(Clip, on_delete=models.CASCADE, related_name="+")
    rank = models.PositiveIntegerField()
    score = models.FloatField(null=True, blank=True)
    start = models.FloatField(null=True, blank=True)
    end = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "caption", "rank"], name="prediction_unique_rank"),
            models.CheckConstraint(condition=Q(rank__gte=1), name="prediction_rank_positive"),
            models.CheckConstraint(
                condition=(Q(start__isnull=True) & Q(end__isnull=True))
                | (Q(start__isnull=False) & Q(end__isnull=False) & Q(start__gte=0) & Q(start__lt=models.F("end"))),
                name="prediction_span_valid",
            ),
        ]
