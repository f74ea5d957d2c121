"""Estimates from a sample when imported judgments resolved part of the pool: those pairs are a
census (inclusion probability 1), counted exactly and never taken as part of the random sample.

On the example of test_report_metrics.py (pool of runs A and B at depth 3, 17 pairs, originals
q1 v1, q2 v2, q3 v3), a published qrels file judged run A's other top-3 pairs except q2 v4:
    q1 v2 rel, q1 v3 not, q2 v6 not, q3 v4 rel, q3 v6 not, q4 v5 not, q4 v6 not, q4 v1 not
So 8 pairs are a census (2 relevant) and 6 are left to estimate: q1 v5, q1 v6, q2 v4, q2 v1,
q2 v3, q3 v5. Raters then resolve q1 v5 rel, q2 v1 rel, q3 v5 not, q2 v4 not; q1 v6 and q2 v3
stay open.
"""
from __future__ import annotations

import numpy as np
import pytest

from annotation.analysis.sample_estimates import estimate_run_precision, wilson_fpc_interval
from annotation.services.judgment_sets.imports import judgments_import
from annotation.services.pools.build import pool_create
from annotation.services.accounts.raters import memberships_grant
from annotation.services.reports.create import report_create
from tests.annotation.services.reports.test_report_metrics import load_example, pair_of
from tests.factories import label_pair, make_user

pytestmark = pytest.mark.django_db

PUBLISHED = ("q1 0 v2 1\nq1 0 v3 0\nq2 0 v6 0\nq3 0 v4 1\nq3 0 v6 0\nq4 0 v5 0\nq4 0 v6 0\nq4 0 v1 0\n")
RATERS = {("q1", "v5"): "relevant", ("q2", "v1"): "relevant", ("q3", "v5"): "not_relevant",
          ("q2", "v4"): "not_relevant"}


@pytest.fixture
def pool(tmp_path):
    dataset, runs = load_example(tmp_path / "files")
    (tmp_path / "published.qrels").write_text(PUBLISHED)
    judgments_import(dataset=dataset, path=tmp_path / "published.qrels")
    pool = pool_create(dataset=dataset, name="p", runs=runs, depth=3, redundancy=0.0)
    rater = make_user("rater")
    memberships_grant(pool=pool, users=[rater])
    for (caption, clip), value in RATERS.items():
        label_pair(rater, pair_of(pool, caption, clip), value=value)
    return pool


def test_imported_pairs_are_counted_not_sampled(pool):
    r = report_create(pool=pool, kind="sample_estimate", params={"half_width": 0.25}).result
    assert r["population"] == {"pairs": 17, "original_pairs": 3, "judged_by_imports": 8, "relevant_by_imports": 2,
                               "pairs_to_estimate": 6}
    # The sample is the rater-resolved pairs only: 4, of which 2 relevant.
    assert r["sample"] == {"drawn": 4, "resolved": 4, "left_out_unresolved": 0, "non_original": 4, "relevant": 2}
    assert "8 pairs resolved from imported judgments counted exactly (probability 1)" in r["design"]
    a, b = r["per_run"]["A"], r["per_run"]["B"]
    # Run A: 12 pairs = 3 original + 8 census (2 relevant) + q2 v4, resolved not relevant: exact,
    # precision (3 + 2 + 0) / 12 with no interval left; false negatives = the 2 census ones.
    assert (a["n_pairs"], a["n_original"], a["n_census"], a["census_relevant"], a["n_sampled"]) == (12, 3, 8, 2, 1)
    assert a["precision"] == a["precision_low"] == a["precision_high"] == pytest.approx(5 / 12)
    assert a["false_negatives"] == pytest.approx(2)
    # Run B: 9 pairs = 3 original + q3 v4 (census, relevant) + 5 to estimate (q1 v5, q1 v6, q2 v1,
    # q2 v3, q3 v5), 3 of them resolved, 2 relevant: p = 2/3. Precision (3 + 1 + 5 x 2/3) / 9 = 22/27,
    # false negatives 1 + 10/3. (Taking the census pair as part of the sample would give
    # p = 3/4 over 6 pairs and precision (3 + 6 x 3/4) / 9 = 5/6.)
    assert (b["n_pairs"], b["n_original"], b["n_census"], b["census_relevant"], b["n_sampled"]) == (9, 3, 1, 1, 3)
    assert b["precision"] == pytest.approx(22 / 27)
    low, high = wilson_fpc_interval(2, 3, 5)
    assert (b["precision_low"], b["precision_high"]) == pytest.approx(((4 + 5 * low) / 9, (4 + 5 * high) / 9))
    assert b["false_negatives"] == pytest.approx(1 + 10 / 3)
    # Whole pool: 6 pairs to estimate, 4 sampled, 2 relevant -> 6 x 1/2 = 3, plus the census's 2.
    fn = r["false_negatives"]
    assert (fn["population_size"], fn["sample_size"], fn["successes"], fn["census_relevant"]) == (6, 4, 2, 2)
    assert fn["total"] == pytest.approx(5)
    assert r["savings"]["population_size"] == 6


def test_a_seeded_sample_is_drawn_among_pairs_imports_did_not_judge(pool):
    r = report_create(pool=pool, kind="sample_estimate", params={"sample_size": 12, "seed": 1}).result
    # 17 - 8 = 9 pairs to draw from (the 6 to estimate and the 3 originals): all 9 are drawn,
    # 4 resolved by raters; the originals and q1 v6, q2 v3 are still open.
    assert r["sample"]["drawn"] == 9 and r["sample"]["resolved"] == 4
    assert "9 not judged by imported judgments (12 asked)" in r["design"]


def test_a_sample_with_census_pairs_in_it_is_refused():
    with pytest.raises(ValueError, match="census"):
        estimate_run_precision(in_run_topk=np.ones((3, 1), bool), is_original=[False] * 3, sample_idx=[0, 1],
                               sample_relevant=[True, False], census=[True, False, False])
