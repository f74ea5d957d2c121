"""Same-rater repeats: one rater labelling the same unit more than once (methodology section 9,
"Repeated labels"). Pure NumPy; no Django.

Agreement statistics assume one value per (unit, rater) cell. Raw label files break that: the
TVR-Ranking raw file has 16,178 cells labelled twice by the same worker. Keeping both labels
counts a rater as agreeing (or disagreeing) with themself, which moves alpha; keeping one needs a
rule. The rule is the caller's choice and the number of repeats is always reported, so a repeat
is never merged silently:

- ``last`` (the usual rule): the cell's last label, by ``order`` (a time, when the file has one)
  and, on equal order, by input position;
- ``first``: the cell's first label, by the same ordering;
- ``all``: every label is kept (a rater's repeat counts as another label on the unit).

Input is the convention of ``agreement.py``: parallel 1-D arrays, one entry per label, with
integer ``unit`` and ``rater`` ids and integer ``value`` codes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

REPEAT_RULES = ("last", "first", "all")


@dataclass
class RepeatResolution:
    """What a repeat rule kept.

    - ``keep``: boolean mask over the input labels (True = the label is used);
    - ``repeated_cells``: (unit, rater) cells holding more than one label;
    - ``repeated_cells_identical``: those of them whose labels all carry the same value (there the
      rule cannot change any statistic, except under ``all``, which pairs the rater with themself);
    - ``labels_set_aside``: labels the rule dropped (0 under ``all``);
    - ``repeated_cells_per_rater``: repeated cells per rater id, indexed by rater id.
    """

    rule: str
    keep: NDArray[np.bool_]
    repeated_cells: int
    repeated_cells_identical: int
    labels_set_aside: int
    repeated_cells_per_rater: NDArray[np.int64]


def resolve_repeats(unit: ArrayLike, rater: ArrayLike, value: ArrayLike, *, rule: str = "last",
                    order: ArrayLike | None = None) -> RepeatResolution:
    """Applies ``rule`` to the labels; ``unit`` and ``rater`` are non-negative integer ids.

    ``order`` ranks the labels of a cell (e.g. a timestamp); without it the input position does.
    Equal ``order`` values fall back to the input position, so the result never depends on how
    the sort breaks ties.
    """
    if rule not in REPEAT_RULES:
        raise ValueError(f"rule must be one of {REPEAT_RULES}, got {rule!r}")
    u = np.asarray(unit, dtype=np.int64)
    r = np.asarray(rater, dtype=np.int64)
    v = np.asarray(value)
    n = u.size
    if r.shape != u.shape or v.shape != u.shape or u.ndim != 1:
        raise ValueError("unit, rater and value must be 1-D arrays of the same length")
    if n and (u.min() < 0 or r.min() < 0):
        raise ValueError("unit and rater ids must be non-negative")
    position = np.arange(n)
    key = position if order is None else np.asarray(order, dtype=float)
    if key.shape != u.shape:
        raise ValueError("order must have the same length as unit")
    n_raters = int(r.max()) + 1 if n else 0
    if n == 0:
        return RepeatResolution(rule, np.zeros(0, bool), 0, 0, 0, np.zeros(0, np.int64))

    idx = np.lexsort((position, key, r, u))  # by cell, then order, then input position
    su, sr, sv = u[idx], r[idx], v[idx]
    new_cell = np.r_[True, (su[1:] != su[:-1]) | (sr[1:] != sr[:-1])]
    starts = np.flatnonzero(new_cell)
    ends = np.r_[starts[1:], n]
    size = ends - starts
    repeated = size > 1
    # A cell's labels are identical when its smallest and largest value coincide.
    identical = np.minimum.reduceat(sv, starts) == np.maximum.reduceat(sv, starts)

    keep = np.zeros(n, dtype=bool)
    if rule == "all":
        keep[:] = True
    elif rule == "first":
        keep[idx[starts]] = True
    else:
        keep[idx[ends - 1]] = True
    return RepeatResolution(
        rule=rule,
        keep=keep,
        repeated_cells=int(repeated.sum()),
        repeated_cells_identical=int((repeated & identical).sum()),
        labels_set_aside=int(n - keep.sum()),
        repeated_cells_per_rater=np.bincount(sr[starts][repeated], minlength=n_raters).astype(np.int64),
    )
