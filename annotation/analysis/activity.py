"""A rater's active time from the times of their labels, and the labelling rate it gives.

Dividing labels by a fixed window (48 h) says 1.4/h of a rater who gave 60 labels in one minute.
Active time instead sums the gaps between consecutive labels that are shorter than an idle cutoff
(default 5 minutes): a longer gap is a break and counts nothing, and the label after it starts a
new session. The first label of each session has no gap before it, so it contributes the seconds
the rater's client measured on that pair (capped at the cutoff, 0 when unknown). The rate is then
labels / active time, in labels per hour; with no active time (one label, no measured seconds)
there is no rate.

Plain functions over arrays; the selectors feed them label times as epoch seconds.
"""
from __future__ import annotations

import numpy as np

IDLE_CUTOFF_SECONDS = 300.0


def active_seconds(times, seconds=None, *, idle_cutoff: float = IDLE_CUTOFF_SECONDS) -> float:
    """Active time of one rater: `times` are label times in epoch seconds (any order), `seconds`
    the client-measured time of each label (None/NaN when unknown)."""
    t = np.asarray(times, dtype=np.float64)
    if t.size == 0:
        return 0.0
    order = np.argsort(t, kind="stable")
    t = t[order]
    spent = np.zeros_like(t) if seconds is None else np.asarray(
        [np.nan if s is None else s for s in np.asarray(seconds, dtype=object)[order]], dtype=np.float64)
    gaps = np.diff(t)
    working = gaps < idle_cutoff
    session_start = np.concatenate(([True], ~working))
    first = np.clip(np.nan_to_num(spent[session_start], nan=0.0), 0.0, idle_cutoff)
    return float(gaps[working].sum() + first.sum())


def labels_per_hour(count: int, active: float) -> float | None:
    return count * 3600.0 / active if active > 0 else None
