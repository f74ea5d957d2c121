"""The corrected leaderboard's computations (annotation/analysis/leaderboard.py) on a hand-worked
example, with no database.

Three queries, two runs. Original positives: q1 a, q2 b, q3 c. The raters add q1 d and q3 e, and
judge q2 z not relevant. Runs (rank order):

    X   q1 [d a y]   q2 [b z w]   q3 [e f c]
    Y   q1 [a d y]   q2 [z b w]   q3 [c e f]

C@1 (1 if the first clip is relevant):
    X original 0, 1, 0 -> 1/3      corrected 1, 1, 1 -> 1
    Y original 1, 0, 1 -> 2/3      corrected 1, 0, 1 -> 2/3
C@5: every list holds a positive in its top 3: 1 for both runs, before and after (a tie).
AP (sum of precision at the relevant ranks / number of relevant):
    X original q1 a@2 -> 1/2, q2 b@1 -> 1, q3 c@3 -> 1/3: 11/18 = 0.6111
    X corrected q1 d@1 a@2 -> (1 + 1)/2 = 1, q2 1, q3 e@1 c@3 -> (1 + 2/3)/2 = 5/6: 17/18 = 0.9444
    Y original q1 1, q2 b@2 -> 1/2, q3 1: 5/6;   corrected the same (q1 d@2 -> (1 + 1)/2, q3 e@2 likewise)
nDCG@10 (gain 1 at rank r worth 1/log2(r + 1); ideal = all relevant first):
    X original q1 1/log2 3 = 0.6309, q2 1, q3 1/log2 4 = 0.5: 0.7103
    X corrected q1 (1 + 0.6309)/(1 + 0.6309) = 1, q2 1, q3 (1 + 0.5)/1.6309 = 0.9197: 0.9732
    Y original q1 1, q2 0.6309, q3 1: 0.8770;   corrected the same
Ranks (1 = best): original Y 1, X 2 on C@1, AP and nDCG@10; corrected X 1, Y 2: X moves up one
(+1), Y down one (-1). C@5: both 1 before and after (ties share the best rank), change 0.
Kendall's tau-b over two runs whose order flips: -1 (one discordant pair of one); on C@5 both
orderings are constant, so tau is undefined (None).
FIRE's A (B + C) for X on C@1: 100.0 (33.3 + 66.7); on AP: 94.4 (61.1 + 33.3).
"""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

from annotation.analysis.leaderboard import (CSV_COLUMNS, bootstrap_interval, build_leaderboard, cell,
                                             clip_measure_names, clip_per_query, judged_cutoffs, judged_per_query,
                                             leaderboard_csv_rows, leaderboard_svg, measure_label, ranks, run_cells)

ORIGINAL = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}}
CORRECTED = {"q1": {"a": 1, "d": 1, "y": 0}, "q2": {"b": 1, "z": 0}, "q3": {"c": 1, "e": 1, "f": 0}}
RUNS = {"X": {"q1": ["d", "a", "y"], "q2": ["b", "z", "w"], "q3": ["e", "f", "c"]},
        "Y": {"q1": ["a", "d", "y"], "q2": ["z", "b", "w"], "q3": ["c", "e", "f"]}}
MEASURES = ["C@1", "C@5", "AP", "nDCG@10"]
L3, L4 = 1 / math.log2(3), 0.5


def _board():
    runs = []
    for name, ranked in RUNS.items():
        queries = sorted(ranked)
        sides = {}
        for side, qrels in (("original", ORIGINAL), ("corrected", CORRECTED)):
            values = clip_per_query(ranked, qrels, queries, MEASURES)
            sides[side] = {m: cell(values[m].mean(), bootstrap_interval(values[m], replicates=200, seed=1,
                                                                        confidence=0.95)) for m in MEASURES}
        runs.append({"run": name, "run_id": len(runs) + 1, **sides})
    return build_leaderboard(measures=MEASURES, runs=runs, interval="test interval")


def test_measure_names_follow_the_cut_offs():
    assert clip_measure_names([10, 1, 5, 1]) == ["C@1", "C@5", "C@10", "AP", "nDCG@10"]


def test_per_query_values_by_hand():
    x_original = clip_per_query(RUNS["X"], ORIGINAL, ["q1", "q2", "q3"], MEASURES)
    x_corrected = clip_per_query(RUNS["X"], CORRECTED, ["q1", "q2", "q3"], MEASURES)
    assert x_original["C@1"].tolist() == [0, 1, 0] and x_corrected["C@1"].tolist() == [1, 1, 1]
    assert x_original["AP"] == pytest.approx([1 / 2, 1, 1 / 3])
    assert x_corrected["AP"] == pytest.approx([1, 1, 5 / 6])
    assert x_original["nDCG@10"] == pytest.approx([L3, 1, L4])
    assert x_corrected["nDCG@10"] == pytest.approx([1, 1, (1 + L4) / (1 + L3)])
    y_corrected = clip_per_query(RUNS["Y"], CORRECTED, ["q1", "q2", "q3"], MEASURES)
    assert y_corrected["AP"] == pytest.approx([1, 1 / 2, 1]) and y_corrected["C@1"].tolist() == [1, 0, 1]


def test_a_query_without_a_relevant_clip_scores_zero():
    values = clip_per_query({"q": ["a"]}, {"q": {"a": 0}}, ["q"], ["AP", "C@1"])
    assert values["AP"].tolist() == [0.0] and values["C@1"].tolist() == [0.0]


def test_leaderboard_by_hand():
    board = _board()
    x, y = board["runs"]
    assert x["original"]["C@1"]["value"] == pytest.approx(1 / 3) and x["corrected"]["C@1"]["value"] == 1
    assert x["original"]["AP"]["value"] == pytest.approx(11 / 18)
    assert x["corrected"]["AP"]["value"] == pytest.approx(17 / 18)
    assert y["original"]["AP"]["value"] == pytest.approx(5 / 6) == y["corrected"]["AP"]["value"]
    assert x["original"]["nDCG@10"]["value"] == pytest.approx((L3 + 1 + L4) / 3)
    assert x["corrected"]["nDCG@10"]["value"] == pytest.approx((2 + (1 + L4) / (1 + L3)) / 3)
    for m in ("C@1", "AP", "nDCG@10"):
        assert (x["rank_original"][m], x["rank_corrected"][m], x["rank_change"][m]) == (2, 1, 1)
        assert (y["rank_original"][m], y["rank_corrected"][m], y["rank_change"][m]) == (1, 2, -1)
        assert board["kendall_tau"][m] == pytest.approx(-1.0)
    assert x["rank_original"]["C@5"] == y["rank_original"]["C@5"] == 1 and x["rank_change"]["C@5"] == 0
    assert board["kendall_tau"]["C@5"] is None
    assert x["fire"]["C@1"] == "100.0 (33.3 + 66.7)" and x["fire"]["AP"] == "94.4 (61.1 + 33.3)"
    assert y["fire"]["C@1"] == "66.7 (66.7 + 0.0)"
    assert board["interval"] == "test interval" and board["measures"] == MEASURES


def test_bootstrap_interval_is_seeded_and_holds_the_mean():
    values = np.array([0.0, 1.0, 1.0, 0.5, 0.25, 1.0, 0.0, 0.75])
    low, high = bootstrap_interval(values, replicates=1000, seed=3, confidence=0.95)
    assert low < values.mean() < high and 0 <= low and high <= 1
    assert bootstrap_interval(values, replicates=1000, seed=3, confidence=0.95) == (low, high)
    narrower = bootstrap_interval(values, replicates=1000, seed=3, confidence=0.5)
    assert low < narrower[0] <= narrower[1] < high
    # Every query scoring the same: no spread to resample.
    assert bootstrap_interval(np.full(5, 0.4), replicates=100, seed=0, confidence=0.95) == pytest.approx((0.4, 0.4))
    assert all(math.isnan(v) for v in bootstrap_interval(np.array([]), replicates=100, seed=0, confidence=0.95))


def test_ties_share_the_best_rank():
    assert ranks({"a": 0.5, "b": 0.9, "c": 0.5, "d": 0.1}) == {"b": 1, "a": 2, "c": 2, "d": 4}


def test_csv_rows_and_svg():
    board = _board()
    rows = leaderboard_csv_rows(board)
    assert rows[0] == CSV_COLUMNS and len(rows) == 1 + 2 * len(MEASURES)
    first = dict(zip(rows[0], rows[1]))  # C@1, best corrected run first
    assert first["run"] == "X" and first["measure"] == "C@1" and first["fire"] == "100.0 (33.3 + 66.7)"
    assert (first["rank_original"], first["rank_corrected"], first["rank_change"]) == (2, 1, 1)
    assert first["kendall_tau"] == pytest.approx(-1.0)
    svg = leaderboard_svg(board)
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert svg.count('<g class="original">') == svg.count('<g class="corrected">') == 2 * len(MEASURES)
    assert "AP: Kendall's tau-b -1.00" in svg and svg.count(">X</text>") == len(MEASURES)
    assert re.search(r"<title>X C@1 corrected: 100\.0 \[100\.0, 100\.0\]; rank 1</title>", svg)


def test_svg_escapes_run_names():
    board = _board()
    board["runs"][0]["run"] = "<script>x</script>&"
    svg = leaderboard_svg(board)
    assert "<script>" not in svg and "&lt;script&gt;x&lt;/script&gt;&amp;" in svg


def test_original_and_corrected_share_the_resamples():
    """One set of resampled queries for both sides: equal per-query values give equal intervals,
    and a measure's interval does not depend on which other measures are resampled with it."""
    values = np.array([0.0, 1.0, 0.5, 1.0, 0.0, 0.25])
    cells = run_cells({"original": {"AP": values, "C@1": values > 0.4},
                       "corrected": {"AP": values.copy(), "C@1": np.ones(6)}}, replicates=500, seed=7, confidence=0.9)
    assert cells["original"]["AP"] == cells["corrected"]["AP"]
    assert cells["corrected"]["C@1"] == {"value": 1.0, "low": 1.0, "high": 1.0}
    alone = bootstrap_interval(values, replicates=500, seed=7, confidence=0.9)
    assert (cells["original"]["AP"]["low"], cells["original"]["AP"]["high"]) == pytest.approx(alone)
    # Many queries: the draws go in chunks, and the interval is still the mean's (about 1.96 sd / sqrt(n)).
    rng = np.random.default_rng(0)
    many = rng.random(50_000)
    low, high = bootstrap_interval(many, replicates=200, seed=1, confidence=0.95)
    half = 1.96 * many.std() / math.sqrt(many.size)
    assert low < many.mean() < high and (high - low) / 2 == pytest.approx(half, rel=0.25)


def test_any_cut_off_and_a_repeated_clip():
    """C@2 as trec_eval's success_2; a clip listed twice counts once, at its first rank."""
    values = clip_per_query({"q1": ["y", "y", "a"], "q2": ["b"]}, ORIGINAL, ["q1", "q2", "q3"], ["C@2", "AP"])
    assert values["C@2"].tolist() == [1, 1, 0]  # q1: [y a] after the repeat goes; q3 unanswered: 0
    assert values["AP"] == pytest.approx([1 / 2, 1, 0])


def test_judged_at_k_by_hand_and_as_ir_measures():
    """Judged@K against the corrected qrels (q1 a d y, q2 b z, q3 c e f judged). X: q1 [d a y] and
    q3 [e f c] all judged; q2 [b z w]: w has no verdict. Judged@1 = 1 everywhere; Judged@5 looks at
    the whole 3-clip list and divides by 3 (ir_measures: by the list's length when shorter than K):
    q2 2/3, so (1 + 2/3 + 1)/3 = 8/9. Equal to ir_measures' Judged@k over the same queries."""
    import ir_measures
    from ir_measures import Judged

    queries = ["q1", "q2", "q3"]
    values = judged_per_query(RUNS["X"], CORRECTED, queries, [1, 5, 10])
    assert values[1].tolist() == [1, 1, 1] and values[5] == pytest.approx([1, 2 / 3, 1])
    assert values[5].mean() == pytest.approx(8 / 9) and values[10].mean() == pytest.approx(8 / 9)
    te_run = {q: {c: float(10 - i) for i, c in enumerate(clips)} for q, clips in RUNS["X"].items()}
    expected = ir_measures.calc_aggregate([Judged @ 1, Judged @ 5, Judged @ 10], CORRECTED, te_run)
    for k in (1, 5, 10):
        assert values[k].mean() == pytest.approx(expected[Judged @ k], abs=1e-15)
    # A repeated clip counts once, at its first rank; an empty list has nothing judged.
    assert judged_per_query({"q": ["a", "a", "x"], "r": []}, {"q": {"a": 1}}, ["q", "r"], [2])[2].tolist() == [0.5, 0]
    assert judged_cutoffs([5, 1]) == [1, 5, 10]


def test_a_cut_is_named_in_the_measure():
    assert measure_label("C@10", None) == "C@10"
    assert measure_label("C@10", 5) == "C@10 (runs cut at depth 5)"


def test_csv_and_chart_carry_judged_at_k_and_a_legend():
    board = _board()
    board.update(judged_of={"C@1": "Judged@1", "C@5": "Judged@5", "nDCG@10": "Judged@10"},
                 judged_measures=["Judged@1", "Judged@5", "Judged@10"],
                 interval_labels={"original": "95% bootstrap interval", "corrected": "95% bootstrap interval"})
    board["runs"][0]["judged"] = {"Judged@1": 1.0, "Judged@5": 8 / 9, "Judged@10": 8 / 9}
    board["runs"][1]["judged"] = {"Judged@1": 1.0, "Judged@5": 1.0, "Judged@10": 1.0}
    rows = leaderboard_csv_rows(board)
    by_key = {(r[0], r[2]): dict(zip(rows[0], r)) for r in rows[1:]}
    assert by_key[("X", "C@5")]["judged_measure"] == "Judged@5" and by_key[("X", "C@5")]["judged"] == 8 / 9
    assert by_key[("X", "nDCG@10")]["judged"] == 8 / 9
    assert by_key[("X", "AP")]["judged_measure"] is None and by_key[("X", "AP")]["judged"] is None
    svg = leaderboard_svg(board)
    # Scales to its container: a viewBox, no fixed width or height; no text below 12 units.
    head = svg[:svg.index(">")]
    assert "viewBox=" in head and " width=" not in head and " height=" not in head
    sizes = [int(s) for s in re.findall(r'font-size="(\d+)"', svg)]
    assert sizes and min(sizes) >= 12
    legend = svg[svg.index('<g class="legend">'):]
    legend = legend[:legend.index("</g>")]
    assert "original positives" in legend and "corrected positives" in legend
    assert "dot = value" in legend and "bar = 95% bootstrap interval" in legend
    assert "88.9% judged" in svg and ">Judged@5<" in svg


def test_a_result_stored_before_judged_at_k_still_renders():
    """Releases and reports made before Judged@K existed keep their pages and CSV."""
    board = _board()
    rows = leaderboard_csv_rows(board)
    assert all(row[-2:] == [None, None] for row in rows[1:])
    svg = leaderboard_svg(board)
    assert "judged</text>" not in svg and "bar = interval" in svg


def _flag_board(judged_x, judged_y, **kwargs):
    def side(v):
        return {m: {"value": v, "low": v, "high": v} for m in ("C@5", "AP", "nDCG@10")}

    runs = [{"run": "X", "original": side(0.5), "corrected": side(0.6), "judged": judged_x},
            {"run": "Y", "original": side(0.4), "corrected": side(0.3), "judged": judged_y}]
    return build_leaderboard(measures=["C@5", "AP", "nDCG@10"], runs=runs, interval="test",
                             judged_of={"C@5": "Judged@5", "nDCG@10": "Judged@10"},
                             judged_measures=["Judged@5", "Judged@10"], **kwargs)


def test_a_cell_whose_judged_at_k_is_below_the_threshold_is_flagged_in_the_json_and_the_csv():
    # X: Judged@5 exactly at 0.9 (comparable), Judged@10 just below. Y: wholly judged.
    board = _flag_board({"Judged@5": 0.9, "Judged@10": 0.85}, {"Judged@5": 1.0, "Judged@10": 1.0})
    assert board["judged_threshold"] == 0.9
    by_run = {r["run"]: r for r in board["runs"]}
    assert by_run["X"]["not_comparable"] == {"nDCG@10": "not comparable with the leaderboard (Judged@10 < 0.9)"}
    assert by_run["Y"]["not_comparable"] == {}
    header, *rows = leaderboard_csv_rows(board)
    assert header.index("judged_flag") == header.index("judged_measure") - 1
    flags = {(r[0], r[2]): r[header.index("judged_flag")] for r in rows}
    assert flags == {("X", "C@5"): None, ("X", "AP"): None,
                     ("X", "nDCG@10"): "not comparable with the leaderboard (Judged@10 < 0.9)",
                     ("Y", "C@5"): None, ("Y", "AP"): None, ("Y", "nDCG@10"): None}


def test_the_leaderboard_threshold_is_a_parameter_and_a_stored_result_without_it_takes_the_default():
    board = _flag_board({"Judged@5": 0.9, "Judged@10": 0.85}, {"Judged@5": 0.5, "Judged@10": None},
                        judged_threshold=0.95)
    by_run = {r["run"]: r for r in board["runs"]}
    assert by_run["X"]["not_comparable"] == {"C@5": "not comparable with the leaderboard (Judged@5 < 0.95)",
                                             "nDCG@10": "not comparable with the leaderboard (Judged@10 < 0.95)"}
    assert by_run["Y"]["not_comparable"] == {"C@5": "not comparable with the leaderboard (Judged@5 < 0.95)"}
    # A leaderboard.json written before the threshold existed: the CSV flags against the default.
    old = {k: v for k, v in board.items() if k != "judged_threshold"}
    header, *rows = leaderboard_csv_rows(old)
    flags = {(r[0], r[2]): r[header.index("judged_flag")] for r in rows if r[header.index("judged_flag")]}
    assert flags == {("X", "nDCG@10"): "not comparable with the leaderboard (Judged@10 < 0.9)",
                     ("Y", "C@5"): "not comparable with the leaderboard (Judged@5 < 0.9)"}


def test_the_chart_marks_a_flagged_judged_at_k_and_says_what_the_mark_means():
    svg = leaderboard_svg(_flag_board({"Judged@5": 0.9, "Judged@10": 0.85}, {"Judged@5": 1.0, "Judged@10": 1.0}))
    assert svg.count("% judged (!)") == 1 and "85.0% judged (!)" in svg and "90.0% judged<" in svg
    assert "<title>nDCG@10: not comparable with the leaderboard (Judged@10 &lt; 0.9)</title>" in svg
    assert "(!) = Judged@K below 0.9: not comparable with the leaderboard." in svg
    clean = leaderboard_svg(_flag_board({"Judged@5": 1.0, "Judged@10": 1.0}, {"Judged@5": 1.0, "Judged@10": 1.0}))
    assert "(!)" not in clean
