"""Kappa, confusion matrix, Kendall's tau and tau_AP (analysis/machine_agreement.py) on
hand-worked cases."""
from __future__ import annotations

import math

import numpy as np
import pytest

from annotation.analysis.machine_agreement import (cohen_kappa, confusion_matrix, kendall_tau, system_rank_correlation,
                                                   tau_ap)


def _pairs(n00: int, n01: int, n10: int, n11: int):
    human = [0] * (n00 + n01) + [1] * (n10 + n11)
    machine = [0] * n00 + [1] * n01 + [0] * n10 + [1] * n11
    return human, machine


def test_kappa_by_hand():
    # Rows human, columns machine: [[20, 5], [10, 15]], n = 50.
    # p_o = (20 + 15) / 50 = 0.7; marginals human (25, 25), machine (30, 20);
    # p_e = (25*30 + 25*20) / 50^2 = 0.5; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    human, machine = _pairs(20, 5, 10, 15)
    r = cohen_kappa(human, machine, n_boot=2000, seed=3)
    assert r.confusion == [[20, 5], [10, 15]]
    assert r.observed_agreement == pytest.approx(0.7)
    assert r.expected_agreement == pytest.approx(0.5)
    assert r.kappa == pytest.approx(0.4)
    low, high = r.interval
    assert low < 0.4 < high and high - low < 0.6
    assert cohen_kappa(human, machine, n_boot=2000, seed=3).interval == r.interval  # seeded


def test_kappa_edges():
    # Perfect agreement is 1; agreement exactly at chance is 0:
    # [[10, 10], [10, 10]]: p_o = 0.5, p_e = 0.5 -> 0.
    assert cohen_kappa([0, 1, 1, 0], [0, 1, 1, 0], n_boot=0).kappa == 1.0
    assert cohen_kappa(*_pairs(10, 10, 10, 10), n_boot=0).kappa == pytest.approx(0.0)
    # Both judges constant and equal: p_e = 1, kappa undefined.
    assert math.isnan(cohen_kappa([1, 1], [1, 1], n_boot=0).kappa)
    with pytest.raises(ValueError):
        confusion_matrix([0, 2], [0, 1])


def test_tau_ap_by_hand():
    # True (human) order A > B > C > D.
    true = [4.0, 3.0, 2.0, 1.0]  # A, B, C, D
    # Estimated order B > A > C > D (top two swapped):
    #   rank 2 (A): above it B, which truth puts below A -> C = 0 -> 0/1
    #   rank 3 (C): above it B, A, both above C in truth   -> 2/2
    #   rank 4 (D): 3/3
    #   tau_AP = 2/3 * (0 + 1 + 1) - 1 = 1/3; Kendall: 1 discordant of 6 -> (5 - 1)/6 = 2/3
    top_swap = [3.0, 4.0, 2.0, 1.0]
    assert tau_ap(true, top_swap) == pytest.approx(1 / 3)
    assert kendall_tau(true, top_swap) == pytest.approx(2 / 3)
    # Estimated A > B > D > C (bottom two swapped):
    #   rank 2 (B): 1/1; rank 3 (D): 2/2; rank 4 (C): A, B right, D wrong -> 2/3
    #   tau_AP = 2/3 * (1 + 1 + 2/3) - 1 = 7/9; Kendall still 2/3
    bottom_swap = [4.0, 3.0, 1.0, 2.0]
    assert tau_ap(true, bottom_swap) == pytest.approx(7 / 9)
    assert kendall_tau(true, bottom_swap) == pytest.approx(2 / 3)
    assert tau_ap(true, true) == pytest.approx(1.0)
    assert tau_ap(true, true[::-1]) == pytest.approx(-1.0)
    assert math.isnan(tau_ap([1.0], [1.0]))


def test_system_rank_correlation_and_query_bootstrap():
    # 3 systems x 4 queries. Human means: s0 0.75, s1 0.5, s2 0.25. Machine means: s0 0.5, s1 0.75,
    # s2 0.25 (top two swapped): tau = 1/3 (1 discordant of 3), tau_AP = 2/2 * (0/1 + 2/2) - 1 = 0.
    human = np.array([[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0]], float)
    machine = np.array([[1, 1, 0, 0], [1, 1, 1, 0], [1, 0, 0, 0]], float)
    r = system_rank_correlation(["s0", "s1", "s2"], human, machine, measure="AP", n_boot=300, seed=1)
    assert r.human_scores == [0.75, 0.5, 0.25] and r.machine_scores == [0.5, 0.75, 0.25]
    assert r.tau == pytest.approx(1 / 3) and r.tau_ap == pytest.approx(0.0)
    assert r.n_queries == 4
    assert r.tau_interval[0] <= r.tau <= r.tau_interval[1]
    assert r.tau_ap_interval[0] <= r.tau_ap <= r.tau_ap_interval[1]
    same = system_rank_correlation(["s0", "s1", "s2"], human, human, measure="AP", n_boot=50)
    assert same.tau == pytest.approx(1.0) and same.tau_ap == pytest.approx(1.0)


def test_reliability_curve_and_expected_calibration_error_by_hand():
    from annotation.analysis.machine_agreement import reliability

    # Two bins. [0, 0.5): 0.1, 0.15 with labels 0, 1 -> mean 0.125, observed 0.5, |gap| 0.375;
    # [0.5, 1]: 0.8, 0.9, 1.0 with 1, 1, 0 -> mean 0.9, observed 2/3, |gap| 0.2333...
    # ECE = 2/5 * 0.375 + 3/5 * 0.23333 = 0.15 + 0.14 = 0.29.
    r = reliability([0.1, 0.15, 0.8, 0.9, 1.0], [0, 1, 1, 1, 0], n_bins=2, groups=["a", "a", "a", "b", "b"])
    assert r["ece"] == pytest.approx(0.29)
    assert [(b["count"], b["mean_probability"], b["observed_relevant"]) for b in r["bins"]] == [
        (2, pytest.approx(0.125), 0.5), (3, pytest.approx(0.9), pytest.approx(2 / 3))]
    # per group: a = {0.1: 0, 0.15: 1, 0.8: 1} -> bins (0.125 vs 0.5), (0.8 vs 1): (2*0.375 + 0.2)/3
    #            b = {0.9: 1, 1.0: 0} -> one bin, mean 0.95 vs 0.5: 0.45
    assert r["by_group"]["a"]["ece"] == pytest.approx((2 * 0.375 + 0.2) / 3)
    assert r["by_group"]["b"]["ece"] == pytest.approx(0.45) and r["by_group"]["b"]["bins"][0]["count"] == 0
    # a calibrated judge: ECE 0; empty bins have no mean
    assert reliability([0.25, 0.25, 0.25, 0.25], [1, 0, 0, 0], n_bins=4)["ece"] == pytest.approx(0.0)
    assert reliability([0.25], [1], n_bins=4)["bins"][0]["mean_probability"] is None
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        reliability([1.2], [1])
    with pytest.raises(ValueError, match="0 or 1"):
        reliability([0.2], [2])
