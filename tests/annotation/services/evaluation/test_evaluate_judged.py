"""`manage.py evaluate` gives every measure cut at K the run's Judged@K and flags it below the
threshold (issue 38): values against ir_measures' Judged@k and by hand, on unjudged clips, a run
shorter than K, ties, a query with no judged clip, a judged query the run did not answer; the
flag at and around the threshold in the table and JSON layouts; the official tools' layout
unchanged; the researcher's client giving the same figures on the same release folder.

Hand-made qrels: q1 judges a (1), b (0), c (1), e (2); q2 judges x; q3 judges a (not in the run:
skipped, as trec_eval skips it); q4 judges z (0). The run ranks q1: a, u1, b, u2, c, u3, e (seven
clips, four judged, shorter than 10); q2: y1, y2, y3 (none judged); q4: z (one clip, judged);
q5 has no judgments (ignored). By hand, over the three scored queries q1, q2, q4:
Judged@1 = (1 + 0 + 1) / 3; Judged@5 = (3/5 + 0 + 1) / 3; Judged@10 = (4/7 + 0 + 1) / 3.
"""
import json
from io import StringIO

import ir_measures
import pytest
from django.core.management import CommandError, call_command

QRELS = {"q1": {"a": 1, "b": 0, "c": 1, "e": 2}, "q2": {"x": 1}, "q3": {"a": 1}, "q4": {"z": 0}}
RUN = {"q1": ["a", "u1", "b", "u2", "c", "u3", "e"], "q2": ["y1", "y2", "y3"], "q4": ["z"], "q5": ["a"]}
BY_HAND = {1: (1 + 0 + 1) / 3, 5: (3 / 5 + 0 + 1) / 3, 10: (4 / 7 + 0 + 1) / 3}


def write_qrels(path, qrels):
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    return path


def write_run(path, ranked, tag="runA"):
    path.write_text("".join(f"{q} Q0 {d} {i + 1} {100 - i} {tag}\n" for q, docs in ranked.items()
                            for i, d in enumerate(docs)))
    return path


def evaluate_json(*args) -> list[dict]:
    out = StringIO()
    call_command("evaluate", *[str(a) for a in args], "--output", "json", stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def evaluate_table(*args) -> str:
    out = StringIO()
    call_command("evaluate", *[str(a) for a in args], stdout=out)
    return out.getvalue()


@pytest.fixture
def files(tmp_path):
    return write_run(tmp_path / "run.txt", RUN), write_qrels(tmp_path / "qrels.txt", QRELS)


def ir_measures_judged(ranked, qrels, cutoffs):
    """ir_measures' own Judged@k over the queries the run answered that have judgments."""
    run = {q: {d: float(100 - i) for i, d in enumerate(docs)} for q, docs in ranked.items() if q in qrels}
    judged = {q: docs for q, docs in qrels.items() if q in run}
    measures = [ir_measures.Judged @ k for k in cutoffs]
    return {m.params["cutoff"]: v for m, v in ir_measures.calc_aggregate(measures, judged, run).items()}


def test_judged_at_k_of_every_cutoff_measure_equals_ir_measures_and_the_hand_worked_values(files):
    run, qrels = files
    [doc] = evaluate_json(run, "--judgments", qrels, "--judgments-format", "qrels",
                          "--measures", "success_1", "P_5", "ndcg_cut_10", "map", "recall_10")
    independent = ir_measures_judged(RUN, QRELS, [1, 5, 10])
    assert independent == pytest.approx(BY_HAND)
    judged = doc["judged"]
    assert set(judged) == {"success_1", "P_5", "ndcg_cut_10", "recall_10"}  # map has no cutoff
    for name, k in (("success_1", 1), ("P_5", 5), ("ndcg_cut_10", 10), ("recall_10", 10)):
        assert judged[name]["judged_measure"] == f"Judged@{k}"
        assert judged[name]["judged"] == pytest.approx(independent[k], abs=1e-12)
    # Judged@K is beside the measures, not among them: the measures are what was asked for.
    assert set(doc["measures"]) == {"success_1", "P_5", "ndcg_cut_10", "map", "recall_10"}
    assert doc["queries"] == {"scored": 3, "unanswered": ["q3"], "without_judgments": ["q5"]}
    assert doc["judged_threshold"] == 0.9
    # 2/3, 0.53 and 0.52 are all below 0.9
    assert judged["P_5"]["comparable"] is False
    assert judged["P_5"]["note"] == "not comparable with the leaderboard (Judged@5 < 0.9)"


def test_judged_at_k_asked_for_as_a_measure_is_the_same_value(files):
    run, qrels = files
    [doc] = evaluate_json(run, "--judgments", qrels, "--judgments-format", "qrels", "--measures", "P_5", "Judged@5")
    assert doc["measures"]["Judged@5"] == pytest.approx(BY_HAND[5])
    assert doc["judged"]["P_5"]["judged"] == pytest.approx(BY_HAND[5])


def test_ties_are_broken_as_trec_eval_breaks_them(tmp_path):
    # d1 and d2 tie at the top; trec_eval ranks d2 first (doc id descending): Judged@1 = 1, as d2
    # is judged. ir_measures' own provider would put d1 first on these raw scores.
    run = tmp_path / "ties.txt"
    run.write_text("q1 Q0 d1 1 5.0 t\nq1 Q0 d2 2 5.0 t\nq1 Q0 d3 3 1.0 t\n")
    qrels = write_qrels(tmp_path / "q.txt", {"q1": {"d2": 1, "d3": 0}})
    [doc] = evaluate_json(run, "--judgments", qrels, "--judgments-format", "qrels", "--measures", "P_1", "P_2")
    assert doc["judged"]["P_1"]["judged"] == 1.0
    assert doc["judged"]["P_2"]["judged"] == 0.5


def test_a_run_with_no_judged_clip_is_flagged_for_every_cutoff(tmp_path):
    run = write_run(tmp_path / "new.txt", {"q1": ["n1", "n2", "n3"], "q2": ["n4"]})
    qrels = write_qrels(tmp_path / "q.txt", {"q1": {"a": 1}, "q2": {"b": 1}})
    [doc] = evaluate_json(run, "--judgments", qrels, "--judgments-format", "qrels")
    assert {m: j["judged"] for m, j in doc["judged"].items()} == {"P_5": 0.0, "P_10": 0.0, "ndcg_cut_10": 0.0}
    assert ir_measures_judged({"q1": ["n1", "n2", "n3"], "q2": ["n4"]}, {"q1": {"a": 1}, "q2": {"b": 1}},
                              [5, 10]) == {5: 0.0, 10: 0.0}
    assert all(j["note"] and j["comparable"] is False for j in doc["judged"].values())


def nine_of_ten(tmp_path):
    """One query whose top 10 holds nine judged clips: Judged@10 = 0.9 exactly."""
    ranked = {"q1": [f"j{i}" for i in range(9)] + ["hole"]}
    qrels = {"q1": {f"j{i}": i % 2 for i in range(9)}}
    assert ir_measures_judged(ranked, qrels, [10]) == {10: pytest.approx(0.9)}
    return write_run(tmp_path / "nine.txt", ranked), write_qrels(tmp_path / "q.txt", qrels)


@pytest.mark.parametrize("threshold, flagged", [(None, False), ("0.9", False), ("0.8999", False),
                                                 ("0.9001", True), ("1", True), ("0", False)])
def test_the_flag_at_and_around_the_threshold(tmp_path, threshold, flagged):
    run, qrels = nine_of_ten(tmp_path)
    extra = ["--judged-threshold", threshold] if threshold is not None else []
    args = [run, "--judgments", qrels, "--judgments-format", "qrels", "--measures", "P_10", "map", *extra]
    [doc] = evaluate_json(*args)
    shown = threshold if threshold is not None else "0.9"
    note = f"not comparable with the leaderboard (Judged@10 < {float(shown):g})"
    assert doc["judged"]["P_10"]["judged"] == pytest.approx(0.9)
    assert doc["judged"]["P_10"]["comparable"] is not flagged
    assert doc["judged"]["P_10"]["note"] == (note if flagged else None)
    table = evaluate_table(*args)
    assert "nine.txt: Judged@K (share of the top K with a verdict): Judged@10 0.9000 (P_10)" in table
    assert (f"nine.txt: P_10 0.4000 is {note}" in table) is flagged


@pytest.mark.parametrize("bad", ["1.5", "-0.1", "nan"])
def test_a_threshold_out_of_bounds_is_refused_naming_the_option(files, bad):
    run, qrels = files
    with pytest.raises(CommandError, match=r"--judged-threshold must be|--judged-threshold"):
        evaluate_table(run, "--judgments", qrels, "--judgments-format", "qrels", "--judged-threshold", bad)


def test_the_official_tools_layout_is_left_as_the_tool_prints_it(files):
    run, qrels = files
    out = StringIO()
    call_command("evaluate", str(run), "--judgments", str(qrels), "--judgments-format", "qrels", "--output",
                 "trec_eval", "--measures", "P_5", stdout=out)
    assert "Judged" not in out.getvalue() and "comparable" not in out.getvalue()


def test_the_client_and_the_platform_give_the_same_figures_on_the_same_release(tmp_path, files):
    from rejudge_client import evaluate as client_evaluate

    run, qrels = files
    folder = tmp_path / "demo-v1"
    folder.mkdir()
    (folder / "qrels.txt").write_text(qrels.read_text())
    (folder / "release.json").write_text(json.dumps({"format": "rejudge-release/1", "name": "demo", "version": 1,
                                                     "slug": "demo@v1", "files": []}))
    for threshold in ("0.5", "0.9"):
        [platform] = evaluate_json(run, "--judgments", folder / "qrels.txt", "--judgments-format", "qrels",
                                   "--measures", "success_1", "P_5", "ndcg_cut_10", "map",
                                   "--judged-threshold", threshold)
        client = client_evaluate(folder, run, measures=["C@1", "P@5", "nDCG@10", "AP"],
                                 judged_threshold=float(threshold))
        pairs = {"C@1": "success_1", "P@5": "P_5", "nDCG@10": "ndcg_cut_10", "AP": "map"}
        for ours, theirs in pairs.items():
            assert client.measures[ours] == pytest.approx(platform["measures"][theirs], abs=1e-12)
        assert set(client.judged) == {"C@1", "P@5", "nDCG@10"}
        for ours in client.judged:
            mine, other = client.judged[ours], platform["judged"][pairs[ours]]
            assert mine["judged_measure"] == other["judged_measure"]
            assert mine["judged"] == pytest.approx(other["judged"], abs=1e-12)
            assert (mine["comparable"], mine["note"]) == (other["comparable"], other["note"])


@pytest.mark.django_db(transaction=True)
def test_a_platform_release_gives_the_same_judged_at_k_in_its_leaderboard_the_platform_and_the_client(tmp_path):
    """A release of the hand-worked example pool (depth 3; tests/annotation/services/reports/
    test_report_metrics.py): its pooled runs A and B, and a new run C nobody pooled, scored by the
    client on the downloaded folder and by the platform on the archive's qrels.txt, give the same
    Judged@K and flags; the archive's leaderboard gives A and B the same Judged@K and flags."""
    import io
    import zipfile

    from rejudge_client import evaluate as client_evaluate
    from rejudge_client import open_release

    from annotation.services.exports.labels import EXPORTS
    from annotation.services.releases.create import release_create
    from annotation.storage import stored_file_chunks
    from tests.annotation.services.reports.test_report_metrics import example_pool

    pool = example_pool(tmp_path)
    release = release_create(allow_unresolved=True, pools=[pool], name="example-judged", title="Example",
                             licence="CC-BY-4.0", authors=["A. Author"])
    with zipfile.ZipFile(io.BytesIO(b"".join(stored_file_chunks(EXPORTS, release.archive)))) as archive:
        archive.extractall(tmp_path / "release")
    folder = tmp_path / "release" / "example-judged-v1"
    local = open_release(folder)
    qrels = local.qrels()
    new_run = {q: ["never-pooled-1", *list(docs)[:1], "never-pooled-2"] for q, docs in sorted(qrels.items())}
    runs = {"A": tmp_path / "files" / "A.trec", "B": tmp_path / "files" / "B.trec",
            "C": write_run(tmp_path / "C.trec", new_run, tag="C")}
    pairs = {"C@1": "success_1", "C@5": "success_5", "C@10": "success_10", "nDCG@10": "ndcg_cut_10"}
    board = {r["run"]: r for r in local.leaderboard()["runs"]}
    assert set(board) == {"A", "B"} and local.leaderboard()["judged_threshold"] == 0.9
    seen_flag = False
    for name, path in runs.items():
        [platform] = evaluate_json(path, "--judgments", folder / "qrels.txt", "--judgments-format", "qrels",
                                   "--measures", *pairs.values())
        client = client_evaluate(local, path, measures=list(pairs))
        for ours, theirs in pairs.items():
            mine, other = client.judged[ours], platform["judged"][theirs]
            assert (mine["judged_measure"], mine["note"]) == (other["judged_measure"], other["note"])
            assert mine["judged"] == pytest.approx(other["judged"], abs=1e-12)
            seen_flag |= other["note"] is not None
            if name in board:
                assert board[name]["judged"][other["judged_measure"]] == pytest.approx(other["judged"], abs=1e-12)
                assert board[name]["not_comparable"].get(ours) == other["note"]
        # --release reads the same qrels.txt out of the stored archive.
        stored = evaluate_json(path, "--release", "example-judged@v1", "--measures", *pairs.values())
        assert stored == [{**platform, "judgments": {**platform["judgments"], "file": "example-judged-v1-qrels.txt"}}]
    # The new run's second clip is judged, its first and third are not: Judged@1 = 0, flagged.
    assert client.judged["C@1"]["judged"] == 0.0 and client.not_comparable["C@1"].endswith("(Judged@1 < 0.9)")
    assert seen_flag
    table = evaluate_table(runs["C"], "--release", "example-judged", "--measures", "success_1")
    assert "judgments: example-judged-v1-qrels.txt (qrels" in table
    assert "C.trec: success_1 0.0000 is not comparable with the leaderboard (Judged@1 < 0.9)" in table
    with pytest.raises(CommandError, match="--release 'nope@v1': no such release"):
        evaluate_table(runs["C"], "--release", "nope@v1")
    with pytest.raises(CommandError, match="drop --judgments-format"):
        evaluate_table(runs["C"], "--release", "example-judged@v1", "--judgments-format", "qrels")


@pytest.mark.django_db
def test_a_stored_judgment_set_gives_the_judged_at_k_and_flags_its_file_gives(tmp_path, files):
    from annotation.services.judgment_sets.imports import judgments_import
    from tests.annotation.services.judgment_sets.helpers import dataset_from_ids, ids_of_trec_files

    run, qrels = files
    queries, items = ids_of_trec_files(qrels, run)
    dataset = dataset_from_ids(tmp_path, queries=queries, items=items, name="hand")
    judgments_import(dataset=dataset, path=qrels, name="hand-qrels")
    for threshold in ("0.5", "0.9"):
        [from_file] = evaluate_json(run, "--judgments", qrels, "--judgments-format", "qrels",
                                    "--judged-threshold", threshold)
        [from_set] = evaluate_json(run, "--dataset", "hand", "--judgment-set", "hand-qrels",
                                   "--judged-threshold", threshold)
        assert from_set["judged"] == from_file["judged"] and from_set["judged_threshold"] == float(threshold)
    assert from_set["judged"]["P_5"]["judged"] == pytest.approx(BY_HAND[5])
    assert from_set["judged"]["P_5"]["note"] == "not comparable with the leaderboard (Judged@5 < 0.9)"
