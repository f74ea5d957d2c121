"""Stopping rules: each fires on a hand-worked case and stays quiet on a near miss (issue 15)."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.analysis.judging.stopping import (
    StoppingRules,
    estimated_remaining_relevant,
    pool_budget_reached,
    query_stop_reason,
)

# A = [0, 1, 2], B = [2, 3]
RUNS = [np.array([0, 1, 2]), np.array([2, 3])]


def test_estimated_remaining_relevant_hand_worked():
    # judged 0 relevant, 1 not, 3 not.
    # A: (1 + 1) / (2 + 2) = 0.5; B: judged {3} none relevant: (0 + 1) / (1 + 2) = 1/3.
    # Unjudged: pair 2, in A and B -> the larger, 0.5.
    assert estimated_remaining_relevant(RUNS, {0: True, 1: False, 3: False}) == pytest.approx(0.5)
    # nothing judged: every run 1/2, 4 pairs -> 2.0
    assert estimated_remaining_relevant(RUNS, {}) == pytest.approx(2.0)
    assert estimated_remaining_relevant(RUNS, {0: True, 1: True, 2: False, 3: False}) == 0.0


def test_remaining_relevant_rule():
    history = [(0, True), (1, False), (3, False)]  # 0.5 expected left (above)
    assert query_stop_reason(StoppingRules(remaining_relevant_below=0.6), RUNS, history) == "remaining_relevant"
    assert query_stop_reason(StoppingRules(remaining_relevant_below=0.4), RUNS, history) is None


def test_misses_in_a_row_rule():
    rules = StoppingRules(misses_in_a_row=2)
    assert query_stop_reason(rules, RUNS, [(0, True), (1, False), (3, False)]) == "misses_in_a_row"
    assert query_stop_reason(rules, RUNS, [(1, False), (0, True), (3, False)]) is None
    assert query_stop_reason(rules, RUNS, [(1, False)]) is None


def test_budget_rule_and_precedence():
    rules = StoppingRules(query_budget=3, misses_in_a_row=2)
    assert query_stop_reason(rules, RUNS, [(0, True), (1, False)]) is None
    # 3 judged and the last two missed: budget is reported first
    assert query_stop_reason(rules, RUNS, [(0, True), (1, False), (3, False)]) == "budget"
    assert query_stop_reason(StoppingRules(), RUNS, [(0, False), (1, False), (3, False)]) is None


def test_pool_budget_helper():
    assert not pool_budget_reached(StoppingRules(), 10**9)
    assert not pool_budget_reached(StoppingRules(pool_budget=100), 99)
    assert pool_budget_reached(StoppingRules(pool_budget=100), 100)


def test_bad_rules_are_refused():
    with pytest.raises(ValueError, match="misses_in_a_row"):
        query_stop_reason(StoppingRules(misses_in_a_row=0), RUNS, [])
    with pytest.raises(ValueError, match="remaining_relevant_below"):
        query_stop_reason(StoppingRules(remaining_relevant_below=-1), RUNS, [])
