"""Filling a submitted run's holes (annotation/analysis/submission_fill.py, issue 38): the machine's
verdicts as the holes' labels, and the PPI++ estimate from the machine plus a human sample of the
holes. Numbers checked by hand, against pytrec_eval on the filled qrels, against ppi-python on a
measure that is linear in the labels, and by enumerating every sample the design can draw (exact
unbiasedness at a fixed lambda)."""
import itertools

import numpy as np
import pytest
import pytrec_eval
from ppi_py import ppi_mean_pointestimate

from annotation.analysis.submission_fill import (NO_HOLES_NOTE, NO_SAMPLE_NOTE, hole_fill_estimates,
                                                 machine_filled_measures, scored_holes)

# Two judged queries and one the release never judged. Holes: (q1, b), (q1, c), (q2, f).
RANKED = {"q1": ["a", "b", "c"], "q2": ["d", "e", "f"], "q9": ["x", "y"]}
QRELS = {"q1": {"a": 0, "z": 1}, "q2": {"d": 0, "e": 1}}
HOLES = [("q1", "b"), ("q1", "c"), ("q2", "f")]
TRUTH = {("q1", "b"): 1, ("q1", "c"): 0, ("q2", "f"): 1}
PRED = {("q1", "b"): 0.7, ("q1", "c"): 0.4, ("q2", "f"): 0.2}
PI = {("q1", "b"): 0.5, ("q1", "c"): 0.4, ("q2", "f"): 0.3}
KS = (1, 2)
NAMES = ["C@1", "C@2", "AP", "nDCG@10"]


def trec_eval_means(ranked, qrels, queries):
    """pytrec_eval directly (success_1, success_2, map, ndcg_cut_10) averaged over ``queries``."""
    run = {q: {c: float(len(ranked[q]) - i) for i, c in enumerate(ranked[q])} for q in queries}
    evaluator = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in queries}, {"success.1,2", "map", "ndcg_cut.10"})
    res = evaluator.evaluate(run)
    keys = {"C@1": "success_1", "C@2": "success_2", "AP": "map", "nDCG@10": "ndcg_cut_10"}
    return {m: float(np.mean([res[q][k] for q in queries])) for m, k in keys.items()}


def filled(qrels, labels):
    out = {q: dict(v) for q, v in qrels.items()}
    for (q, c), y in labels.items():
        out[q][c] = int(y)
    return out


TRUE_VALUES = trec_eval_means(RANKED, filled(QRELS, TRUTH), ["q1", "q2"])


def test_the_holes_are_the_scored_runs_unjudged_pairs():
    assert scored_holes(RANKED, QRELS, depth=None) == HOLES
    assert scored_holes(RANKED, QRELS, depth=2) == [("q1", "b")]
    # a repeated clip is one pair, at its first rank
    assert scored_holes({"q1": ["b", "b", "a"]}, QRELS, depth=2) == [("q1", "b")]


def test_machine_filled_measures_by_hand():
    """Machine: (q1, b) relevant, (q2, f) not relevant, (q1, c) no verdict (counts as not relevant).
    q1 = [a 0, b 1, c -], z relevant unranked: C@1 0, C@2 1, AP (1/2)/2 = 0.25, nDCG@10
    (1/log2 3)/(1 + 1/log2 3). q2 = [d 0, e 1, f 0]: C@1 0, C@2 1, AP 1/2, nDCG@10 1/log2 3.
    q9 is not judged by the release: not scored, as the release-scored measures leave it out."""
    out = machine_filled_measures(RANKED, QRELS, {("q1", "b"): 1, ("q2", "f"): 0}, ks=KS, depth=None)
    g = 1 / np.log2(3)
    expected = {"C@1": 0.0, "C@2": 1.0, "AP": (0.25 + 0.5) / 2, "nDCG@10": (g / (1 + g) + g) / 2}
    assert out["values"] == pytest.approx(expected, abs=1e-12)
    assert list(out["values"]) == NAMES
    assert (out["filled"], out["holes_left"], out["holes"], out["verdicts_ignored"]) == (2, 1, 3, 0)
    assert (out["queries_scored"], out["queries_unjudged"]) == (2, 1)
    # Judged@K counts the machine's verdicts as verdicts: q1's top 3 holds one pair without any
    assert out["judged"] == pytest.approx({"Judged@1": 1.0, "Judged@2": 1.0, "Judged@10": (2 / 3 + 1) / 2})


def test_machine_filled_measures_equal_trec_eval_on_the_merged_qrels_and_keep_release_verdicts():
    verdicts = dict(TRUTH) | {("q1", "a"): 1, ("q2", "zz"): 1, ("q9", "x"): 1}   # no hole: ignored
    out = machine_filled_measures(RANKED, QRELS, verdicts, ks=KS, depth=None)
    assert out["values"] == pytest.approx(TRUE_VALUES, abs=1e-12)
    assert (out["filled"], out["holes_left"], out["verdicts_ignored"]) == (3, 0, 3)
    assert out["judged"]["Judged@10"] == 1.0
    # no verdict at all: the release-scored measures (holes as not relevant)
    plain = machine_filled_measures(RANKED, QRELS, {}, ks=KS, depth=None)
    assert plain["values"] == pytest.approx(trec_eval_means(RANKED, QRELS, ["q1", "q2"]), abs=1e-12)
    assert (plain["filled"], plain["holes_left"]) == (0, 3)


def test_machine_filled_measures_name_the_cut_and_refuse_a_verdict_that_is_not_binary():
    out = machine_filled_measures(RANKED, QRELS, {("q1", "b"): 1, ("q1", "c"): 1}, ks=KS, depth=2)
    assert list(out["values"]) == [f"{m} (runs cut at depth 2)" for m in NAMES]
    # (q1, c) is below the cut: no hole, its verdict ignored
    assert (out["filled"], out["holes_left"], out["verdicts_ignored"]) == (1, 0, 1)
    with pytest.raises(ValueError, match=r"verdict of \('q1', 'b'\) is 0.7"):
        machine_filled_measures(RANKED, QRELS, {("q1", "b"): 0.7}, ks=KS, depth=None)
    with pytest.raises(ValueError, match="depth"):
        machine_filled_measures(RANKED, QRELS, {}, ks=KS, depth=0)


def test_a_query_the_release_judges_with_no_verdict_has_its_whole_list_filled():
    """qrels names q3 with no verdict (an empty judgment list): scored; every ranked clip a hole."""
    out = machine_filled_measures({"q3": ["m", "n"]}, {"q3": {}}, {("q3", "n"): 1}, ks=KS, depth=None)
    assert out["values"] == pytest.approx({"C@1": 0.0, "C@2": 1.0, "AP": 0.5, "nDCG@10": 1 / np.log2(3)})
    assert (out["filled"], out["holes_left"], out["queries_scored"]) == (1, 1, 1)
    est = hole_fill_estimates({"q3": ["m", "n"]}, {"q3": {}}, {("q3", "m"): 0.0, ("q3", "n"): 1.0}, {}, {},
                              ks=KS, depth=None)
    assert {m: v["estimate"] for m, v in est["values"].items()} == pytest.approx(out["values"])


def test_no_sample_takes_the_machine_as_it_is_and_gives_no_interval():
    """Hard 0/1 predictions: the machine-filled measures. Probabilities: each measure's expectation
    under them; q1's C@2 = 1 - (1 - 0.7) = 0.7 (a 0, b 0.7), q2's = 1 (e): C@2 = 0.85."""
    hard = {("q1", "b"): 1.0, ("q1", "c"): 0.0, ("q2", "f"): 1.0}
    out = hole_fill_estimates(RANKED, QRELS, hard, {}, {}, ks=KS, depth=None)
    assert {m: v["estimate"] for m, v in out["values"].items()} == pytest.approx(TRUE_VALUES, abs=1e-12)
    for cell in out["values"].values():
        assert cell["ci_low"] is None and cell["ci_high"] is None and cell["se"] is None
        assert cell["lambda"] == 1.0
    assert out["note"] == NO_SAMPLE_NOTE and out["interval"] is None
    assert out["counts"] == {"holes": 3, "sampled": 0, "holes_without_prediction": 0, "labels_ignored": 0,
                             "queries_scored": 2, "queries_unjudged": 1}
    soft = hole_fill_estimates(RANKED, QRELS, PRED, {}, {}, ks=KS, depth=None)
    assert soft["values"]["C@2"]["estimate"] == pytest.approx(0.85)
    assert soft["values"]["C@1"]["estimate"] == 0.0


def test_no_holes_gives_the_exact_values_with_a_point_interval():
    qrels = filled(QRELS, TRUTH)
    out = hole_fill_estimates(RANKED, qrels, {}, {("q1", "b"): False}, {("q1", "b"): 0.5}, ks=KS, depth=None)
    assert out["note"] == NO_HOLES_NOTE
    assert out["counts"]["holes"] == 0 and out["counts"]["sampled"] == 0 and out["counts"]["labels_ignored"] == 1
    for m, cell in out["values"].items():
        assert cell["estimate"] == pytest.approx(TRUE_VALUES[m], abs=1e-12)
        assert cell["ci_low"] == pytest.approx(cell["estimate"]) and cell["ci_high"] == pytest.approx(cell["estimate"])
        assert cell["se"] == 0.0


def test_every_hole_judged_for_certain_is_the_truth():
    out = hole_fill_estimates(RANKED, QRELS, PRED, {k: bool(v) for k, v in TRUTH.items()}, {}, ks=KS, depth=None)
    assert out["counts"]["sampled"] == 3
    for m, cell in out["values"].items():
        assert cell["estimate"] == pytest.approx(TRUE_VALUES[m], abs=1e-12)
        assert cell["ci_high"] - cell["ci_low"] == pytest.approx(0.0, abs=1e-12)


def test_hand_worked_ppi_estimate_at_a_fixed_lambda():
    """Only (q1, b) drawn (pi 0.5, relevant), lambda 0.5: x_b = 0.5 * 0.7 + (1 - 0.35)/0.5 = 1.65;
    x_c = 0.5 * 0.4 = 0.2; x_f = 0.5 * 0.2 = 0.1. C@2: q1 1 - (1 - 0)(1 - 1.65) = 1.65, q2 1 (e
    judged relevant): (1.65 + 1)/2. C@1: q1 a = 0, q2 d = 0: 0."""
    out = hole_fill_estimates(RANKED, QRELS, PRED, {("q1", "b"): True}, PI, ks=KS, depth=None, fixed_lambda=0.5)
    assert out["values"]["C@2"]["estimate"] == pytest.approx((1.65 + 1) / 2)
    assert out["values"]["C@1"]["estimate"] == 0.0
    assert out["values"]["C@2"]["lambda"] == 0.5
    # the human-only estimate on the same label: x_b = 1/0.5 = 2, the others 0 -> (2 + 1)/2
    assert out["values"]["C@2"]["human_estimate"] == pytest.approx(1.5)
    assert out["counts"]["sampled"] == 1 and out["note"] is None


@pytest.mark.parametrize("lam", [0.0, 0.6, 1.0])
def test_the_estimate_is_exactly_unbiased_over_every_sample_the_design_draws(lam):
    """Every inclusion pattern of the three holes with its probability: the mean of the estimates
    is the truth as pytrec_eval scores it with every hole judged."""
    mean = dict.fromkeys(NAMES, 0.0)
    total = 0.0
    for take in itertools.product((False, True), repeat=len(HOLES)):
        prob = float(np.prod([PI[h] if t else 1 - PI[h] for h, t in zip(HOLES, take)]))
        labels = {h: bool(TRUTH[h]) for h, t in zip(HOLES, take) if t}
        out = hole_fill_estimates(RANKED, QRELS, PRED, labels, PI, ks=KS, depth=None, fixed_lambda=lam)
        assert out["note"] is None   # a designed sample, even one that drew nothing
        total += prob
        for m in NAMES:
            mean[m] += prob * out["values"][m]["estimate"]
    assert total == pytest.approx(1.0)
    assert mean == pytest.approx(TRUE_VALUES, abs=1e-12)


def test_a_linear_measure_equals_ppi_python():
    """C@1 with every query's first clip a hole is the mean of those holes' labels: with pi = n/N
    and n drawn, the estimate is ppi-python's PPI mean at the same lambda (fixed, and the tuned one
    the estimate reports)."""
    rng = np.random.default_rng(11)
    n_q, n = 60, 18
    ranked = {f"q{i}": [f"h{i}", f"j{i}"] for i in range(n_q)}
    qrels = {f"q{i}": {f"j{i}": int(i % 3 == 0)} for i in range(n_q)}
    truth = rng.random(n_q) < 0.4
    f = np.clip(0.5 * truth + 0.5 * rng.random(n_q), 0, 1)
    drawn = np.zeros(n_q, dtype=bool)
    drawn[rng.choice(n_q, size=n, replace=False)] = True
    predictions = {(f"q{i}", f"h{i}"): float(f[i]) for i in range(n_q)}
    labels = {(f"q{i}", f"h{i}"): bool(truth[i]) for i in range(n_q) if drawn[i]}
    inclusion = {(f"q{i}", f"h{i}"): n / n_q for i in range(n_q)}
    y = truth.astype(float)
    for lam in (0.0, 0.35, 1.0):
        out = hole_fill_estimates(ranked, qrels, predictions, labels, inclusion, ks=(1,), depth=None,
                                  fixed_lambda=lam)
        reference = float(ppi_mean_pointestimate(y[drawn], f[drawn], f, lam=lam)[0])
        assert out["values"]["C@1"]["estimate"] == pytest.approx(reference, abs=1e-12)
    tuned = hole_fill_estimates(ranked, qrels, predictions, labels, inclusion, ks=(1,), depth=None)["values"]["C@1"]
    assert 0.0 < tuned["lambda"] <= 1.0
    reference = float(ppi_mean_pointestimate(y[drawn], f[drawn], f, lam=tuned["lambda"])[0])
    assert tuned["estimate"] == pytest.approx(reference, abs=1e-12)
    assert tuned["ci_low"] <= tuned["estimate"] <= tuned["ci_high"]
    # never wider than the human-only interval on the same labels
    assert tuned["ci_high"] - tuned["ci_low"] <= tuned["human_ci_high"] - tuned["human_ci_low"] + 1e-12


def test_one_query_and_missing_predictions():
    """One query; (q1, c) has no prediction: it gets the mean of the holes' predictions (0.7) and is
    counted. A label on a pair the release already judged is ignored: the release verdict stands."""
    out = hole_fill_estimates({"q1": RANKED["q1"]}, QRELS, {("q1", "b"): 0.7}, {("q1", "a"): True}, {},
                              ks=KS, depth=None)
    assert out["counts"] == {"holes": 2, "sampled": 0, "holes_without_prediction": 1, "labels_ignored": 1,
                             "queries_scored": 1, "queries_unjudged": 0}
    assert out["values"]["C@2"]["estimate"] == pytest.approx(0.7)        # a stays not relevant
    assert out["values"]["C@1"]["estimate"] == 0.0


def test_no_scored_query_and_bad_input():
    out = hole_fill_estimates({"q9": ["x"]}, QRELS, {}, {}, {}, ks=KS, depth=None)
    assert all(cell["estimate"] is None for cell in out["values"].values())
    assert out["counts"]["queries_unjudged"] == 1 and "no query" in out["note"]
    assert machine_filled_measures({"q9": ["x"]}, QRELS, {}, ks=KS, depth=None)["values"]["AP"] is None
    with pytest.raises(ValueError, match="confidence"):
        hole_fill_estimates(RANKED, QRELS, PRED, {}, {}, ks=KS, depth=None, confidence=1.0)
    with pytest.raises(ValueError, match="inclusion probability"):
        hole_fill_estimates(RANKED, QRELS, PRED, {("q1", "b"): True}, {("q1", "b"): 0.0}, ks=KS, depth=None)
    with pytest.raises(ValueError, match="must be in \\[0, 1\\]"):
        hole_fill_estimates(RANKED, QRELS, {("q1", "b"): 1.5}, {("q1", "c"): True}, {("q1", "c"): 0.5}, ks=KS,
                            depth=None)
    with pytest.raises(ValueError, match="must be a \\(query, item\\) pair"):
        hole_fill_estimates(RANKED, QRELS, {"query 1": 0.5}, {}, {}, ks=KS, depth=None)
