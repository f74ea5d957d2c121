"""The metrics report on a hand-worked example (also used by the export, import and page tests).

The example, built from files as an admin would load it (manifest + two TREC runs):

  captions  q1 "a man is cooking" (original v1)   q2 "a man is cooking" (original v2, same text)
            q3 "a dog runs" (original v3)          q4 "a cat sleeps" (no original clip)
  run A     q1 [v2 v1 v3]  q2 [v2 v4 v6]  q3 [v4 v3 v6]  q4 [v5 v6 v1]
  run B     q1 [v1 v5 v6] (all three scores tied)  q2 [v1 v2 v3]  q3 [v3 v4 v5]  (q4 missing)

Pool (depth 3, 17 pairs) and verdicts:
  q1: v2 rel (A)   v1 rel (A,B; original)   v3 not (A)   v5 rel (B only)   v6 not (B)
  q2: v2 rel (A,B; original)   v4 DISAGREEMENT (A)   v6 not (A)   v1 rel (B only)   v3 not (B)
  q3: v4 rel (A,B)   v3 NOT (A,B; original, so it stays relevant)   v6 not (A)   v5 not (B)
  q4: v5, v6, v1 not -> q4 has no positive at all

Corrected positives: q1 {v1 v2 v5}, q2 {v1 v2}, q3 {v3 v4}, q4 {}; original: q1 {v1} q2 {v2} q3 {v3}.
"""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from annotation.models import PooledPair
from annotation.services.datasets.imports import dataset_import
from annotation.services.pools.build import pool_create
from annotation.services.accounts.raters import memberships_grant
from annotation.services.reports.create import ReportError, report_create
from annotation.services.datasets.runs import run_import
from tests.factories import label_pair, make_user, unique

pytestmark = pytest.mark.django_db

MANIFEST = """\
{"kind": "clip", "id": "v1"}
{"kind": "clip", "id": "v2"}
{"kind": "clip", "id": "v3"}
{"kind": "clip", "id": "v4"}
{"kind": "clip", "id": "v5"}
{"kind": "clip", "id": "v6"}
{"kind": "caption", "id": "q1", "text": "a man is cooking", "clip": "v1"}
{"kind": "caption", "id": "q2", "text": "a man is cooking", "clip": "v2"}
{"kind": "caption", "id": "q3", "text": "a dog runs", "clip": "v3"}
{"kind": "caption", "id": "q4", "text": "a cat sleeps"}
"""
RUN_A = {"q1": ["v2", "v1", "v3"], "q2": ["v2", "v4", "v6"], "q3": ["v4", "v3", "v6"], "q4": ["v5", "v6", "v1"]}
RUN_B = {"q1": ["v1", "v5", "v6"], "q2": ["v1", "v2", "v3"], "q3": ["v3", "v4", "v5"]}
VERDICTS = {
    ("q1", "v2"): "relevant", ("q1", "v1"): "relevant", ("q1", "v3"): "not_relevant", ("q1", "v5"): "relevant",
    ("q1", "v6"): "not_relevant",
    ("q2", "v2"): "relevant", ("q2", "v4"): "disagreement", ("q2", "v6"): "not_relevant", ("q2", "v1"): "relevant",
    ("q2", "v3"): "not_relevant",
    ("q3", "v4"): "relevant", ("q3", "v3"): "not_relevant", ("q3", "v6"): "not_relevant", ("q3", "v5"): "not_relevant",
    ("q4", "v5"): "not_relevant", ("q4", "v6"): "not_relevant", ("q4", "v1"): "not_relevant",
}


def trec(run: dict, tag: str, tied: str | None = None) -> str:
    lines = []
    for caption, clips in run.items():
        for rank, clip in enumerate(clips, start=1):
            score = 0.5 if caption == tied else 1.0 - rank / 10
            lines.append(f"{caption} Q0 {clip} {rank} {score} {tag}")
    return "\n".join(lines) + "\n"


def load_example(folder: Path, name: str = "example"):
    """The dataset and its two runs, imported from files; returns (dataset, [run A, run B])."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.jsonl").write_text(MANIFEST)
    (folder / "A.trec").write_text(trec(RUN_A, "A"))
    # Run B lists q1's clips with tied scores in an order that is not the clip id order: ranks decide.
    (folder / "B.trec").write_text(trec(RUN_B, "B", tied="q1"))
    dataset = dataset_import(path=folder / "manifest.jsonl", name=name)
    runs = [run_import(dataset=dataset, path=folder / f"{tag}.trec").run for tag in ("A", "B")]
    return dataset, runs


def pair_of(pool, caption: str, clip: str) -> PooledPair:
    return PooledPair.objects.get(pool=pool, role="pool", caption__external_id=caption, clip__external_id=clip)


def label_example(pool, verdicts=VERDICTS) -> list:
    """Each verdict given as one rater's vote through label_submit (the disagreement is set directly:
    binary votes always reach a majority by the third vote)."""
    rater = make_user("rater")
    memberships_grant(pool=pool, users=[rater])
    for (caption, clip), verdict in verdicts.items():
        pair = pair_of(pool, caption, clip)
        if verdict == "disagreement":
            PooledPair.objects.filter(pk=pair.pk).update(state=PooledPair.State.DISAGREEMENT, available=False)
        else:
            label_pair(rater, pair, client_id=unique("c"), value=verdict, seconds=3.0)
    return [rater]


def example_pool(tmp_path: Path, name: str = "example"):
    dataset, runs = load_example(tmp_path / "files", name)
    pool = pool_create(dataset=dataset, name="example pool", runs=runs, depth=3, redundancy=0.0)
    label_example(pool)
    return pool


def test_example_pool_is_as_documented(tmp_path):
    pool = example_pool(tmp_path)
    pairs = PooledPair.objects.filter(pool=pool, role="pool")
    assert pairs.count() == 17
    states = {(p.caption.external_id, p.clip.external_id): p.resolved_label or p.state
              for p in pairs.select_related("caption", "clip")}
    assert states == {key: value for key, value in VERDICTS.items()}


def test_metrics_report_by_hand(tmp_path):
    pool = example_pool(tmp_path)
    report = report_create(pool=pool, kind="metrics")
    r = report.result
    assert report.params == {"depth": 3, "ks": [1, 5, 10], "decimals": 1, "overlap_k": 10, "rbo_p": 0.9,
                             "ap_variants": ["ap_textbook", "ap_fire"]}
    assert set(report.versions) >= {"numpy", "scipy", "krippendorff", "ir_measures", "pytrec_eval", "Django"}
    assert r["runs"] == ["A", "B"]

    def means(run, which):
        return {m: cell[which] for m, cell in r["per_run"][run]["metrics"].items()}

    # Run A, original: q1 hit at rank 2 (AP 1/2), q2 hit at 1, q3 hit at 2, q4 nothing.
    assert means("A", "original") == pytest.approx({"correct@1": 0.25, "correct@5": 0.75, "correct@10": 0.75,
                                                    "ap_textbook": 0.5, "ap_fire": 0.5})
    # Run A, corrected: q1 [v2 v1 v3] hits 1,1 of 3 positives -> textbook 2/3, FIRE 2/2;
    # q2 [v2 v4 v6] hit 1 of 2 -> 1/2 and 1; q3 hits 1,1 of 2 -> 1 and 1.
    assert means("A", "corrected") == pytest.approx({"correct@1": 0.75, "correct@5": 0.75, "correct@10": 0.75,
                                                     "ap_textbook": (2 / 3 + 0.5 + 1) / 4, "ap_fire": 0.75})
    # Run B ranks, not the tied scores, decide: q1 [v1 v5 v6] is a hit at rank 1.
    assert means("B", "original") == pytest.approx({"correct@1": 0.5, "correct@5": 0.75, "correct@10": 0.75,
                                                    "ap_textbook": 0.625, "ap_fire": 0.625})
    assert means("B", "corrected") == pytest.approx({"correct@1": 0.75, "correct@5": 0.75, "correct@10": 0.75,
                                                     "ap_textbook": (2 / 3 + 1 + 1) / 4, "ap_fire": 0.75})
    assert r["per_run"]["B"]["captions_missing"] == 1 and r["per_run"]["A"]["captions_missing"] == 0
    cells = r["per_run"]["A"]["metrics"]
    assert cells["correct@1"]["text"] == "75.0 (25.0 + 50.0)"
    assert cells["ap_textbook"]["text"] == "54.2 (50.0 + 4.2)"
    assert r["per_run"]["B"]["metrics"]["ap_textbook"]["text"] == "66.7 (62.5 + 4.2)"

    # Overlap over the captions both answered (q1..q3): top-10 overlaps 1, 1, 2 of 10.
    (overlap,) = r["overlap"]["pairs"]
    assert (overlap["run_a"], overlap["run_b"]) == ("A", "B")
    assert overlap["topk"] == pytest.approx(0.4 / 3)
    # RBO (p = 0.9): q1 and q2 share one clip from depth 2 -> 0.315; q3 swaps its top two -> 0.63.
    assert overlap["rbo"] == pytest.approx((0.315 + 0.315 + 0.63) / 3)

    # Leave one run out: A alone proposed (q1, v2); B alone (q1, v5) and (q2, v1).
    loro = r["leave_one_run_out"]
    assert loro["A"]["positives_removed"] == 1 and loro["B"]["positives_removed"] == 2
    assert loro["A"]["mean"] == pytest.approx({"correct@1": 0.5, "correct@5": 0.75, "correct@10": 0.75,
                                               "ap_textbook": 0.4375, "ap_fire": 0.625})
    assert loro["B"]["mean"] == pytest.approx({"correct@1": 0.5, "correct@5": 0.75, "correct@10": 0.75,
                                               "ap_textbook": 0.5, "ap_fire": 0.625})
    assert loro["A"]["metrics"]["correct@1"]["text"] == "75.0 (50.0 + 25.0)"

    # Positives by length: 3-word captions q3 (2) and q4 (0); 4-word q1 (3) and q2 (2).
    by_length = r["positives_by_length"]
    assert by_length["by_length"] == [
        {"length": 3, "n_captions": 2, "total_positives": 2, "mean_positives": 1.0, "median_positives": 1.0},
        {"length": 4, "n_captions": 2, "total_positives": 5, "mean_positives": 2.5, "median_positives": 2.5}]
    assert by_length["points"] == [[3, 0, 1], [3, 2, 1], [4, 2, 1], [4, 3, 1]]
    assert by_length["spearman_rho"] == pytest.approx(3 / (2 * math.sqrt(4.5)))

    # Leaderboards: AP (textbook) keeps B ahead (tau 1); C@1 ties under corrected labels (undefined).
    assert r["kendall_tau"]["ap_textbook"]["tau"] == pytest.approx(1.0)
    assert r["kendall_tau"]["correct@1"]["tau"] is None

    assert r["labels"] | {"note": None} == {
        "captions": 4, "captions_without_original": 1, "captions_without_positives": 1, "original_positives": 3,
        "positives_added": 4, "corrected_positives": 7, "pool_pairs": 17, "pairs_resolved_relevant": 6,
        "pairs_unresolved": 1, "note": None}


def test_metrics_report_depth_cuts_every_list(tmp_path):
    pool = example_pool(tmp_path)
    r = report_create(pool=pool, kind="metrics", params={"depth": 1, "ks": [1]}).result
    # Top 1 only: A corrected hits on q1 (v2), q2 (v2), q3 (v4) -> AP = C@1 = 3/4.
    a = r["per_run"]["A"]["metrics"]
    assert set(a) == {"correct@1", "ap_textbook", "ap_fire"}
    assert a["correct@1"]["corrected"] == pytest.approx(0.75)
    # Textbook AP@1 still divides by every positive: q1 1/3, q2 1/2, q3 1/2.
    assert a["ap_textbook"]["corrected"] == pytest.approx((1 / 3 + 1 / 2 + 1 / 2) / 4)
    assert a["ap_fire"]["corrected"] == pytest.approx(0.75)


@pytest.mark.parametrize("params, message", [
    ({"depth": 0}, "'depth' must be between 1 and 1000"),
    ({"ks": []}, "'ks' must be a non-empty list"),
    ({"rbo_p": 1.0}, "'rbo_p' must be between 0 and 1 (exclusive)"),
    ({"n_boot": 10}, "unknown parameter(s) n_boot for metrics reports"),
    ({"decimals": 1.5}, "'decimals' must be a whole number"),
])
def test_metrics_report_refuses_bad_parameters(tmp_path, params, message):
    dataset, runs = load_example(tmp_path)
    pool = pool_create(dataset=dataset, name="p", runs=runs, depth=3)
    with pytest.raises(ReportError, match=message.replace("(", r"\(").replace(")", r"\)")):
        report_create(pool=pool, kind="metrics", params=params)


def test_unknown_report_kind_is_refused(tmp_path):
    dataset, runs = load_example(tmp_path)
    pool = pool_create(dataset=dataset, name="p", runs=runs, depth=3)
    with pytest.raises(ReportError, match="unknown report kind 'nope'"):
        report_create(pool=pool, kind="nope")

