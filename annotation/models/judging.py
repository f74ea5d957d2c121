"""Per-query judging state of a pool: its turn in the round robin and whether it stopped."""
from __future__ import annotations

from django.db import models

from .datasets import Caption
from .pools import Pool

__all__ = ["PoolQuery"]


class PoolQuery(models.Model):
    """One caption (query) of a pool. Its row lock serialises the order and stopping decisions of
    the query's pairs: the label transaction takes it before the pair's lock (query, pair, lease)."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="queries")
    caption = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="+")
    slot = models.PositiveIntegerField(help_text="The query's turn in the round robin over queries.")
    judged = models.PositiveIntegerField(default=0)
    relevant = models.PositiveIntegerField(default=0)
    stopped_reason = models.CharField(max_length=20, blank=True,
                                      help_text="remaining_relevant, misses_in_a_row or budget; empty while judging.")
    stopped_at = models.DateTimeField(null=True, blank=True)
    judged_at_resume = models.PositiveIntegerField(default=0, help_text="Stopping rules count judgments after this.")
    resumed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["pool", "caption"], name="poolquery_unique")]
        indexes = [models.Index(fields=["pool", "slot"], name="poolquery_slot")]

    def __str__(self) -> str:
        return f"pool {self.pool_id} query {self.caption_id}"
