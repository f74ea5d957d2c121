import json
import math

import ir_measures
import numpy as np
import pytest

from annotation.analysis import retrieval_metrics as M

# Five caption rows. c2 and c3 have the same text ("a man is cooking"), so a model ranks the
# same clips for both, but they are separate rows with different original clips and both
# count. c4 has no positives at all; c5 is missing from the run.
CAPTIONS = ["c1", "c2", "c3", "c4", "c5"]
QRELS = {"c1": {"v1", "v3", "v4"}, "c2": {"v2"}, "c3": {"v6"}, "c5": {"v5"}}
RUN = {
    "c1": ["v3", "v9", "v1", "v8"],
    "c2": ["v7", "v2", "v8", "v9", "v6"],
    "c3": ["v7", "v2", "v8", "v9", "v6"],
    "c4": ["v1", "v2"],
}
# Per caption (whole lists):
#   c1 hits 1 0 1 0: C@1 = 1, C@5 = 1; sum of precisions 1 + 2/3 = 5/3
#      ap_textbook = (5/3)/3 = 5/9 (v4 never retrieved), ap_fire = (5/3)/2 = 5/6
#   c2 hits 0 1 0 0 0: C@1 = 0, C@5 = 1; AP = 1/2 (both variants)
#   c3 hits 0 0 0 0 1: C@1 = 0, C@5 = 1; AP = 1/5 (both variants)
#   c4 no positives: 0; c5 not in the run: 0
# Means over 5 rows: C@1 = 1/5, C@5 = C@10 = 3/5,
#   ap_textbook = (5/9 + 1/2 + 1/5)/5 = 113/450, ap_fire = (5/6 + 1/2 + 1/5)/5 = 46/150
HAND = {
    "correct@1": 1 / 5,
    "correct@5": 3 / 5,
    "correct@10": 3 / 5,
    "ap_textbook": 113 / 450,
    "ap_fire": 46 / 150,
}


@pytest.mark.parametrize("backend", ["trec_eval", "numpy"])
def test_hand_worked_means_and_per_caption(backend):
    m = M.evaluate_run(RUN, QRELS, CAPTIONS, backend=backend)
    assert list(m.mean) == ["correct@1", "correct@5", "correct@10", "ap_textbook", "ap_fire"]
    for k, v in HAND.items():
        assert m.mean[k] == pytest.approx(v), k
    np.testing.assert_allclose(m.per_caption["ap_textbook"], [5 / 9, 1 / 2, 1 / 5, 0, 0])
    np.testing.assert_allclose(m.per_caption["ap_fire"], [5 / 6, 1 / 2, 1 / 5, 0, 0])
    np.testing.assert_allclose(m.per_caption["correct@1"], [1, 0, 0, 0, 0])
    json.dumps(m.to_dict(per_caption=True))


def test_duplicate_texts_count_twice():
    # Dropping the duplicate row c3 changes the mean: rows are not collapsed by text.
    m5 = M.evaluate_run(RUN, QRELS, CAPTIONS)
    m4 = M.evaluate_run(RUN, QRELS, ["c1", "c2", "c4", "c5"])
    assert m5.mean["correct@5"] == pytest.approx(3 / 5)
    assert m4.mean["correct@5"] == pytest.approx(2 / 4)


@pytest.mark.parametrize("backend", ["trec_eval", "numpy"])
def test_depth_cut_off(backend):
    # depth 2: c1 [v3, v9] -> textbook 1/3, fire 1; c2 and c3 [v7, v2] -> c2 AP 1/2, c3 0.
    m = M.evaluate_run(RUN, QRELS, CAPTIONS, depth=2, backend=backend)
    assert m.mean["ap_textbook"] == pytest.approx((1 / 3 + 1 / 2) / 5)
    assert m.mean["ap_fire"] == pytest.approx((1 + 1 / 2) / 5)
    assert m.mean["correct@5"] == pytest.approx(2 / 5)
    assert m.depth == 2


@pytest.mark.parametrize("backend", ["trec_eval", "numpy"])
@pytest.mark.parametrize("ranking,positive", [(["z", "a"], "a"), (["a", "z"], "z")])
def test_rank_order_decides_not_clip_ids(backend, ranking, positive):
    # trec_eval would break equal scores by doc id; the list order must win in both cases.
    m = M.evaluate_run({"q": ranking}, {"q": {positive}}, ["q"], backend=backend)
    assert m.mean["correct@1"] == 0.0
    assert m.mean["ap_textbook"] == pytest.approx(0.5)


def test_repeated_clip_in_a_list_counts_once():
    m = M.evaluate_run({"q": ["p", "p", "x", "p2"]}, {"q": {"p", "p2"}}, ["q"])
    # deduplicated list p, x, p2: (1 + 2/3)/2
    assert m.mean["ap_textbook"] == pytest.approx(5 / 6)


def test_ap_textbook_matches_ir_measures_and_hand():
    qrels = [ir_measures.Qrel(q, c, 1) for q, cs in QRELS.items() for c in cs]
    run = [
        ir_measures.ScoredDoc(q, c, float(len(cs) - i)) for q, cs in RUN.items() for i, c in enumerate(cs)
    ]
    per_query = {(r.query_id, str(r.measure)): r.value for r in ir_measures.iter_calc([ir_measures.AP, ir_measures.Success @ 5], qrels, run)}
    # ir_measures only reports queries present in the qrels; the others are 0 here.
    ap = sum(per_query.get((q, "AP"), 0.0) for q in CAPTIONS) / len(CAPTIONS)
    s5 = sum(per_query.get((q, "Success@5"), 0.0) for q in CAPTIONS) / len(CAPTIONS)
    m = M.evaluate_run(RUN, QRELS, CAPTIONS)
    assert ap == pytest.approx(113 / 450)
    assert m.mean["ap_textbook"] == pytest.approx(ap)
    assert m.mean["correct@5"] == pytest.approx(s5)


def test_backends_agree_on_random_runs():
    rng = np.random.default_rng(3)
    clips = [f"v{i}" for i in range(60)]
    caps = [f"q{i}" for i in range(300)]
    qrels = {q: set(rng.choice(clips, rng.integers(0, 6), replace=False)) for q in caps}
    run = {q: list(rng.choice(clips, rng.integers(1, 40), replace=False)) for q in caps if rng.random() < 0.9}
    for depth in (None, 10, 25):
        a = M.evaluate_run(run, qrels, caps, depth=depth, backend="trec_eval")
        b = M.evaluate_run(run, qrels, caps, depth=depth, backend="numpy")
        for k in a.per_caption:
            np.testing.assert_allclose(a.per_caption[k], b.per_caption[k], atol=1e-12)


def test_format_abc():
    r = M.format_abc(0.4534, 0.3006)
    assert r["text"] == "45.3 (30.1 + 15.2)"
    assert (r["a"], r["b"], r["c"]) == (45.3, 30.1, 15.2)
    assert r["c_exact"] == pytest.approx(15.28)
    assert M.format_abc(0.2, 0.25)["text"] == "20.0 (25.0 - 5.0)"
    corrected = M.evaluate_run(RUN, QRELS, CAPTIONS)
    original = M.evaluate_run(RUN, {"c1": {"v1"}, "c2": {"v2"}, "c3": {"v6"}, "c5": {"v5"}}, CAPTIONS)
    table = M.abc_table(corrected, original)
    # original C@1: only c1 could hit at rank 1 and v1 is at rank 3 -> 0; corrected 20.0
    assert table["correct@1"]["text"] == "20.0 (0.0 + 20.0)"


# --------------------------------------------------------------------------------------------
# leave one run out

ORIGINAL = {"q1": {"o1"}, "q2": {"o2"}}
RUNS = {
    "A": {"q1": ["a1", "o1", "s1"], "q2": ["s2", "a2"]},
    "B": {"q1": ["s1", "b1", "o1"], "q2": ["o2", "s2"]},
}
PROVENANCE = {
    ("q1", "a1"): {"A"},
    ("q1", "o1"): {"A", "B"},
    ("q1", "s1"): {"A", "B"},
    ("q1", "b1"): {"B"},
    ("q2", "s2"): {"A", "B"},
    ("q2", "a2"): {"A"},
    ("q2", "o2"): {"B"},
}
# Raters judged these relevant; (q2, o2) is an original positive that only B proposed: it must
# stay positive when B is left out.
RESOLVED = {("q1", "a1"), ("q1", "s1"), ("q1", "b1"), ("q2", "a2"), ("q2", "s2"), ("q2", "o2")}


def test_leave_one_run_out_by_hand():
    out = M.leave_one_run_out(
        RUNS, provenance=PROVENANCE, resolved_positives=RESOLVED, original_positives=ORIGINAL,
        captions=["q1", "q2"],
    )
    # A left out: drop (q1,a1), (q2,a2) -> q1 {o1, s1, b1}, q2 {o2, s2}
    #   q1 [a1, o1, s1] hits 0 1 1: textbook (1/2 + 2/3)/3 = 7/18, fire 7/12, C@1 0
    #   q2 [s2, a2]     hits 1 0:   textbook 1/2, fire 1, C@1 1
    a = out["A"]
    assert a.n_positives_removed == 2
    assert a.metrics.mean["correct@1"] == pytest.approx(0.5)
    assert a.metrics.mean["ap_textbook"] == pytest.approx((7 / 18 + 1 / 2) / 2)
    assert a.metrics.mean["ap_fire"] == pytest.approx((7 / 12 + 1) / 2)
    # B left out: drop (q1,b1) only -> q1 {o1, a1, s1}, q2 {o2, s2, a2}
    #   q1 [s1, b1, o1] hits 1 0 1: textbook (1 + 2/3)/3 = 5/9, fire 5/6
    #   q2 [o2, s2]     hits 1 1:   textbook 2/3 (a2 not retrieved), fire 1
    b = out["B"]
    assert b.n_positives_removed == 1
    assert b.metrics.mean["correct@1"] == pytest.approx(1.0)
    assert b.metrics.mean["ap_textbook"] == pytest.approx((5 / 9 + 2 / 3) / 2)
    assert b.metrics.mean["ap_fire"] == pytest.approx((5 / 6 + 1) / 2)
    # With the full pool A scores higher: every retrieved clip is positive.
    full = M.evaluate_run(RUNS["A"], M.corrected_qrels(ORIGINAL, RESOLVED), ["q1", "q2"])
    assert full.mean["ap_textbook"] == pytest.approx((3 / 4 + 2 / 3) / 2)
    json.dumps({k: v.to_dict() for k, v in out.items()})


def test_positive_without_provenance_is_kept():
    out = M.leave_one_run_out(
        {"A": {"q": ["x", "o"]}}, provenance={}, resolved_positives={("q", "x")},
        original_positives={"q": {"o"}}, captions=["q"],
    )
    assert out["A"].n_positives_removed == 0
    assert out["A"].metrics.mean["ap_textbook"] == pytest.approx(1.0)


# --------------------------------------------------------------------------------------------


def test_positives_by_caption_length():
    texts = {"q1": "a man cooks", "q2": "a man is cooking food", "q3": "a  dog runs", "q4": "kids"}
    qrels = {"q1": {1, 2, 3}, "q2": {4}, "q3": {5, 6}}
    r = M.positives_by_caption_length(texts, qrels)
    assert r.length.tolist() == [3, 5, 3, 1]
    assert r.n_positives.tolist() == [3, 1, 2, 0]
    assert r.by_length == [
        {"length": 1, "n_captions": 1, "total_positives": 0, "mean_positives": 0.0, "median_positives": 0.0},
        {"length": 3, "n_captions": 2, "total_positives": 5, "mean_positives": 2.5, "median_positives": 2.5},
        {"length": 5, "n_captions": 1, "total_positives": 1, "mean_positives": 1.0, "median_positives": 1.0},
    ]
    json.dumps(r.to_dict())


def test_kendall_tau_between_leaderboards():
    # A>B>C vs B>A>C: pairs AB discordant, AC and BC concordant -> (2 - 1)/3
    r = M.leaderboard_kendall_tau({"A": 0.3, "B": 0.2, "C": 0.1}, {"A": 0.2, "B": 0.3, "C": 0.1, "D": 0.9})
    assert r["tau"] == pytest.approx(1 / 3)
    assert r["n_runs"] == 3
    assert math.isnan(M.leaderboard_kendall_tau({"A": 1.0}, {"A": 2.0})["tau"])


def test_empty_inputs():
    m = M.evaluate_run({}, {}, ["q1", "q2"])
    assert all(v == 0.0 for v in m.mean.values())
    m = M.evaluate_run({}, {}, [])
    assert all(math.isnan(v) for v in m.mean.values())
