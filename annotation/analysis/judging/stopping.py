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
    raise NotImplementedError


def query_stop_reason(rules: StoppingRules, run_lists, judged_in_order: Sequence[tuple[int, bool]]) -> str | None:
    """None while the query should go on; else "remaining_relevant", "misses_in_a_row" or "budget".

    ``judged_in_order`` = (pair index, relevant?) of the query's resolved pairs, oldest first.
    ``rules.pool_budget`` is ignored here (see :func:`pool_budget_reached`)."""
    raise NotImplementedError


def pool_budget_reached(rules: StoppingRules, judged_in_pool: int) -> bool:
    """True when the pool has spent ``rules.pool_budget`` judgments (never when it is None)."""
    raise NotImplementedError
