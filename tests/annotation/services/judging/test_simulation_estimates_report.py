"""The judging_estimates report: a pool's labels and stored inclusion probabilities into
estimate_metrics, stored and laid out as the report machinery does for every pool report."""
from __future__ import annotations

import math

import pytest

from annotation.models import PooledPair
from annotation.services.reports.registry import report_tables
from annotation.services.reports.create import ReportError, report_create
from tests.annotation.services.judging.simulation_world import TRUTH, tiny_world

pytestmark = pytest.mark.django_db


def _estimates(report) -> dict[tuple[str, str], dict]:
    return {(e["run"], e["measure"]): e for e in report.result["estimates"]}


def test_every_pair_judged_gives_the_exact_values_with_zero_width_intervals():
    _, pool, _ = tiny_world()
    report = report_create(pool=pool, kind="judging_estimates")
    got = _estimates(report)
    # By hand (simulation_world: X q1 [a, b], q2 [c, d]; Y q1 [a], q2 [c]; a and d relevant):
    #   C@1   X: q1 1 (a), q2 0 (c)           -> 0.5      Y: 1, 0 -> 0.5
    #   C@10  X: q1 1, q2 1 (d at 2)          -> 1.0      Y: 1, 0 -> 0.5
    #   AP    X: q1 1/1, q2 (1/2)/1           -> 0.75     Y: 1, 0 -> 0.5
    #   nDCG@10 X: q1 1, q2 (1/log2 3)/1 = 0.6309 -> 0.8155   Y: 1, 0 -> 0.5
    expected = {("X", "C@1"): 0.5, ("Y", "C@1"): 0.5, ("X", "C@5"): 1.0, ("Y", "C@5"): 0.5,
                ("X", "C@10"): 1.0, ("Y", "C@10"): 0.5, ("X", "AP"): 0.75, ("Y", "AP"): 0.5,
                ("X", "nDCG@10"): (1 + 1 / math.log2(3)) / 2, ("Y", "nDCG@10"): 0.5}
    for key, value in expected.items():
        assert got[key]["estimate"] == pytest.approx(value), key
        assert got[key]["se"] == pytest.approx(0) and got[key]["ci_low"] == pytest.approx(value)
        assert got[key]["ci_high"] == pytest.approx(value)
    # Every pooled pair has a verdict: a census, X above Y for sure where they differ.
    c10 = [r for r in report.result["ranking"] if r["measure"] == "C@10"]
    assert c10 == [{"measure": "C@10", "better": "X", "worse": "Y", "p_ordered_right": 1.0}]
    assert report.result["estimator"].startswith("Horvitz-Thompson") and report.result["design"]
    assert report.result["design"].startswith("census: every one of the 4 pooled pairs has a verdict")
    assert report.result["counts"]["resolved"] == 4 and report.result["counts"]["unresolved"] == 0
    assert report.result["counts"]["labels_used"] == 4
    assert report.params == {"target_width": None, "confidence": 0.95, "depth": 2}
    assert report.versions["numpy"] and report.title.startswith("Estimates with intervals")


def test_a_pair_not_judged_yet_in_a_sampled_design_is_left_to_the_estimator_and_counted():
    _, pool, _ = tiny_world(judged={k: v for k, v in TRUTH.items() if k != ("q2", "d")})
    pool.judging_strategy = "sampled"
    pool.save(update_fields=["judging_strategy"])
    report = report_create(pool=pool, kind="judging_estimates")
    # d is not judged: it contributes nothing, so X's C@10 is q1 1, q2 0 -> 0.5.
    assert _estimates(report)[("X", "C@10")]["estimate"] == pytest.approx(0.5)
    assert report.result["counts"]["unresolved"] == 1 and report.result["counts"]["labels_used"] == 3


def test_the_stored_inclusion_probability_weights_a_sampled_pair():
    _, pool, _ = tiny_world()
    pool.judging_strategy = "sampled"
    pool.save(update_fields=["judging_strategy"])
    PooledPair.objects.filter(pool=pool, clip__external_id="d").update(inclusion_probability=0.5)
    report = report_create(pool=pool, kind="judging_estimates", params={"target_width": 0.1})
    # d relevant, drawn with pi 0.5: y_hat_d = 2. C@10 of X at q2 = 1 - (1 - y_hat_c)(1 - y_hat_d)
    # = 1 - (1 - 0)(1 - 2) = 2, so X's mean is (1 + 2) / 2 = 1.5: unbiased over draws, not bounded.
    x = _estimates(report)[("X", "C@10")]
    assert x["estimate"] == pytest.approx(1.5) and x["se"] > 0
    assert report.result["counts"]["sampled_with_probability_below_1"] == 1
    assert "poisson" in report.result["design"].lower()
    assert x["judgments_for_width"] is not None and x["judgments_for_width"] > 0


def test_the_report_lays_out_estimates_ranking_and_design_tables():
    _, pool, _ = tiny_world()
    report = report_create(pool=pool, kind="judging_estimates")
    tables = {t.name: t for t in report_tables(report=report)}
    assert list(tables) == ["estimates", "ranking", "bounds", "design"]
    assert len(tables["estimates"].rows) == 10 and tables["estimates"].headers[2] == "Estimate"
    assert tables["estimates"].headers[4] == "95% Horvitz-Thompson interval: low"
    assert tables["estimates"].columns[4] == "ci_low"   # the CSV keeps the field name
    design = dict(tables["design"].rows)
    assert design["estimator"].startswith("Horvitz-Thompson") and "design" in design


def test_a_target_width_outside_0_1_is_refused():
    _, pool, _ = tiny_world()
    with pytest.raises(ReportError, match="'target_width' must be between 0 and 1"):
        report_create(pool=pool, kind="judging_estimates", params={"target_width": 2})
