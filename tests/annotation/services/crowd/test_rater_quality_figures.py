"""The per-rater figures on hand-worked examples (analysis/rater_quality, no database)."""
from __future__ import annotations

import math

import pytest

from annotation.analysis.rater_quality import drift, fails_gold_rule, proportion, time_per_label, wilson_interval


def test_wilson_interval_hand_worked():
    # 7 right of 10, z = 1.959964 (95%), z^2 = 3.841459:
    #   centre = (p + z^2/2n) / (1 + z^2/n) = (0.7 + 0.192073) / 1.384146 = 0.644493
    #   half   = z * sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n)
    #          = 1.959964 * sqrt(0.021 + 0.0096036) / 1.384146 = 1.959964 * 0.174939 / 1.384146 = 0.247715
    #   -> (0.396778, 0.892208)
    low, high = wilson_interval(7, 10)
    assert low == pytest.approx(0.396778, abs=1e-6)
    assert high == pytest.approx(0.892208, abs=1e-6)


def test_wilson_interval_at_the_edges_stays_inside_zero_one():
    # 0 of 5: centre = half = (z^2/2n) / (1 + z^2/n) = 0.384146 / 1.768292 = 0.217241 -> (0, 0.434482)
    low, high = wilson_interval(0, 5)
    assert low == pytest.approx(0.0, abs=1e-12)
    assert high == pytest.approx(0.434482, abs=1e-6)
    assert all(math.isnan(x) for x in wilson_interval(0, 0))
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_proportion_counts_and_interval():
    figures = proportion([True, True, False, True, True, True, False, True, True, False])
    assert (figures["n"], figures["k"], figures["rate"]) == (10, 7, 0.7)
    assert figures["low"] == pytest.approx(0.396778, abs=1e-6)


def test_time_per_label_median_mean_and_too_fast():
    # Timed: 0.5, 1.0, 2.0, 4.0, 12.5 (None is unknown). Median 2.0; mean 20/5 = 4.0.
    # Below 2.0: 0.5 and 1.0 (2.0 itself is not too fast) -> 2 of 5.
    figures = time_per_label([0.5, None, 4.0, 1.0, 12.5, 2.0], too_fast_seconds=2.0)
    assert figures == {"n_timed": 5, "median_seconds": 2.0, "mean_seconds": 4.0, "too_fast": 2, "too_fast_share": 0.4}


def test_drift_first_half_against_last_half():
    # 7 answers: halves of 3, the middle one belongs to neither. First T T T = 1.0, last F T F = 1/3.
    figures = drift([True, True, True, True, False, True, False])
    assert figures["half_size"] == 3
    assert figures["first"] == 1.0
    assert figures["last"] == pytest.approx(1 / 3)
    assert figures["change"] == pytest.approx(-2 / 3)
    assert math.isnan(drift([True])["change"])


def test_gold_rule_needs_enough_answers_and_a_share_below_the_threshold():
    assert not fails_gold_rule(gold_answers=5, gold_correct=0, min_gold_answers=6, min_accuracy=0.7)
    assert fails_gold_rule(gold_answers=6, gold_correct=4, min_gold_answers=6, min_accuracy=0.7)  # 0.667
    assert not fails_gold_rule(gold_answers=10, gold_correct=7, min_gold_answers=6, min_accuracy=0.7)  # 0.7 exactly
