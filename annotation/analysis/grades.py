"""One relevance grade per judged unit from several raters' values (pure NumPy, no Django).

Used to turn a multi-rater label file into graded qrels. trec_eval reads whole grades (an integer
between -127 and 127, get_qrels.c), so every rule ends on a whole number:

- ``mean``: the mean of the unit's values, rounded half up (3 and 4 give 3.5, grade 4). This is
  TVR-Ranking's rule: its validation and test relevance is the average of its workers' labels
  (the dataset's readme), used as it is by its own nDCG (modules/ndcg_iou.py), which has no
  whole-number constraint;
- ``median``: the median (the mean of the two middle values for an even count), rounded half up;
- ``majority``: the most frequent value; on a tie the lowest of the tied values, erring towards
  not relevant as the rater guidelines do (methodology section 4); rounded half up if the values
  themselves are not whole.

Input is the convention of ``agreement.py``: parallel 1-D arrays, one entry per label, with
non-negative integer ``unit`` ids (every id from 0 to ``n_units - 1`` labelled at least once).
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

AGGREGATES = ("mean", "median", "majority")


def round_half_up(x: ArrayLike) -> NDArray[np.int64]:
    # Python's round() and NumPy's rint round half to even (2.5 -> 2, 3.5 -> 4): a grade rule
    # should not depend on the parity of the grade.
    return np.floor(np.asarray(x, dtype=float) + 0.5).astype(np.int64)


def aggregate_grades(unit: ArrayLike, value: ArrayLike, *, rule: str = "mean",
                     n_units: int | None = None) -> NDArray[np.int64]:
    """The grade of every unit 0 .. n_units - 1 under ``rule``; a unit without labels is an error."""
    if rule not in AGGREGATES:
        raise ValueError(f"rule must be one of {AGGREGATES}, got {rule!r}")
    u = np.asarray(unit, dtype=np.int64)
    v = np.asarray(value, dtype=float)
    if u.shape != v.shape or u.ndim != 1:
        raise ValueError("unit and value must be 1-D arrays of the same length")
    n = int(u.max()) + 1 if u.size else 0
    n_units = n if n_units is None else n_units
    if u.size and (u.min() < 0 or n > n_units):
        raise ValueError("unit ids must be in 0 .. n_units - 1")
    counts = np.bincount(u, minlength=n_units)
    if np.any(counts == 0):
        raise ValueError(f"unit {int(np.argmin(counts))} has no label")
    if n_units == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((v, u))  # by unit, then value
    su, sv = u[order], v[order]
    starts = np.flatnonzero(np.r_[True, su[1:] != su[:-1]])
    if rule == "mean":
        return round_half_up(np.add.reduceat(sv, starts) / counts)
    if rule == "median":
        return round_half_up((sv[starts + (counts - 1) // 2] + sv[starts + counts // 2]) / 2)
    # majority: runs of equal (unit, value); per unit the longest run, the lowest value on a tie
    run_starts = np.flatnonzero(np.r_[True, (su[1:] != su[:-1]) | (sv[1:] != sv[:-1])])
    run_len = np.diff(np.r_[run_starts, su.size])
    run_unit, run_value = su[run_starts], sv[run_starts]
    best = np.lexsort((run_value, -run_len, run_unit))
    first_of_unit = best[np.r_[True, run_unit[best][1:] != run_unit[best][:-1]]]
    return round_half_up(run_value[first_of_unit])
