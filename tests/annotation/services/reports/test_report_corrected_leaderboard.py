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

from annotation.models import PooledPair, Prediction, Report
from annotation.services.accounts.raters import memberships_grant
from annotation.services.datasets.imports import dataset_import
from annotation.services.datasets.runs import run_import
from annotation.services.exports.labels import artefact_file, export_create
from annotation.services.pools.build import pool_create
from annotation.services.reports.create import ReportError, report_create
from annotation.services.reports.kinds.moment_metrics import moment_metrics_report_create
from tests.annotation.services.reports.test_moment_metrics_report import COLUMNS as MOMENT_COLUMNS
from tests.annotation.services.reports.test_moment_metrics_report import labelled_pool  # noqa: F401 (a fixture)
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
    assert report.params == {"ks": [1, 5], "depth": None, "replicates": 1000, "seed": 0, "confidence": 0.95,
                             "decimals": 1, "judged_threshold": 0.9}
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


@pytest.mark.parametrize("y_skips_q3", [False, True])
def test_leaderboard_equals_evaluate_on_the_exported_qrels(tmp_path, y_skips_q3):
    """Also when run Y leaves q3 out (after pooling): trec_eval's rule, kept by both, skips it."""
    pool = _pool(tmp_path / "files")
    if y_skips_q3:
        Prediction.objects.filter(run__name="Y", run__dataset=pool.dataset_id, caption__external_id="q3").delete()
        (tmp_path / "files" / "Y.trec").write_text(_trec({q: c for q, c in RUNS["Y"].items() if q != "q3"}, "Y"))
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
    assert _by_run(report)["Y"]["queries_scored"] == (2 if y_skips_q3 else 3)
    assert _by_run(report)["Y"]["queries_unanswered"] == int(y_skips_q3)
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
    pool.judging_strategy = "sampled"  # a probability sample: the corrected values are the estimates
    pool.save(update_fields=["judging_strategy"])
    with pytest.raises(ReportError, match="is sampled: .* not C@2"):
        report_create(pool=pool, kind="corrected_leaderboard", params={"ks": [1, 2]})


def test_a_sampled_pool_takes_the_judging_estimates(tmp_path):
    """Half of q2's pairs were drawn with probability 1/2: labels are incomplete, so the corrected
    values and intervals are the Horvitz-Thompson estimates, not a bootstrap over the labels."""
    pool = _pool(tmp_path)
    PooledPair.objects.filter(pool=pool, role="pool", caption__external_id="q2", clip__external_id="z").update(
        inclusion_probability=0.5)
    pool.judging_strategy = "sampled"  # a probability sample: the corrected values are the estimates
    pool.save(update_fields=["judging_strategy"])
    report = report_create(pool=pool, kind="corrected_leaderboard", params={"replicates": 200})
    estimates = report_create(pool=pool, kind="judging_estimates")
    assert report.result["sampled"] is True
    assert "judging estimates" in report.result["interval"] and "Horvitz-Thompson" in report.result["interval"]
    expected = {(e["run"], e["measure"]): e for e in estimates.result["estimates"]}
    # The estimates cover the pool's depth (3): the runs are cut there, and every measure says so.
    assert report.result["depth"] == 3
    assert report.result["measures"] == [f"{m} (runs cut at depth 3)" for m in ("C@1", "C@5", "C@10", "AP", "nDCG@10")]
    for row in report.result["runs"]:
        for m in report.result["measures"]:
            e = expected[(row["run"], m.removesuffix(" (runs cut at depth 3)"))]
            assert row["corrected"][m] == pytest.approx({"value": e["estimate"], "low": e["ci_low"],
                                                         "high": e["ci_high"]})
    assert "estimated" in report.result["unjudged"]
    # The original positives are complete: those keep the bootstrap.
    assert _by_run(report)["X"]["original"]["AP (runs cut at depth 3)"]["value"] == pytest.approx(11 / 18)


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


# --------------------------------------------------------------------------------------------
# runs deeper than the pool (issue 35, finding 1): every run is scored whole, as `evaluate` and
# trec_eval score its file, and Judged@K says how much of its top K has a verdict

DEEP_CLIPS = [f"c{i:02d}" for i in range(16)]
DEEP_CAPTIONS = {"q1": "c00", "q2": "c05", "q3": "c10", "q4": "c15"}
#: Runs ten deep over a pool built five deep. Tied scores at ranks 2 and 3 of X's q1 and 6 and 7 of
#: Y's q2, stored in id-ascending order: trec_eval ranks ties by document id descending.
DEEP_RUNS = {
    "X": {"q1": (["c01", "c03", "c07", "c02", "c04", "c05", "c06", "c00", "c08", "c09"],
                 [0.9, 0.8, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]),
          "q2": (["c06", "c07", "c08", "c09", "c11", "c12", "c05", "c13", "c14", "c01"], None),
          "q3": (["c10", "c11", "c12", "c13", "c14", "c15", "c00", "c01", "c02", "c03"], None)},
    "Y": {"q1": (["c00", "c01", "c02", "c03", "c04", "c06", "c07", "c08", "c09", "c11"], None),
          "q2": (["c01", "c02", "c03", "c04", "c06", "c07", "c09", "c05", "c08", "c10"],
                 [0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.7, 0.6, 0.5, 0.4]),
          "q4": (["c14", "c13", "c12", "c11", "c09", "c15", "c00", "c01", "c02", "c03"], None)},
}
#: Verdicts on some pooled pairs (the rest stay unjudged): relevant ones beyond the originals.
DEEP_RELEVANT = {("q1", "c03"), ("q2", "c07"), ("q3", "c11"), ("q4", "c13")}
DEEP_JUDGED = DEEP_RELEVANT | {("q1", "c01"), ("q1", "c07"), ("q2", "c06"), ("q2", "c01"), ("q3", "c12"),
                               ("q4", "c14")}


def _deep_scores(clips, scores):
    return scores or [1.0 - rank / 20 for rank in range(len(clips))]


def _deep_pool(folder: Path):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.jsonl").write_text("".join(f'{{"kind": "clip", "id": "{c}"}}\n' for c in DEEP_CLIPS) + "".join(
        f'{{"kind": "caption", "id": "{q}", "text": "caption {q}", "clip": "{c}"}}\n' for q, c in DEEP_CAPTIONS.items()))
    for tag, run in DEEP_RUNS.items():
        (folder / f"{tag}.trec").write_text("".join(
            f"{q} Q0 {clip} {rank} {score!r} {tag}\n" for q, (clips, scores) in run.items()
            for rank, (clip, score) in enumerate(zip(clips, _deep_scores(clips, scores)), start=1)))
    dataset = dataset_import(path=folder / "manifest.jsonl", name=unique("deep"))
    runs = [run_import(dataset=dataset, path=folder / f"{tag}.trec").run for tag in DEEP_RUNS]
    pool = pool_create(dataset=dataset, name=unique("deep pool"), runs=runs, depth=5, redundancy=0.0)
    rater = make_user("rater")
    memberships_grant(pool=pool, users=[rater])
    for pair in PooledPair.objects.filter(pool=pool, role="pool").select_related("caption", "clip"):
        key = (pair.caption.external_id, pair.clip.external_id)
        if key in DEEP_JUDGED:
            label_pair(rater, pair, value="relevant" if key in DEEP_RELEVANT else "not_relevant", seconds=2.0)
    return pool


def _oracle(qrels: dict, measures: set) -> dict:
    """pytrec_eval on the full run files' scores (its own tie rule), averaged as trec_eval averages."""
    import pytrec_eval

    out = {}
    for tag, run in DEEP_RUNS.items():
        te_run = {q: dict(zip(clips, _deep_scores(clips, scores))) for q, (clips, scores) in run.items()}
        per_query = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(te_run)
        out[tag] = {m: sum(v[m] for v in per_query.values()) / len(per_query) for m in next(iter(per_query.values()))}
    return out


def _judged_oracle(qrels: dict, cutoffs) -> dict:
    """ir_measures' Judged@k on the same full runs, each given strictly decreasing scores in
    trec_eval's order (ir_measures' judged provider breaks ties by id ascending, trec_eval descending),
    over the judged queries the run answered, as `evaluate` hands them to ir_measures (on its own,
    ir_measures adds a judged query the run did not answer as 0, where trec_eval skips it)."""
    import ir_measures
    from ir_measures import Judged

    from annotation.analysis.sample_eval import trec_order

    out = {}
    for tag, run in DEEP_RUNS.items():
        ordered = {q: trec_order(clips, _deep_scores(clips, scores)) for q, (clips, scores) in run.items()}
        te_run = {q: {c: float(len(cs) - i) for i, c in enumerate(cs)} for q, cs in ordered.items()}
        answered = {q: judged for q, judged in qrels.items() if q in te_run}
        values = ir_measures.calc_aggregate([Judged @ k for k in cutoffs], answered, te_run)
        out[tag] = {f"Judged@{k}": values[Judged @ k] for k in cutoffs}
    return out


def test_runs_deeper_than_the_pool_are_scored_whole_as_trec_eval_scores_their_files(tmp_path):
    """A pool built at depth 5 from runs 10 deep: by default each run is scored on its full stored
    ranking, in trec_eval's order (ties by id descending), unjudged clips not relevant; C@10, AP and
    nDCG@10 equal pytrec_eval on the exported corrected qrels and the run files, and Judged@K
    equals ir_measures' Judged@k."""
    pool = _deep_pool(tmp_path / "files")
    report = report_create(pool=pool, kind="corrected_leaderboard", params={"replicates": 100})
    result = report.result
    assert report.params["depth"] is None and result["depth"] is None
    assert result["measures"] == ["C@1", "C@5", "C@10", "AP", "nDCG@10"]
    assert "not relevant" in result["unjudged"] and "trec_eval" in result["unjudged"]
    qrels_text = artefact_file(artefact=export_create(pool=pool, fmt="qrels")).read_text()
    corrected: dict = {}
    for line in qrels_text.splitlines():
        q, _, clip, grade = line.split()
        corrected.setdefault(q, {})[clip] = int(grade)
    original = {q: {c: 1} for q, c in DEEP_CAPTIONS.items()}
    names = {"C@1": "success_1", "C@5": "success_5", "C@10": "success_10", "AP": "map", "nDCG@10": "ndcg_cut_10"}
    wanted = {"success.1,5,10", "map", "ndcg_cut.10"}
    expected_corrected, expected_original = _oracle(corrected, wanted), _oracle(original, wanted)
    judged = _judged_oracle(corrected, [1, 5, 10])
    rows = _by_run(report)
    for tag in DEEP_RUNS:
        for measure, name in names.items():
            assert rows[tag]["corrected"][measure]["value"] == pytest.approx(expected_corrected[tag][name], abs=1e-12)
            assert rows[tag]["original"][measure]["value"] == pytest.approx(expected_original[tag][name], abs=1e-12)
        assert rows[tag]["judged"] == pytest.approx(judged[tag], abs=1e-12)
    # The cut mattered: X's q2 finds its corrected positive c05 at rank 7, beyond the pool's depth.
    assert rows["X"]["original"]["C@10"]["value"] > rows["X"]["original"]["C@5"]["value"]


def test_the_release_and_the_clients_frame_carry_the_whole_run_scores_and_judged_at_k(tmp_path):
    """The release's leaderboard (default parameters) scores the deep pool's runs whole; its CSV,
    read by the researcher's client (leaderboard_frame), has each run's Judged@K beside C@K and
    nDCG@10, equal to ir_measures on the release's qrels.txt and the run files."""
    import zipfile

    from rejudge_client import open_release

    from annotation.services.releases.create import release_create
    from annotation.storage import stored_file_chunks
    from annotation.services.exports.labels import EXPORTS

    pool = _deep_pool(tmp_path / "files")
    release = release_create(pools=[pool], name=unique("deep-release"), allow_unresolved=True)
    zip_path = tmp_path / "release.zip"
    zip_path.write_bytes(b"".join(stored_file_chunks(EXPORTS, release.archive)))
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(tmp_path / "release")
    local = open_release(next((tmp_path / "release").iterdir()))
    board = local.leaderboard()
    assert board["depth"] is None and board["measures"] == ["C@1", "C@5", "C@10", "AP", "nDCG@10"]
    judged = _judged_oracle(local.qrels(), [1, 5, 10])
    expected = _oracle(local.qrels(), {"success.10"})
    frame = local.leaderboard_frame()
    for row in frame.itertuples():
        if row.measure.startswith("C@") or row.measure == "nDCG@10":
            cutoff = 10 if row.measure == "nDCG@10" else int(row.measure[2:])
            assert row.judged_measure == f"Judged@{cutoff}"
            assert row.judged == pytest.approx(judged[row.run][f"Judged@{cutoff}"], abs=1e-12)
        if row.measure == "C@10":
            assert row.corrected == pytest.approx(expected[row.run]["success_10"], abs=1e-12)


def test_a_moment_pool_is_cut_only_when_asked_and_then_says_so(labelled_pool):
    """By default every stored prediction counts (the values equal the moment_metrics report's,
    test above); `depth` 1 keeps each run's first prediction per caption, so R@2 becomes R@1, and
    every measure is named with the cut."""
    whole = report_create(pool=labelled_pool, kind="corrected_leaderboard", params={"ks": [1, 2], "replicates": 100})
    assert whole.result["depth"] is None and whole.result["measures"] == [*MOMENT_COLUMNS, "mAP"]
    assert "Every stored prediction" in whole.result["conventions"] and "not relevant" in whole.result["unjudged"]
    # The second prediction matters in the whole runs, so a cut at 1 has something to change.
    assert any(row["corrected"][c]["value"] != row["corrected"][c.replace("@2", "@1")]["value"]
               for row in whole.result["runs"] for c in MOMENT_COLUMNS if "@2" in c)
    cut = report_create(pool=labelled_pool, kind="corrected_leaderboard",
                        params={"ks": [1, 2], "replicates": 100, "depth": 1})
    suffix = " (runs cut at depth 1)"
    assert cut.result["depth"] == 1 and cut.result["measures"] == [f"{m}{suffix}" for m in [*MOMENT_COLUMNS, "mAP"]]
    for row in cut.result["runs"]:
        for column in MOMENT_COLUMNS:
            if "@2" in column:
                at_one = column.replace("@2", "@1")
                assert row["corrected"][column + suffix]["value"] == row["corrected"][at_one + suffix]["value"]


def test_an_estimate_without_an_interval_keeps_none_bounds_on_every_output():
    """A sampled pool's cell whose estimate has no interval (the design gives none): value kept,
    bounds None, and the tables, CSV rows and chart still render (no crash, no invented bounds)."""
    from annotation.analysis.leaderboard import build_leaderboard, cell, leaderboard_csv_rows, leaderboard_svg
    from annotation.services.reports.kinds.corrected_leaderboard import corrected_leaderboard_tables

    runs = [{"run": name, "run_id": i, "original": {"AP": cell(v, (v - 0.1, v + 0.1))},
             "corrected": {"AP": cell(v + 0.05, (None, None))}, "judged": {}}
            for i, (name, v) in enumerate((("X", 0.4), ("Y", 0.6)), start=1)]
    result = build_leaderboard(measures=["AP"], runs=runs, interval="test", sampled=True, estimated=True,
                               judged_of={}, judged_measures=[], depth=3, unjudged="estimated",
                               interval_labels={"original": "95% bootstrap interval",
                                                "corrected": "95% interval of the judging estimates"})
    assert result["runs"][0]["corrected"]["AP"] == {"value": 0.45, "low": None, "high": None}
    tables = {t.name: t for t in corrected_leaderboard_tables(result)}
    assert ["X", "AP", "40.0 [30.0, 50.0]", "45.0 (no interval)"] in tables["intervals"].rows
    assert tables["intervals"].columns == ["run", "measure", "original", "corrected"]
    assert tables["intervals"].headers[2:] == ["Original positives (B), % [95% bootstrap interval]",
                                              "Corrected positives (A), % [95% interval of the judging estimates]"]
    assert leaderboard_csv_rows(result)[1][6:9] == [0.65, None, None]
    assert "65.0 [–, –]" in leaderboard_svg(result)
