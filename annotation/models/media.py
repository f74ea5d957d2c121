"""What the media check found for each clip (services/media/check.py): the latest finding per clip."""
from __future__ import annotations

from django.db import models

from .datasets import Clip

__all__ = ["ClipMediaCheck"]


class ClipMediaCheck(models.Model):
    """The latest media check of one clip. `problems`: [{"code", "message", "fix", "preparable"}],
    empty when the clip plays; `playable` is False when any problem keeps raters from watching it."""

    clip = models.OneToOneField(Clip, on_delete=models.CASCADE, related_name="media_check")
    #: The media the finding is about: a clip whose media changed since is checked again.
    media = models.CharField(max_length=1000, blank=True)
    checked_at = models.DateTimeField()
    playable = models.BooleanField()
    container = models.CharField(max_length=40, blank=True)
    video_codec = models.CharField(max_length=40, blank=True)
    audio_codecs = models.CharField(max_length=200, blank=True)
    duration = models.FloatField(null=True, blank=True)
    index_at_front = models.BooleanField(null=True)
    problems = models.JSONField(default=list)

    class Meta:
        indexes = [models.Index(fields=["playable"], name="clip_media_check_playable")]

    def __str__(self) -> str:
        return f"{self.clip_id}: {'plays' if self.playable else ', '.join(p['code'] for p in self.problems)}"
