"""Judged@K beside a measure cut at K, and the one rule that flags a measure as not comparable
with the leaderboard (issue 38).

A measure cut at K (C@K, P@K, nDCG@K, ...) counts a clip with no verdict as not relevant. When a
run's top K is mostly unjudged (a model nobody pooled), its value says more about the holes than
about the model, so it cannot be set beside the leaderboard's runs, which were pooled. Judged@K
(ir_measures' Judged@k: the share of the run's first K documents with a verdict, divided by the
list's length when it is shorter than K, averaged over the scored queries) measures the holes;
below ``JUDGED_THRESHOLD`` the measure is flagged, naming the threshold.

Plain Python and light to import: `manage.py evaluate` reads it before Django is set up, and the
researcher's client (clients/python, which cannot import the platform) keeps the same default,
checked equal by a test.
"""
from __future__ import annotations

from .params import Param

#: The share of a run's top K with a verdict below which a measure cut at K is flagged.
JUDGED_THRESHOLD = Param(float, 0.9, "a measure cut at K is flagged as not comparable with the leaderboard when "
                                     "the run's Judged@K (share of its top K with a verdict) is below this", 0, 1)

#: Averages of shares are sums of fractions: 0.9 may come out as 0.8999999999999999. A Judged@K
#: within this of the threshold counts as at the threshold (comparable).
_TOLERANCE = 1e-9


def judged_name(cutoff: int) -> str:
    """ir_measures' name of the Judged@K that goes with a measure cut at ``cutoff``."""
    return f"Judged@{int(cutoff)}"


def below_threshold(judged: float | None, threshold: float) -> bool:
    """True when ``judged`` is below ``threshold`` (at the threshold is comparable); None (no
    Judged@K: a measure without a cutoff, a run with no scored query) is never flagged."""
    return judged is not None and judged < threshold - _TOLERANCE


def not_comparable_note(name: str, judged: float | None, threshold: float) -> str | None:
    """The flag every output prints for a measure whose Judged@K (called ``name``) is below the
    threshold, naming both; None when the measure is comparable."""
    if not below_threshold(judged, threshold):
        return None
    return f"not comparable with the leaderboard ({name} < {threshold:g})"
