"""Per-rater quality figures for crowd campaigns: gold accuracy with a Wilson interval, agreement
with the consensus, time per label, too-fast answers and drift over the session.

Plain NumPy/SciPy, no Django. Inputs are one rater's answers in the order they were given:
``hits`` are booleans (the answer equals the gold answer, or the pair's resolved label) and
``seconds`` the time the client measured per label (NaN or None where unknown).

The interval is Wilson's score interval (without continuity correction), computed by SciPy's
``binomtest(...).proportion_ci(method="wilson")``: unlike the normal (Wald) interval it stays
inside [0, 1] and keeps close to its nominal coverage for the small n of a rater's gold answers;
Clopper–Pearson would be wider (conservative) for the same n.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from scipy.stats import binomtest

CONFIDENCE = 0.95


def wilson_interval(successes: int, trials: int, *, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval for a proportion; (nan, nan) with no trials."""
    if trials < 0 or successes < 0 or successes > trials:
        raise ValueError("need 0 <= successes <= trials")
    if trials == 0:
        return math.nan, math.nan
    ci = binomtest(int(successes), int(trials)).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def proportion(hits: Sequence[bool]) -> dict[str, Any]:
    """Share of true values with its 95% Wilson interval: {n, k, rate, low, high} (NaN when n = 0)."""
    h = np.asarray(hits, dtype=bool)
    n, k = int(h.size), int(h.sum())
    low, high = wilson_interval(k, n)
    return {"n": n, "k": k, "rate": k / n if n else math.nan, "low": low, "high": high}


def time_per_label(seconds: Sequence[float | None], *, too_fast_seconds: float) -> dict[str, Any]:
    """Median and mean seconds over the labels with a time, and how many were quicker than
    `too_fast_seconds` (strictly below: an answer at exactly the threshold is not too fast)."""
    s = np.array([math.nan if x is None else float(x) for x in seconds], dtype=float)
    timed = s[np.isfinite(s)]
    n = int(timed.size)
    too_fast = int((timed < too_fast_seconds).sum())
    return {
        "n_timed": n,
        "median_seconds": float(np.median(timed)) if n else math.nan,
        "mean_seconds": float(timed.mean()) if n else math.nan,
        "too_fast": too_fast,
        "too_fast_share": too_fast / n if n else math.nan,
    }


def drift(hits: Sequence[bool]) -> dict[str, Any]:
    """The rate in the first half of the session against the last half (by answer order; with an
    odd count the middle answer belongs to neither, so both halves have the same size).
    `change` is last minus first: negative when the rater got worse. NaN with fewer than 2."""
    h = np.asarray(hits, dtype=bool)
    half = h.size // 2
    if half == 0:
        return {"first": math.nan, "last": math.nan, "change": math.nan, "half_size": 0}
    first, last = float(h[:half].mean()), float(h[-half:].mean())
    return {"first": first, "last": last, "change": last - first, "half_size": half}


def rater_quality(*, gold_hits: Sequence[bool], consensus_hits: Sequence[bool], seconds: Sequence[float | None],
                  too_fast_seconds: float) -> dict[str, Any]:
    """All figures for one rater (see the module docstring for the inputs)."""
    return {
        "gold": proportion(gold_hits),
        "consensus": proportion(consensus_hits),
        "time": time_per_label(seconds, too_fast_seconds=too_fast_seconds),
        "gold_drift": drift(gold_hits),
        "consensus_drift": drift(consensus_hits),
    }


def fails_gold_rule(*, gold_answers: int, gold_correct: int, min_gold_answers: int, min_accuracy: float) -> bool:
    """The pool rule: enough gold answers, and the share right below the threshold."""
    return gold_answers >= min_gold_answers and gold_answers > 0 and gold_correct / gold_answers < min_accuracy
