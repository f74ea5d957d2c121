"""Releases: numbered, immutable snapshots of a corrected benchmark (services/releases).

A row is written once, when its archive is complete, and never changes afterwards: `save()` refuses
an update, and on PostgreSQL a trigger (migration 0012_releases_release) refuses any UPDATE that
touches more than `created_by` (which a deleted user's account may null). The sources are kept as
JSON (names and ids as they were), so a pool renamed or deleted later leaves the release as it was.
"""
from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

from .datasets import Dataset
from .jobs import Job

__all__ = ["Release", "ReleaseImmutable", "RELEASE_NAME_PATTERN", "ReleaseSubmissionPolicy", "Submission"]

#: A release name: a slug (lower-case letters, digits, single hyphens), e.g. `msrvtt-fire`.
RELEASE_NAME_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"


class ReleaseImmutable(Exception):
    """An attempt to change a release after it was created."""


class Release(models.Model):
    name = models.CharField(max_length=80, validators=[RegexValidator(RELEASE_NAME_PATTERN)],
                            help_text="Slug shared by every version, e.g. msrvtt-fire.")
    version = models.PositiveIntegerField(help_text="1, 2, ... per name, in order of creation.")
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="releases")
    title = models.CharField(max_length=300, blank=True)
    licence = models.CharField(max_length=200, blank=True)
    authors = models.JSONField(default=list, blank=True, help_text="Names, as CITATION.cff lists them.")
    sources = models.JSONField(default=list, help_text="The pools and judgment sets frozen, as they were.")
    aggregation = models.CharField(max_length=40, default="majority")
    counts = models.JSONField(default=dict, blank=True)
    files = models.JSONField(default=list, blank=True, help_text="[{path, bytes, sha256}] inside the archive.")
    leaderboard = models.JSONField(null=True, blank=True,
                                   help_text="The corrected leaderboard in the archive (first pool's runs), for the page.")
    archive = models.CharField(max_length=500, help_text="The zip's name in the exports storage area.")
    pairs_file = models.CharField(max_length=500, help_text="The resolved pairs, for diffs (exports area).")
    bytes = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["name", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="release_unique_version"),
            models.CheckConstraint(condition=models.Q(version__gte=1), name="release_version_positive"),
        ]

    def save(self, *args, **kwargs):
        if self.pk is not None and not self._state.adding:
            raise ReleaseImmutable(f"release {self.slug} is immutable; make a new version instead")
        super().save(*args, **kwargs)

    @property
    def slug(self) -> str:
        return f"{self.name}@v{self.version}"

    @property
    def folder(self) -> str:
        return f"{self.name}-v{self.version}"

    def __str__(self) -> str:
        return self.slug


class ReleaseSubmissionPolicy(models.Model):
    """Who may submit runs to a release, beside the release because a release row never changes
    (its trigger refuses any update): an admin's setting, off until changed."""

    release = models.OneToOneField(Release, on_delete=models.CASCADE, related_name="submission_policy")
    anonymous_allowed = models.BooleanField(default=False, help_text="Visitors without an account may submit runs "
                                            "(throttled by address).")
    updated_at = models.DateTimeField(auto_now=True)


class Submission(models.Model):
    """A run file submitted to a release, scored against its qrels.txt by a job (services/submissions).

    `holes` keeps the scored top K pairs without a verdict. An admin's acceptance
    (services/submissions/accept.py) builds an incremental pool over them, seeded from the release's
    verdicts so only new pairs are queued: `pool` is that pool (its labels are the human labels of
    the holes), and the next version of the release scores the run with its holes judged."""

    class Status(models.TextChoices):
        SUBMITTED = "submitted"  # stored, its scoring job queued or running (or failed: see the job)
        SCORED = "scored"
        ACCEPTED = "accepted"  # its holes queued for people in `pool`

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="submissions")
    name = models.CharField(max_length=200, help_text="The model's name, as the submitter gave it.")
    run_file = models.CharField(max_length=500, help_text="The stored run file (uploads area).")
    source_name = models.CharField(max_length=300, blank=True)
    submitted_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                     related_name="submissions")
    created_at = models.DateTimeField(auto_now_add=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.SUBMITTED)
    job = models.OneToOneField(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="submission")
    summary = models.JSONField(null=True, blank=True, help_text="Measures, Judged@K and holes per query.")
    holes = models.JSONField(null=True, blank=True, help_text="{k, pairs: [[caption id, clip id], ...]}: the "
                             "top K pairs without a verdict in the release.")
    # Set once, at acceptance. SET_NULL: deleting the pool leaves the submission's record (who
    # accepted it, when) while its holes are simply no longer being judged.
    pool = models.ForeignKey("annotation.Pool", on_delete=models.SET_NULL, null=True, blank=True,
                             related_name="submissions", help_text="The incremental pool its holes are judged in.")
    accepted_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                    related_name="+")
    accepted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    @property
    def state(self) -> str:
        """The status, or 'failed' when the scoring job failed (its errors name file, line and field)."""
        if self.status == self.Status.SUBMITTED and self.job is not None and self.job.status == Job.Status.FAILED:
            return "failed"
        return self.status

    def __str__(self) -> str:
        return f"{self.name} on {self.release.slug}"
