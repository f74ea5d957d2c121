"""Stopping rules for judging one query, and the pool budget (issue 15).

Rules (any that is set can fire; the first in this order wins):

- ``budget``: the query has ``query_budget`` judgments.
- ``remaining_relevant``: :func:`estimated_remaining_relevant` is below
  ``remaining_relevant_below``.
- ``misses_in_a_row``: the last ``misses_in_a_row`` judgments of the query were all non-relevant.

The pool budget is the caller's to apply across queries (:func:`pool_budget_reached`): when it is
reached every query stops with reason ``"pool_budget"``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "StoppingRules",
    "STOP_REASONS",
    "estimated_remaining_relevant",
    "query_stop_reason",
    "pool_budget_reached",
]

STOP_REASONS = ("budget", "remaining_relevant", "misses_in_a_row", "pool_budget")


@dataclass(frozen=True)
class StoppingRules:
    remaining_relevant_below: float | None = None
    misses_in_a_row: int | None = None
    query_budget: int | None = None
    pool_budget: int | None = None


def estimated_remaining_relevant(run_lists: Sequence[np.ndarray], judged: Mapping[int, bool]) -> float:
    """Expected number of relevant pairs among the query's unjudged pool pairs.

    Each run's precision at the ranks not yet judged is taken to be that of its judged ranks,
    smoothed (Beta(1, 1) prior, i.e. (relevant + 1) / (judged + 2)); an unjudged pair's
    probability of relevance is the largest such precision over the runs containing it
    (optimistic: a rule that stops on this estimate does not stop while any contributing run is
    still productive). The sum over unjudged pairs is returned; 0 when all are judged.
    """
    lists = [np.asarray(r, dtype=np.int64).reshape(-1) for r in run_lists]
    pairs = {int(p) for lst in lists for p in lst.tolist()}
    best: dict[int, float] = {}
    for lst in lists:
        seen = [int(p) for p in lst.tolist() if int(p) in judged]
        relevant = sum(1 for p in seen if judged[p])
        precision = (relevant + 1.0) / (len(seen) + 2.0)
        for p in lst.tolist():
            if int(p) not in judged and precision > best.get(int(p), -1.0):
                best[int(p)] = precision
    return float(sum(best[p] for p in pairs if p not in judged))


def query_stop_reason(rules: StoppingRules, run_lists, judged_in_order: Sequence[tuple[int, bool]]) -> str | None:
    """None while the query should go on; else "remaining_relevant", "misses_in_a_row" or "budget".

    ``judged_in_order`` = (pair index, relevant?) of the query's resolved pairs, oldest first.
    ``rules.pool_budget`` is ignored here (see :func:`pool_budget_reached`)."""
    _check(rules)
    n = len(judged_in_order)
    if rules.query_budget is not None and n >= rules.query_budget:
        return "budget"
    if rules.remaining_relevant_below is not None:
        judged = {int(p): bool(r) for p, r in judged_in_order}
        if estimated_remaining_relevant(run_lists, judged) < rules.remaining_relevant_below:
            return "remaining_relevant"
    k = rules.misses_in_a_row
    if k is not None and n >= k and not any(r for _, r in judged_in_order[n - k:]):
        return "misses_in_a_row"
    return None


def _check(rules: StoppingRules) -> None:
    for name in ("misses_in_a_row", "query_budget", "pool_budget"):
        value = getattr(rules, name)
        if value is not None and value < 1:
            raise ValueError(f"{name} must be >= 1 or None, not {value}")
    if rules.remaining_relevant_below is not None and rules.remaining_relevant_below <= 0:
        raise ValueError("remaining_relevant_below must be > 0 or None")


def pool_budget_reached(rules: StoppingRules, judged_in_pool: int) -> bool:
    """True when the pool has spent ``rules.pool_budget`` judgments (never when it is None)."""
    _check(rules)
    return rules.pool_budget is not None and judged_in_pool >= rules.pool_budget
