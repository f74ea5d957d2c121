"""Estimates only where the design allows them (issue 35, finding 3): a pool judged in an adaptive
order gets no interval from judging_estimates or ppi_estimates, and the report says why; "census"
only when every pooled pair has a verdict; a sampled pool keeps its intervals; degenerate pools
give NaN-free JSON, CSV and tables."""
from __future__ import annotations

import csv
import io
import json
import math

import pytest

from annotation.analysis.judging.estimates import estimate_metrics
from annotation.models import PooledPair
from annotation.services.reports.create import report_create
from annotation.services.reports.registry import report_tables
from tests.annotation.services.judging.simulation_world import RUNS, TRUTH, tiny_world
from tests.annotation.services.judging.test_ppi_report import _judge

pytestmark = pytest.mark.django_db

G2 = 1 / math.log2(3)


def _strategy(pool, strategy):
    pool.judging_strategy = strategy
    pool.save(update_fields=["judging_strategy"])


def _text(report) -> str:
    """Everything a reader sees of the report: its JSON and every table's title, headers and cells."""
    parts = [json.dumps(report.result, allow_nan=False)]
    for table in report_tables(report=report):
        parts += [table.title, *table.headers, *(str(cell) for row in table.rows for cell in row)]
    return "\n".join(parts)


def _bandit_pool():
    """a relevant, c not relevant; b and d never judged; ordered by the bandit strategy."""
    _, pool, _ = tiny_world(judged={("q1", "a"): True, ("q2", "c"): False})
    _strategy(pool, "bandit")
    return pool


@pytest.mark.parametrize("kind", ["judging_estimates", "ppi_estimates"])
def test_a_bandit_pool_with_unjudged_pairs_gets_no_interval_and_the_report_says_why(kind):
    pool = _bandit_pool()
    if kind == "ppi_estimates":
        _judge(pool)
    report = report_create(pool=pool, kind=kind, params={"ks": [1, 5]} if kind == "ppi_estimates" else {})
    result = report.result
    assert result["intervals"] is False and result["estimates"] == []
    assert result["design"].startswith("pairs were chosen by the bandit strategy from what raters had answered; "
                                       "their inclusion probabilities are unknown, so no sampling interval is valid")
    assert "'sampled'" in result["next_time"] and "'active'" in result["next_time"]
    text = _text(report)
    assert "census" not in text.lower() and "pi = 1" not in text
    tables = {t.name: t for t in report_tables(report=report)}
    assert list(tables) == ["bounds", "design"]
    design = dict(tables["design"].rows)
    assert design["interval"] == "none" and design["next time"] == result["next_time"]
    # the scenarios, by hand (tests/annotation/analysis/judging/test_bounds.py has the working):
    bounds = {(row[0], row[1]): row[2:4] for row in tables["bounds"].rows}
    assert bounds[("X", "C@5")] == pytest.approx([0.5, 1.0]) and bounds[("Y", "C@5")] == pytest.approx([0.5, 0.5])
    assert bounds[("Y", "AP")] == pytest.approx([0.5, 0.25])
    assert bounds[("X", "nDCG@10")] == pytest.approx([0.5, (1 + G2) / 2])
    assert tables["bounds"].headers[2:4] == ["Unjudged counted not relevant", "Unjudged counted relevant"]


def test_the_counts_are_the_pools_and_say_how_they_differ_from_the_labels_used():
    # a relevant, b no majority, c not relevant; d open; X's q1 original is not pooled
    _, pool, _ = tiny_world(judged={("q1", "a"): True, ("q2", "c"): False})
    PooledPair.objects.filter(pool=pool, clip__external_id="b").update(state=PooledPair.State.DISAGREEMENT, vote_count=2)
    PooledPair.objects.filter(pool=pool, clip__external_id__in=["a", "c"]).update(vote_count=1)
    _strategy(pool, "move_to_front")
    counts = report_create(pool=pool, kind="judging_estimates").result["counts"]
    assert {k: counts[k] for k in ("pooled", "judged", "resolved", "unresolved")} == {
        "pooled": 4, "judged": 3, "resolved": 2, "unresolved": 2}
    assert counts["labels_used"] == 3 and counts["resolved_labels_used"] == 2
    assert counts["disagreements_counted_not_relevant"] == 1
    report = report_create(pool=pool, kind="judging_estimates")
    assert "2 of 4 pooled pairs resolved" in report.result["note"]
    assert "The estimator uses 3 labels: 2 resolved pairs and 1 disagreements" in report.result["note"]


def test_census_only_when_every_pooled_pair_has_a_verdict():
    _, pool, _ = tiny_world()   # every pair resolved, pool_order
    _strategy(pool, "bandit")
    report = report_create(pool=pool, kind="judging_estimates")
    assert report.result["intervals"] is True and report.result["design"].startswith("census")
    # one pair without a majority: no verdict, so no census and no interval
    PooledPair.objects.filter(pool=pool, clip__external_id="d").update(state=PooledPair.State.DISAGREEMENT,
                                                                       resolved_label="")
    report = report_create(pool=pool, kind="judging_estimates")
    assert report.result["intervals"] is False and "census" not in _text(report).lower()
    # pool_order stopped early is no random sample either
    _strategy(pool, "pool_order")
    assert report_create(pool=pool, kind="judging_estimates").result["intervals"] is False


@pytest.mark.parametrize("kind", ["judging_estimates", "ppi_estimates", "corrected_leaderboard"])
def test_no_estimate_reads_ranks_below_the_pools_depth(kind):
    """BROKEN before: a fully judged pool asked for depth 10 over a depth-2 pool printed a census and
    zero-width intervals, counting ranks nobody pooled as judged not relevant."""
    from annotation.services.reports.kind import ReportError

    _, pool, _ = tiny_world()   # every pair resolved, pool_order
    _strategy(pool, "sampled")
    with pytest.raises(ReportError, match=f"'depth' must be at most the pool's depth \\({pool.depth}\\)"):
        report_create(pool=pool, kind=kind, params={"depth": pool.depth + 1})


def test_the_estimates_say_when_a_cutoff_is_above_the_depth_they_read():
    _, pool, _ = tiny_world()
    report = report_create(pool=pool, kind="judging_estimates")
    assert report.result["depth"] == pool.depth < 10
    assert f"over the top {pool.depth} only" in report.result["cut"] and "C@10" in report.result["cut"]
    assert report.result["cut"] in report.result["note"]


def test_a_sampled_pool_keeps_its_intervals_unchanged():
    _, pool, _ = tiny_world(judged={k: v for k, v in TRUTH.items() if k != ("q1", "b")})
    _strategy(pool, "sampled")
    PooledPair.objects.filter(pool=pool, clip__external_id="d").update(inclusion_probability=0.5)
    report = report_create(pool=pool, kind="judging_estimates")
    assert report.result["intervals"] is True and report.result["design"].startswith("the 'sampled' strategy")
    # the same inputs straight into the analysis: the report's intervals are its, untouched
    judged = {k: v for k, v in TRUTH.items() if k != ("q1", "b")}
    direct = estimate_metrics(RUNS, judged, {key: 0.5 if key == ("q2", "d") else 1.0 for key in judged},
                              known_relevant={})
    got = {(e["run"], e["measure"]): (e["estimate"], e["ci_low"], e["ci_high"]) for e in report.result["estimates"]}
    for e in direct.runs:
        assert got[(e.run, e.measure)] == pytest.approx((e.estimate, e.ci_low, e.ci_high)), (e.run, e.measure)
    assert any(high > low for _, low, high in got.values())


@pytest.mark.parametrize("case", ["no labels", "one label", "all labels equal", "one run", "no machine verdicts"])
@pytest.mark.parametrize("kind", ["judging_estimates", "ppi_estimates"])
def test_degenerate_pools_give_nan_free_json_csv_and_tables(kind, case):
    judged = {"no labels": {}, "one label": {("q1", "a"): True},
              "all labels equal": {k: False for k in TRUTH}}.get(case, TRUTH)
    dataset, pool, runs = tiny_world(judged=judged)
    _strategy(pool, "bandit")
    if case == "one run":
        pool.poolrun_set.filter(run=runs[1]).delete()
    if kind == "ppi_estimates":
        _judge(pool, {} if case == "no machine verdicts" else None or {("q1", "a"): 0.9, ("q2", "d"): 0.6})
    report = report_create(pool=pool, kind=kind)
    json.dumps(report.result, allow_nan=False)
    for table in report_tables(report=report):
        out = io.StringIO()
        csv.writer(out).writerows([table.columns, *table.rows])
        assert "nan" not in out.getvalue().lower().split(","), (table.name, out.getvalue())
        assert len(table.headers) == len(table.columns)


def test_sample_estimate_refuses_the_pairs_an_adaptive_order_chose_as_a_random_sample():
    from annotation.services.reports.create import ReportError

    pool = _bandit_pool()
    with pytest.raises(ReportError, match=r"sample_size: without one .* pairs were chosen by the bandit strategy"):
        report_create(pool=pool, kind="sample_estimate")
    # a random sample the report draws is fine once every drawn pair has a verdict; not before (a and c,
    # resolved without a vote, count as imported judgments: the sample is drawn from b and d)
    with pytest.raises(ReportError, match="2 of the 2 pairs of the sample have no verdict, and pairs were chosen by "
                                          "the bandit strategy"):
        report_create(pool=pool, kind="sample_estimate", params={"sample_size": 4})
    resolve_all = {("q1", "b"): False, ("q2", "d"): True}
    from tests.annotation.services.judging.simulation_world import resolve
    resolve(pool, resolve_all)
    report = report_create(pool=pool, kind="sample_estimate")   # now a census
    assert "census" not in report.result["design"]


def test_a_sampled_pool_with_no_machine_verdicts_gives_nan_free_ppi_estimates():
    _, pool, _ = tiny_world(judged={k: v for k, v in TRUTH.items() if k != ("q1", "b")})
    _strategy(pool, "sampled")
    PooledPair.objects.filter(pool=pool, clip__external_id="d").update(inclusion_probability=0.5)
    _judge(pool, {})
    report = report_create(pool=pool, kind="ppi_estimates")
    json.dumps(report.result, allow_nan=False)
    assert report.result["intervals"] is True and report.result["counts"]["pool_pairs_with_a_machine_verdict"] == 0


def test_the_report_page_of_a_bandit_pool_says_why_in_words():
    from django.test import Client

    from tests.factories import make_user

    pool = _bandit_pool()
    report = report_create(pool=pool, kind="judging_estimates")
    client = Client()
    client.force_login(make_user("researcher"))
    page = client.get(f"/reports/{report.pk}/").content.decode()
    assert "pairs were chosen by the bandit strategy from what raters had answered" in page
    assert "Unjudged counted not relevant" in page and "census" not in page.lower()
