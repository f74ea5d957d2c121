"""Estimates from a sample, on the hand-worked example pool (test_report_metrics.py)."""
from __future__ import annotations

import math

import pytest
from scipy import stats

from annotation.services.reports.create import ReportError, report_create
from tests.annotation.services.reports.test_report_metrics import example_pool

pytestmark = pytest.mark.django_db


def test_estimates_from_every_resolved_pair_by_hand(tmp_path):
    pool = example_pool(tmp_path)
    r = report_create(pool=pool, kind="sample_estimate", params={"half_width": 0.25}).result
    # 17 pairs, 3 of them original clips (q1 v1, q2 v2, q3 v3); q2 v4 is an unresolved disagreement.
    assert r["population"] == {"pairs": 17, "original_pairs": 3, "pairs_to_estimate": 14}
    assert r["sample"] == {"drawn": 16, "resolved": 16, "left_out_unresolved": 0, "non_original": 13, "relevant": 6}
    a, b = r["per_run"]["A"], r["per_run"]["B"]
    # Run A: 12 pairs in its top 3, 3 original; of its 9 others, 8 resolved and 2 relevant (q1 v2, q3 v4):
    # precision = (3 + 9 * 2/8) / 12.
    assert (a["n_pairs"], a["n_original"], a["n_sampled"]) == (12, 3, 8)
    assert a["precision"] == pytest.approx((3 + 9 * 0.25) / 12)
    assert a["precision_low"] < a["precision"] < a["precision_high"]
    assert a["false_negatives"] == pytest.approx(9 * 0.25)
    assert a["full_pool_precision"] is None  # q2 v4 never resolved
    # Run B: 9 pairs, 3 original, all 6 others resolved (3 relevant): exact, no interval left.
    assert (b["n_pairs"], b["n_original"], b["n_sampled"]) == (9, 3, 6)
    assert b["precision"] == b["precision_low"] == b["precision_high"] == pytest.approx(6 / 9)
    assert b["full_pool_precision"] == pytest.approx(6 / 9)
    # Labelling saved for +/- 0.25 at 95%: n0 = z^2 / 4 / 0.25^2, n = ceil(n0 * 14 / (n0 + 13)).
    z = stats.norm.ppf(0.975)
    n0 = z * z * 0.25 / 0.25**2
    n_required = math.ceil(n0 * 14 / (n0 + 13))
    assert n_required == 8
    savings = r["savings"]
    assert (savings["n_required"], savings["saved_pairs"]) == (8, 6)
    assert savings["saved_fraction"] == pytest.approx(6 / 14)
    # The 13 non-original pairs sampled out of 14 pin a proportion to about +/- 0.07.
    assert savings["sample_half_width"] == pytest.approx(z * math.sqrt(0.25 / 13 * 1 / 13))
    assert r["false_negatives"]["sample_size"] == 13 and r["false_negatives"]["successes"] == 4


def test_a_seeded_random_sample_leaves_out_what_did_not_resolve(tmp_path):
    pool = example_pool(tmp_path)
    first = report_create(pool=pool, kind="sample_estimate", params={"sample_size": 12, "seed": 4}).result
    again = report_create(pool=pool, kind="sample_estimate", params={"sample_size": 12, "seed": 4}).result
    assert first == again
    sample = first["sample"]
    assert sample["drawn"] == 12 and sample["resolved"] + sample["left_out_unresolved"] == 12
    assert "seed 4" in first["design"]


def test_a_sample_larger_than_the_pool_is_refused(tmp_path):
    pool = example_pool(tmp_path)
    with pytest.raises(ReportError, match="sample_size 18 is larger than the pool \\(17 pairs\\)"):
        report_create(pool=pool, kind="sample_estimate", params={"sample_size": 18})
