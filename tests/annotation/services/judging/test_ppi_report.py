"""The ppi_estimates report: a pool's labels, stored inclusion probabilities and one machine judge's
verdicts into PPI++ estimates next to the human-only ones (issue 25)."""
from __future__ import annotations

import math
from io import StringIO

import pytest
from django.core.management import call_command

from annotation.models import Caption, Clip, MachineJudge, MachineJudgment, PooledPair, Report
from annotation.services.reports.create import ReportError, report_create
from annotation.services.reports.registry import report_tables
from tests.annotation.services.judging.simulation_world import TRUTH, tiny_world
from tests.factories import unique

pytestmark = pytest.mark.django_db

# simulation_world: X q1 [a, b], q2 [c, d]; Y q1 [a], q2 [c]; a and d relevant.
SCORES = {("q1", "a"): 0.9, ("q1", "b"): 0.2, ("q2", "c"): None, ("q2", "d"): 0.6}


def _judge(pool, scores=SCORES, name="vlm"):
    judge = MachineJudge.objects.create(dataset=pool.dataset, pool=pool, name=unique(name), checksum="0" * 64)
    for (q, c), score in scores.items():
        label = MachineJudgment.Label.RELEVANT if (score or 0) >= 0.5 else MachineJudgment.Label.NOT_RELEVANT
        MachineJudgment.objects.create(judge=judge, caption=Caption.objects.get(dataset=pool.dataset, external_id=q),
                                       clip=Clip.objects.get(dataset=pool.dataset, external_id=c), label=label,
                                       score=score, source_record=f"line {len(q) + len(c)}")
    return judge


def _rows(report):
    return {(e["run"], e["measure"]): e for e in report.result["estimates"]}


def test_a_census_gives_the_exact_values_for_both_estimators():
    _, pool, _ = tiny_world()
    _judge(pool)
    report = report_create(pool=pool, kind="ppi_estimates")
    got = _rows(report)
    expected = {("X", "C@10"): 1.0, ("Y", "C@10"): 0.5, ("X", "AP"): 0.75, ("X", "nDCG@10"): (1 + 1 / math.log2(3)) / 2}
    for key, value in expected.items():
        row = got[key]
        assert row["human_estimate"] == pytest.approx(value) and row["ppi_estimate"] == pytest.approx(value), key
        assert row["ppi_ci_low"] == pytest.approx(value) and row["ppi_ci_high"] == pytest.approx(value)
        assert row["lambda"] == 0.0 and row["width_ratio"] is None   # nothing to gain: no sampled pair
    assert report.params == {"judge": None, "ks": [1, 5, 10], "ndcg_k": 10, "confidence": 0.95, "depth": 2}
    assert report.result["estimator"].startswith("PPI++") and report.result["design"].startswith("census: every one")
    assert report.result["counts"]["pool_pairs_with_a_machine_verdict"] == 4


def test_a_sampled_pair_uses_the_machine_and_never_widens_the_interval():
    _, pool, _ = tiny_world(judged={k: v for k, v in TRUTH.items() if k != ("q1", "b")})
    pool.judging_strategy = "sampled"
    pool.save(update_fields=["judging_strategy"])
    PooledPair.objects.filter(pool=pool, clip__external_id="d").update(inclusion_probability=0.5)
    judge = _judge(pool)
    report = report_create(pool=pool, kind="ppi_estimates", params={"judge": judge.pk, "ks": [10]})
    x = _rows(report)[("X", "C@10")]
    # d relevant, drawn with pi 0.5, f = 0.6: x_d = 0.6 lam + (1 - 0.6 lam) / 0.5 = 2 - 0.6 lam; q1 is
    # settled by a (relevant, pi 1): X's C@10 = (1 + 2 - 0.6 lam) / 2. Human-only: lam = 0, 1.5.
    assert x["human_estimate"] == pytest.approx(1.5)
    assert x["ppi_estimate"] == pytest.approx(1.5 - 0.3 * x["lambda"])
    assert x["width_ratio"] <= 1.0 + 1e-12
    for row in report.result["estimates"]:
        assert row["width_ratio"] is None or row["width_ratio"] <= 1.0 + 1e-12
    y = _rows(report)[("Y", "C@10")]   # every pair of Y judged with pi 1: exact either way
    assert y["ppi_estimate"] == pytest.approx(0.5) and y["ppi_ci_high"] == pytest.approx(0.5)
    assert "poisson" in report.result["design"].lower()
    tables = {t.name: t for t in report_tables(report=report)}
    assert list(tables) == ["estimates", "differences", "bounds", "design"]
    assert len(tables["estimates"].rows) == 2 * 3 and len(tables["differences"].rows) == 3
    assert dict(tables["design"].rows)["estimator"].startswith("PPI++")


def test_a_score_that_is_not_a_probability_and_a_missing_judge_are_refused():
    _, pool, _ = tiny_world()
    with pytest.raises(ReportError, match="has no machine judges"):
        report_create(pool=pool, kind="ppi_estimates")
    _judge(pool, {("q1", "a"): 3.0})
    with pytest.raises(ReportError, match=r"score 3\.0 of \(q1, a\) \(line 3\) is not a probability"):
        report_create(pool=pool, kind="ppi_estimates")
    assert not Report.objects.filter(pool=pool).exists()


def test_the_report_command_prints_the_estimates_table_as_csv():
    _, pool, _ = tiny_world()
    _judge(pool)
    out = StringIO()
    call_command("report", "--pool", str(pool.pk), "--kind", "ppi_estimates", "--param", "ks=[10]", "--csv", "estimates",
                 stdout=out)
    lines = out.getvalue().strip().splitlines()
    assert lines[0].split(",")[:3] == ["run", "measure", "human_only"] and len(lines) == 1 + 2 * 3
