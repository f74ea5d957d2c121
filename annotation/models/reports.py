"""Stored results of analyses (agreement, metrics, proxies, infAP...) and exported files.
(Judgment sets, the judgments imported from published label files: judgment_sets.py.)

A report keeps the parameters and library versions that produced it, so a number in a paper can
be traced to a report id.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models

from .datasets import Dataset
from .jobs import Job


class Report(models.Model):
    kind = models.CharField(max_length=40, help_text="e.g. agreement, metrics, sample_estimate, moment_metrics, infap, proxy_ndcg")
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="reports")
    pool = models.ForeignKey("annotation.Pool", on_delete=models.CASCADE, related_name="reports", null=True, blank=True)
    title = models.CharField(max_length=300, blank=True)
    params = models.JSONField(default=dict, blank=True)
    versions = models.JSONField(default=dict, blank=True, help_text="Library versions that computed it.")
    result = models.JSONField(null=True, blank=True)
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} report #{self.pk}"


class Artefact(models.Model):
    """A file that belongs to a report or an export (CSV, JSON, PNG/SVG, NPZ matrix), under EXPORT_ROOT."""

    report = models.ForeignKey(Report, on_delete=models.CASCADE, related_name="artefacts", null=True, blank=True)
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="artefacts")
    kind = models.CharField(max_length=40, help_text="e.g. qrels, fire_json, labels_csv, labels_jsonl, proxy_matrix, chart")
    name = models.CharField(max_length=300)
    path = models.CharField(max_length=1000, help_text="Relative to EXPORT_ROOT.")
    content_type = models.CharField(max_length=100, default="application/octet-stream")
    size = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    params = models.JSONField(default=dict, blank=True)
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
