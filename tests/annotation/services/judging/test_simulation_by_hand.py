"""A judging simulation of a tiny fully judged pool, its curves worked out by hand, stored as a
report with its CSV and SVG files; and the command that prints it."""
from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Artefact, PooledPair
from annotation.services.reports.registry import report_tables
from annotation.services.judging.simulation import judging_report_file, judging_simulation_create
from tests.annotation.services.judging.simulation_world import tiny_world

pytestmark = pytest.mark.django_db

# The pool (simulation_world): X q1 [a, b], q2 [c, d]; Y q1 [a], q2 [c]; a and d relevant; 4 pairs.
# shallow_first judges each query depth by depth, queries taking turns (q1 first, sorted by id):
#   1st a (relevant), 2nd c, 3rd b, 4th d (relevant).
# Checkpoints 0.25, 0.5, 0.75, 1 = 1, 2, 3, 4 judgments:
#   relevant found     1/2, 1/2, 1/2, 2/2
#   90% of 2 relevant (1.8) needs both: the 4th judgment -> share 4/4 = 1.0
# C@10 with unjudged pairs counted not relevant; full pool X = (1 + 1)/2 = 1.0, Y = (1 + 0)/2 = 0.5.
#   after a (and c, b): X = (1 + 0)/2 = 0.5 (error 0.5), Y = (1 + 0)/2 = 0.5 (error 0)
#   after d: exact, errors 0.
# Kendall's tau of (X, Y): the full pool orders X above Y; until d is judged both are 0.5, a tie,
# for which tau-b is undefined; once d is judged the order is the full pool's: tau 1.
CHECKPOINTS = [0.25, 0.5, 0.75, 1.0]


def test_shallow_first_curves_by_hand_and_the_stored_report():
    _, pool, _ = tiny_world()
    report = judging_simulation_create(pool=pool, params={"strategies": ["shallow_first"], "replays": 3, "seed": 7,
                                                          "checkpoints": CHECKPOINTS, "measure": "C@10"})
    s = report.result["per_strategy"][0]
    assert s["strategy"] == "shallow_first"
    assert s["relevant_found"] == pytest.approx([0.5, 0.5, 0.5, 1.0])
    assert s["relevant_found_sd"] == pytest.approx([0, 0, 0, 0])  # deterministic: every replay alike
    assert s["judged_share"] == pytest.approx(CHECKPOINTS)
    assert s["share_for_90"] == pytest.approx(1.0)
    assert s["metric_error"]["X"] == pytest.approx([0.5, 0.5, 0.5, 0.0])
    assert s["metric_error"]["Y"] == pytest.approx([0.0, 0.0, 0.0, 0.0])
    assert s["metric_error_max"] == pytest.approx([0.5, 0.5, 0.5, 0.0])
    assert s["kendall_tau"][:3] == [None, None, None] and s["kendall_tau"][3] == pytest.approx(1.0)
    assert s["ci_coverage_mean"] == [None] * 4  # only the sampled strategy makes intervals
    assert report.result["full_values"] == {"X": pytest.approx(1.0), "Y": pytest.approx(0.5)}
    assert report.result["n_pairs"] == 4 and report.result["n_relevant"] == 2

    # Stored with its parameters, versions and files.
    assert report.kind == "judging_simulation" and report.pool_id == pool.pk
    assert report.params["replays"] == 3 and report.params["source"]["pool_id"] == pool.pk
    assert report.versions["numpy"] and report.versions["scipy"]
    names = sorted(Artefact.objects.filter(report=report).values_list("name", flat=True))
    assert names == ["ci_coverage.svg", "curves.csv", "kendall_tau.svg", "metric_error.svg", "relevant_found.svg"]
    artefact, csv_bytes = judging_report_file(report=report, name="curves.csv")
    assert artefact.content_type.startswith("text/csv") and csv_bytes.decode().startswith("strategy,")
    _, svg = judging_report_file(report=report, name="relevant_found.svg")
    assert svg.lstrip().startswith(b"<svg") or b"<svg" in svg[:200]

    tables = {t.name: t for t in report_tables(report=report)}
    assert list(tables) == ["strategies", "checkpoints", "run_errors", "full_pool", "inputs"]
    assert tables["strategies"].rows[0][:2] == ["shallow_first", 1.0]
    assert [row[1] for row in tables["checkpoints"].rows] == CHECKPOINTS


def test_the_same_seed_gives_the_same_random_order_curves():
    _, pool, _ = tiny_world()
    params = {"strategies": ["pool_order"], "replays": 20, "seed": 3, "checkpoints": CHECKPOINTS}
    first = judging_simulation_create(pool=pool, params=params).result["per_strategy"][0]
    again = judging_simulation_create(pool=pool, params=params).result["per_strategy"][0]
    assert first["relevant_found"] == again["relevant_found"]
    # Whatever the order, every pair is judged at the last checkpoint and 2 relevant of 4 are
    # found on average half-way: E[found after 2 random judgments] = 2/4 = 0.5.
    assert first["relevant_found"][-1] == pytest.approx(1.0)
    assert 0.2 <= first["relevant_found"][1] <= 0.8


def test_the_command_prints_the_table_and_writes_the_files(tmp_path):
    _, pool, _ = tiny_world()
    out = io.StringIO()
    call_command("simulate_judging", "--pool", str(pool.pk), "--strategies", "shallow_first", "--replays", "2",
                 "--checkpoints", "0.25,0.5,0.75,1", "--csv", str(tmp_path / "c.csv"), "--svg-dir",
                 str(tmp_path / "svg"), "--store", stdout=out, stderr=io.StringIO())
    text = out.getvalue()
    assert "4 pairs to judge, 2 relevant" in text
    assert "shallow_first   100.0%" in text  # share judged for 90% of relevant
    lines = [line for line in text.splitlines() if line.startswith("shallow_first") and "%" in line[16:30]]
    # checkpoint 25%: judged 25%, found 50%, largest C@10 error 0.500, tau undefined, no interval
    assert lines[1].split() == ["shallow_first", "25.0%", "25.0%", "50.0%", "0.500", "–", "–"]
    assert lines[4].split() == ["shallow_first", "100.0%", "100.0%", "100.0%", "0.000", "1.000", "–"]
    assert "stored as report" in text
    assert (tmp_path / "c.csv").read_text().startswith("strategy,")
    assert sorted(p.name for p in (tmp_path / "svg").iterdir()) == ["ci_coverage.svg", "kendall_tau.svg",
                                                                   "metric_error.svg", "relevant_found.svg"]


def test_the_command_refuses_a_pool_not_fully_judged():
    _, pool, _ = tiny_world(judged={("q1", "a"): True})
    with pytest.raises(CommandError, match="is not fully judged: 3 of 4 pairs lack a resolved label"):
        call_command("simulate_judging", "--pool", str(pool.pk), stdout=io.StringIO(), stderr=io.StringIO())
    assert PooledPair.objects.filter(pool=pool).count() == 4


def test_the_command_wants_a_pool_or_a_judgment_set():
    with pytest.raises(CommandError, match="name what to replay"):
        call_command("simulate_judging", stdout=io.StringIO(), stderr=io.StringIO())
