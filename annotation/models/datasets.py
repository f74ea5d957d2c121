"""Benchmark test splits: what raters watch (clips) and what they read (captions)."""
from __future__ import annotations

import re

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.analysis.storable_text import media_problem


class Dataset(models.Model):
    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    source_format = models.CharField(max_length=40, blank=True, help_text="Importer that loaded it.")
    source_name = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Kept by the services that add or remove clips and captions (services/datasets.py), so a
    # listing reads them instead of counting a million rows per dataset on every request.
    clip_count = models.PositiveIntegerField(default=0, editable=False)
    caption_count = models.PositiveIntegerField(default=0, editable=False)
    original_positive_count = models.PositiveIntegerField(
        default=0, editable=False, help_text="Captions with the clip they were written for (the benchmark's positives).")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Clip(models.Model):
    """A video, or a span of one, that a rater watches.

    `media` is either an absolute URL or a path relative to MEDIA_ROOT; `video_id` names the
    source video, so several clips (segments) can share one video file.
    """

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="clips")
    external_id = models.CharField(max_length=200)
    video_id = models.CharField(max_length=200)
    media = models.CharField(max_length=1000, blank=True)
    start = models.FloatField(null=True, blank=True)
    end = models.FloatField(null=True, blank=True)
    duration = models.FloatField(null=True, blank=True)
    # Set by prepare_media (services/media/prepare.py) when it replaced `media` with a copy browsers
    # play: the reference the dataset was imported with, and where in it the copy starts (seconds;
    # a copy cut to the clip's span starts there, and start/end are then the copy's).
    # Database defaults too: imports insert clips with COPY (annotation/bulk.py), past Django's defaults.
    original_media = models.CharField(max_length=1000, blank=True, default="", db_default="")
    media_offset = models.FloatField(default=0, db_default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "external_id"], name="clip_unique_external_id"),
            models.CheckConstraint(
                condition=(Q(start__isnull=True) & Q(end__isnull=True))
                | (Q(start__isnull=False) & Q(end__isnull=False) & Q(start__gte=0) & Q(start__lt=models.F("end"))),
                name="clip_span_valid",
            ),
            models.CheckConstraint(condition=Q(duration__isnull=True) | Q(duration__gt=0), name="clip_duration_positive"),
        ]
        # /media/ checks each request's file against the clips that use it (selectors/media.py).
        indexes = [models.Index(fields=["media"], name="clip_media")]

    def __str__(self) -> str:
        return self.external_id

    @property
    def has_span(self) -> bool:
        return self.start is not None and self.end is not None

    @property
    def playback_url(self) -> str:
        """http(s) URLs as they are; paths under MEDIA_ROOT (also stored as /media/<path>) through the
        Range-aware view. Imports refuse anything else; media set another way (Django's admin) that
        would point elsewhere (another scheme or host, an absolute path, `..`) plays nothing."""
        prefix = "/" + settings.MEDIA_URL.strip("/") + "/"
        media = self.media[len(prefix):] if self.media.startswith(prefix) else self.media
        if media_problem(media):
            return ""
        return media if re.match(r"^https?://", media, re.IGNORECASE) else prefix + media


class Caption(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="captions")
    external_id = models.CharField(max_length=200)
    text = models.TextField()
    # The clip the caption was written for: its original positive (kept relevant whatever raters say).
    original_clip = models.ForeignKey(Clip, on_delete=models.CASCADE, related_name="original_captions", null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "external_id"], name="caption_unique_external_id"),
        ]

    def __str__(self) -> str:
        return self.external_id
