"""Judgment sets: named sets of existing judgments about a dataset (a benchmark's own file, or a
pool's resolved labels), and their verdicts on caption–clip pairs (ImportedJudgment)."""
from __future__ import annotations

from django.conf import settings
from django.db import models

from .datasets import Dataset


class JudgmentSet(models.Model):
    """A named set of judgments about a dataset: a benchmark's own file (qrels, TRECVID stratified
    qrels, FIRE JSON, raw multi-rater labels, moment ground truth) or a pool's resolved labels.

    The file is kept as imported (`stored_file`, under JUDGMENTS_ROOT), so scoring a stored set reads
    exactly what scoring the file would (services/judgment_sets). Verdicts on caption–clip pairs are
    also written as ImportedJudgment rows when the set `seeds_pools`: pools then take them instead of
    queueing the pairs they cover.
    """

    class Format(models.TextChoices):
        QRELS = "qrels", "TREC qrels"
        SAMPLE_EVAL = "sample_eval", "TRECVID sample_eval qrels (stratified)"
        FIRE_JSON = "fire_json", "FIRE dataset JSON"
        RATER_LABELS = "rater_labels", "Raw multi-rater labels"
        QVHIGHLIGHTS = "qvhighlights", "QVHighlights moment ground truth"
        DIDEMO = "didemo", "DiDeMo moment ground truth"
        TVR = "tvr", "TVR moment ground truth"
        POOL = "pool", "A pool's resolved labels"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="judgment_sets")
    name = models.CharField(max_length=200)
    source_format = models.CharField(max_length=20, choices=Format.choices)
    source_name = models.CharField(max_length=500, blank=True)
    checksum = models.CharField(max_length=64, help_text="SHA-256 of the imported file.")
    params = models.JSONField(default=dict, blank=True,
                              help_text="How the file was read: column mapping, repeat rule, dataset tag, pool.")
    stored_file = models.CharField(max_length=1000, blank=True, help_text="The file as imported, relative to JUDGMENTS_ROOT.")
    seeds_pools = models.BooleanField(default=True, help_text="Pools take this set's verdicts instead of queueing the pairs.")
    pool = models.ForeignKey("annotation.Pool", on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
                             help_text="For a set taken from a pool's resolved labels.")
    counts = models.JSONField(default=dict, blank=True, help_text="Records read, judgments stored, by label.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "name"], name="judgmentset_unique_name"),
            models.UniqueConstraint(fields=["dataset", "checksum"], name="judgmentset_unique_checksum"),
        ]

    def __str__(self) -> str:
        return self.name


class ImportedJudgment(models.Model):
    """An existing verdict on a caption–clip pair. Pool builds take it as the pair's resolution
    instead of queueing the pair (incremental pooling against published labels).

    `label` is 'disagreement' for a pair that was judged but had no majority (FIRE's
    "disagreements"): it is not queued again, and counts as not relevant like any unresolved pair."""

    class Label(models.TextChoices):
        RELEVANT = "relevant"
        NOT_RELEVANT = "not_relevant"
        DISAGREEMENT = "disagreement"

    judgment_set = models.ForeignKey(JudgmentSet, on_delete=models.CASCADE, related_name="judgments")
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="+")
    caption = models.ForeignKey("annotation.Caption", on_delete=models.CASCADE, related_name="+")
    clip = models.ForeignKey("annotation.Clip", on_delete=models.CASCADE, related_name="+")
    label = models.CharField(max_length=14, choices=Label.choices)
    annotator_labels = models.JSONField(default=list, blank=True, help_text="Every rater's label, as published.")
    annotator_ids = models.JSONField(default=list, blank=True, help_text="Pseudonymous rater ids, as published.")
    models_proposing = models.JSONField(default=list, blank=True, help_text="Runs whose top-k proposed the pair.")
    source_record = models.CharField(max_length=100, blank=True, help_text="Where in the file, e.g. 'line 12' or 'annotations[3]'.")
    relevance = models.SmallIntegerField(null=True, blank=True, help_text="The grade as the file gives it (qrels, sample_eval).")
    stratum = models.CharField(max_length=200, blank=True,
                               help_text="TRECVID sampling stratum as the sample_eval qrels file names it (an opaque key).")

    class Meta:
        constraints = [
            # One verdict per pair and dataset, so a pool build never has to choose between files.
            models.UniqueConstraint(fields=["dataset", "caption", "clip"], name="imported_judgment_unique_pair"),
        ]
