"""The `corrected_leaderboard` report on a pool built from files, labelled through the queue: the
values worked by hand in tests/annotation/analysis/test_leaderboard.py (same three queries, same two
runs), equal to what `evaluate` prints on the pool's exported qrels and the same run files, the
`report` command, the page's chart, and a sampled pool taking the judging estimates' intervals.

Pool (depth 3, both runs): q1 {a d y}, q2 {b z w}, q3 {c e f}; verdicts: a d b c e relevant, the
rest not. Original positives: q1 a, q2 b, q3 c.
"""
from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from annotation.models import PooledPair, Report
from annotation.services.accounts.raters import memberships_grant
from annotation.services.datasets.imports import dataset_import
from annotation.services.datasets.runs import run_import
from annotation.services.exports import artefact_file, export_create
from annotation.services.pools.build import pool_create
from annotation.services.reports.create import ReportError, report_create
from annotation.services.reports.kinds.moment_metrics import moment_metrics_report_create
from tests.annotation.services.test_moment_metrics_report import COLUMNS as MOMENT_COLUMNS
from tests.annotation.services.test_moment_metrics_report import labelled_pool  # noqa: F401 (a fixture)
from tests.factories import label_pair, make_user, unique

pytestmark = pytest.mark.django_db

CLIPS = "adyzbwcef"
MANIFEST = "".join(f'{{"kind": "clip", "id": "{c}"}}\n' for c in CLIPS) + (
    '{"kind": "caption", "id": "q1", "text": "a man is cooking", "clip": "a"}\n'
    '{"kind": "caption", "id": "q2", "text": "a dog runs", "clip": "b"}\n'
    '{"kind": "caption", "id": "q3", "text": "a cat sleeps", "clip": "c"}\n')
RUNS = {"X": {"q1": ["d", "a", "y"], "q2": ["b", "z", "w"], "q3": ["e", "f", "c"]},
        "Y": {"q1": ["a", "d", "y"], "q2": ["z", "b", "w"], "q3": ["c", "e", "f"]}}
RELEVANT = {("q1", "a"), ("q1", "d"), ("q2", "b"), ("q3", "c"), ("q3", "e")}
L3, L4 = 1 / math.log2(3), 0.5


def _trec(run: dict, tag: str) -> str:
    return "".join(f"{q} Q0 {clip} {rank} {1.0 - rank / 10} {tag}\n"
                   for q, clips in run.items() for rank, clip in enumerate(clips, start=1))


def _pool(folder: Path, *, label: bool = True):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.jsonl").write_text(MANIFEST)
    for tag, run in RUNS.items():
        (folder / f"{tag}.trec").write_text(_trec(run, tag))
    dataset = dataset_import(path=folder / "manifest.jsonl", name=unique("lb"))
    runs = [run_import(dataset=dataset, path=folder / f"{tag}.trec").run for tag in RUNS]
    pool = pool_create(dataset=dataset, name=unique("lb pool"), runs=runs, depth=3, redundancy=0.0)
    if label:
        rater = make_user("rater")
        memberships_grant(pool=pool, users=[rater])
        for pair in PooledPair.objects.filter(pool=pool, role="pool").select_related("caption", "clip"):
            key = (pair.caption.external_id, pair.clip.external_id)
            label_pair(rater, pair, value="relevant" if key in RELEVANT else "not_relevant", seconds=2.0)
    return pool


def _by_run(report) -> dict:
    return {r["run"]: r for r in report.result["runs"]}


def test_leaderboard_by_hand(tmp_path):
    pool = _pool(tmp_path)
    report = report_create(pool=pool, kind="corrected_leaderboard", params={"ks": [1, 5]})
    assert report.params == {"ks": [1, 5], "depth": 3, "replicates": 1000, "seed": 0, "confidence": 0.95,
                             "decimals": 1}
    result = report.result
    assert result["measures"] == ["C@1", "C@5", "AP", "nDCG@10"] and result["sampled"] is False
    assert result["interval"].startswith("percentile bootstrap over queries: 1000 resamples")
    x, y = _by_run(report)["X"], _by_run(report)["Y"]
    assert x["original"]["C@1"]["value"] == pytest.approx(1 / 3) and x["corrected"]["C@1"]["value"] == 1
    assert x["original"]["AP"]["value"] == pytest.approx(11 / 18)
    assert x["corrected"]["AP"]["value"] == pytest.approx(17 / 18)
    assert x["corrected"]["nDCG@10"]["value"] == pytest.approx((2 + (1 + L4) / (1 + L3)) / 3)
    assert y["corrected"]["AP"]["value"] == pytest.approx(5 / 6)
    # X: C@1 on every query once corrected, so no spread to resample; the others lie around their means.
    assert x["corrected"]["C@1"]["low"] == x["corrected"]["C@1"]["high"] == 1
    assert x["original"]["AP"]["low"] < 11 / 18 < x["original"]["AP"]["high"]
    assert (x["rank_original"]["AP"], x["rank_corrected"]["AP"], x["rank_change"]["AP"]) == (2, 1, 1)
    assert y["rank_change"]["nDCG@10"] == -1 and x["rank_change"]["C@5"] == 0
    assert result["kendall_tau"]["AP"] == pytest.approx(-1.0) and result["kendall_tau"]["C@5"] is None
    assert x["fire"]["C@1"] == "100.0 (33.3 + 66.7)" and x["fire"]["AP"] == "94.4 (61.1 + 33.3)"
    assert x["queries_scored"] == 3 and x["queries_unanswered"] == 0
    assert "Kendall's tau-b" in result["conventions"]
    # The same seed gives the same intervals.
    again = report_create(pool=pool, kind="corrected_leaderboard", params={"ks": [1, 5]})
    assert again.result["runs"] == result["runs"]


def test_leaderboard_equals_evaluate_on_the_exported_qrels(tmp_path):
    pool = _pool(tmp_path / "files")
    report = report_create(pool=pool, kind="corrected_leaderboard")
    qrels = artefact_file(artefact=export_create(pool=pool, fmt="qrels"))
    originals = tmp_path / "originals.qrels"
    originals.write_text("q1 0 a 1\nq2 0 b 1\nq3 0 c 1\n")
    out = io.StringIO()
    call_command("evaluate", *(str(tmp_path / "files" / f"{tag}.trec") for tag in RUNS), "--judgments", str(qrels),
                 "--judgments-format", "qrels", "--originals", str(originals), "--output", "json",
                 "--measures", "Success@1", "Success@5", "Success@10", "AP", "nDCG@10", stdout=out)
    evaluated = {Path(doc["run"]).stem: doc for doc in map(json.loads, out.getvalue().splitlines())}
    names = {"C@1": "success_1", "C@5": "success_5", "C@10": "success_10", "AP": "map", "nDCG@10": "ndcg_cut_10"}
    assert report.result["measures"] == list(names)
    for run, row in _by_run(report).items():
        doc = evaluated[run]
        assert doc["queries"]["scored"] == row["queries_scored"]
        for measure, name in names.items():
            assert row["corrected"][measure]["value"] == pytest.approx(doc["measures"][name], abs=1e-12)
            assert row["original"][measure]["value"] == pytest.approx(doc["fire"][name]["B"] / 100, abs=1e-12)
            assert row["fire"][measure] == doc["fire"][name]["text"]


def test_report_command_prints_the_leaderboard_and_its_csv(tmp_path):
    pool = _pool(tmp_path)
    out = io.StringIO()
    call_command("report", "--pool", str(pool.pk), "--kind", "corrected_leaderboard", "--param", "replicates=200",
                 stdout=out)
    text = out.getvalue()
    assert "X\t100.0 (33.3 + 66.7)" in text and "2 -> 1 (+1)" in text
    report = Report.objects.get(kind="corrected_leaderboard")
    assert report.params["replicates"] == 200
    csv_out = io.StringIO()
    call_command("report", "--pool", str(pool.pk), "--kind", "corrected_leaderboard", "--csv", "leaderboard_values",
                 stdout=csv_out)
    lines = csv_out.getvalue().splitlines()
    assert lines[0].startswith("run,run_id,measure,original,original_low") and lines[1].startswith("X,")


def test_report_page_draws_the_chart(tmp_path):
    pool = _pool(tmp_path)
    report = report_create(pool=pool, kind="corrected_leaderboard", params={"replicates": 200})
    client = Client()
    client.force_login(make_user("researcher"))
    page = client.get(f"/reports/{report.pk}/").content.decode()
    assert page.count('class="leaderboard-chart"') == 1
    assert page.count('<g class="corrected">') == 2 * 5
    assert "<td>100.0 (33.3 + 66.7)</td>" in page


def test_refusals(tmp_path):
    pool = _pool(tmp_path, label=False)
    with pytest.raises(ReportError, match="'replicates' must be between 100 and 100000"):
        report_create(pool=pool, kind="corrected_leaderboard", params={"replicates": 5})
    PooledPair.objects.filter(pool=pool, role="pool").update(inclusion_probability=0.5)
    with pytest.raises(ReportError, match="is sampled: .* not C@2"):
        report_create(pool=pool, kind="corrected_leaderboard", params={"ks": [1, 2]})


def test_a_sampled_pool_takes_the_judging_estimates(tmp_path):
    """Half of q2's pairs were drawn with probability 1/2: labels are incomplete, so the corrected
    values and intervals are the Horvitz-Thompson estimates, not a bootstrap over the labels."""
    pool = _pool(tmp_path)
    PooledPair.objects.filter(pool=pool, role="pool", caption__external_id="q2", clip__external_id="z").update(
        inclusion_probability=0.5)
    report = report_create(pool=pool, kind="corrected_leaderboard", params={"replicates": 200})
    estimates = report_create(pool=pool, kind="judging_estimates")
    assert report.result["sampled"] is True
    assert "judging estimates" in report.result["interval"] and "Horvitz-Thompson" in report.result["interval"]
    expected = {(e["run"], e["measure"]): e for e in estimates.result["estimates"]}
    for row in report.result["runs"]:
        for m in report.result["measures"]:
            e = expected[(row["run"], m)]
            assert row["corrected"][m] == pytest.approx({"value": e["estimate"], "low": e["ci_low"],
                                                         "high": e["ci_high"]})
    # The original positives are complete: those keep the bootstrap.
    assert _by_run(report)["X"]["original"]["AP"]["value"] == pytest.approx(11 / 18)


def test_a_moment_pool_scores_recall_as_moment_metrics_and_map_by_hand(labelled_pool):
    """The moment pool of test_moment_metrics_report.py. mAP (QVHighlights' rule: AP at IoU 0.50,
    0.55, ..., 0.95, averaged), positives q1 {v1 [10, 20] original, v1 [10, 19], v2 [0, 5]}, q2
    {v2 [0, 10]}:

    B corrected: q1 [0, 4.5] on v2 has IoU 0.9 with v2 [0, 5]: recall 1/3 at precision 1 for the
    9 thresholds up to 0.9, so 0.9 / 3 = 0.3; q2 [1, 9] IoU 0.8: AP 1 at 7 thresholds, 0.7. Mean 0.5.
    B original: q1 nothing in v1, 0; q2 0.7. Mean 0.35: FIRE 50.0 (35.0 + 15.0).
    A corrected: q1 both spans exact, recall 2/3 at precision 1: 2/3; q2 [0, 6] IoU 0.6 at rank 2
    (precision 1/2) for 3 thresholds: 0.15. Mean 0.4083. A original: q1 IoU 0.9, 9 of 10: 0.9;
    q2 0.15. Mean 0.525. So on mAP A falls from first to second and B rises: tau -1.
    """
    report = report_create(pool=labelled_pool, kind="corrected_leaderboard", params={"ks": [1, 2],
                                                                                     "replicates": 200})
    expected = {row["run"]: row for row in moment_metrics_report_create(pool=labelled_pool, ks=(1, 2)).result["runs"]}
    result = report.result
    assert result["measures"] == [*MOMENT_COLUMNS, "mAP"] and result["iou_thresholds"] == [0.5, 0.7]
    rows = _by_run(report)
    for run, row in rows.items():
        for column in MOMENT_COLUMNS:
            assert row["corrected"][column]["value"] == pytest.approx(expected[run]["corrected"][column])
            assert row["original"][column]["value"] == pytest.approx(expected[run]["original"][column])
    a, b = rows["A"], rows["B"]
    assert b["corrected"]["mAP"]["value"] == pytest.approx(0.5) and b["original"]["mAP"]["value"] == pytest.approx(0.35)
    assert a["corrected"]["mAP"]["value"] == pytest.approx((2 / 3 + 0.15) / 2)
    assert a["original"]["mAP"]["value"] == pytest.approx(0.525)
    assert b["fire"]["mAP"] == "50.0 (35.0 + 15.0)"
    assert (a["rank_original"]["mAP"], a["rank_corrected"]["mAP"], b["rank_change"]["mAP"]) == (1, 2, 1)
    assert result["kendall_tau"]["mAP"] == pytest.approx(-1.0)
    assert "QVHighlights" in result["conventions"]
