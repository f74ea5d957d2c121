"""Horvitz-Thompson estimates from partial judgments (issue 15).

Checks: exact (the platform's C@K/AP code, trec_eval's nDCG) when every pair is judged; hand-worked
values and intervals; unbiasedness computed in full over every possible Poisson sample of a small
pool; the variance estimates' expectation against the true design variance.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from annotation.analysis.judging.estimates import estimate_metrics
from annotation.analysis.retrieval_metrics import evaluate_run

FIXTURE = json.loads((Path(__file__).resolve().parents[3] / "fixtures" / "judging" / "small_pool.json").read_text())
RANKINGS = FIXTURE["rankings"]
ORIGINAL = FIXTURE["original"]
EXTRA = FIXTURE["relevant_non_original"]
CAPTIONS = sorted(ORIGINAL)


def full_judgments():
    judged = {}
    for per_query in RANKINGS.values():
        for q, items in per_query.items():
            for item in items:
                judged[(q, item)] = item in EXTRA[q] or item == ORIGINAL[q]
    return judged


def by_key(report):
    return {(e.run, e.measure): e for e in report.runs}


def test_every_pair_judged_equals_the_platform_metrics_and_trec_eval():
    judged = full_judgments()
    known = {q: {v} for q, v in ORIGINAL.items()}
    report = by_key(estimate_metrics(RANKINGS, judged, {}, known_relevant=known))
    qrels = {q: {ORIGINAL[q], *EXTRA[q]} for q in CAPTIONS}
    for run, per_query in RANKINGS.items():
        reference = evaluate_run(per_query, qrels, CAPTIONS, ks=(1, 5, 10), backend="trec_eval").mean
        for k in (1, 5, 10):
            assert report[(run, f"C@{k}")].estimate == pytest.approx(reference[f"correct@{k}"], abs=1e-12)
        assert report[(run, "AP")].estimate == pytest.approx(reference["ap_textbook"], abs=1e-9)
        te = pytrec_eval.RelevanceEvaluator(
            {q: {c: 1 for c in qrels[q]} for q in CAPTIONS}, {"ndcg_cut.10"}
        ).evaluate({q: {c: float(10 - i) for i, c in enumerate(items)} for q, items in per_query.items()})
        ndcg = sum(te[q]["ndcg_cut_10"] for q in te) / len(CAPTIONS)  # missing queries score 0
        assert report[(run, "nDCG@10")].estimate == pytest.approx(ndcg, abs=1e-9)
        for measure in ("C@1", "C@5", "C@10", "AP", "nDCG@10"):
            e = report[(run, measure)]
            assert e.se == 0.0 and e.ci_low == e.ci_high == e.estimate


def test_hand_worked_sample():
    # One query, run a = [x, y, z], run b = [y, w]. Judged: x relevant with pi = 0.5, y not
    # (pi 1), z relevant with pi = 1. w unjudged.
    # C@1 of a: 1 - (1 - 1/0.5) = 2; variance T^2 - (Z^2 - v) = 1 - (1 - 2) = 2 with
    #   Z = -1, v = (1 - 0.5) / 0.25 = 2 -> se = sqrt(2).
    # C@5 of a: z relevant with pi 1 -> Z_z = 0 -> exactly 1, se 0.
    # C@1 of b: y not relevant -> 0, se 0.
    # AP of a (textbook), subset expansion over the caught sampled relevant pair x (z is fixed):
    #   f({}) = AP with only z relevant = (1/3) / 1 = 1/3; f({x}) = (1/1 + 2/3) / 2 = 5/6;
    #   estimate = f({x}) / 0.5 + f({}) (1 - 1/0.5) = 5/3 - 1/3 = 4/3;
    #   (f^2)_hat = (25/36) 2 - 1/9 = 46/36 -> variance (4/3)^2 - 46/36 = 18/36 = 0.5.
    #   Unbiased: x is caught with probability 0.5 (4/3) or not (f({}) = 1/3): mean 5/6 = the
    #   truth if x is relevant; variance 0.25 = E[0.5 * (0.5 or 0)].
    rankings = {"a": {"q": ["x", "y", "z"]}, "b": {"q": ["y", "w"]}}
    judged = {("q", "x"): True, ("q", "y"): False, ("q", "z"): True}
    inclusion = {("q", "x"): 0.5, ("q", "y"): 1.0, ("q", "z"): 1.0}
    rep = estimate_metrics(rankings, judged, inclusion, measures=("C@1", "C@5", "AP"), target_width=1.0)
    r = by_key(rep)
    assert r[("a", "C@1")].estimate == pytest.approx(2.0)
    assert r[("a", "C@1")].se == pytest.approx(np.sqrt(2.0))
    assert r[("a", "C@1")].ci_low == pytest.approx(2.0 - 1.959964 * np.sqrt(2.0), abs=1e-5)
    # width 2 z se = 5.54 vs target 1: n (5.54 / 1)^2 - n with n = 3 judged -> 89
    assert r[("a", "C@1")].judgments_for_width == int(np.ceil(3 * (2 * 1.959964 * np.sqrt(2)) ** 2 - 3 - 1e-6))
    assert r[("a", "C@5")].estimate == 1.0 and r[("a", "C@5")].se == 0.0
    assert r[("a", "C@5")].judgments_for_width is None
    assert r[("b", "C@1")].estimate == 0.0
    assert r[("a", "AP")].estimate == pytest.approx(4 / 3)
    assert r[("a", "AP")].se == pytest.approx(np.sqrt(0.5))
    assert "poisson" in rep.design and "Horvitz-Thompson" in rep.estimator
    assert "textbook" in rep.conventions["AP"] and "binary gains" in rep.conventions["nDCG@K"]
    # ranking for C@1: a (2) above b (0); C@1 difference = T_b - T_a; b's T = 1 exactly, so the
    # variance of the difference is a's: 2 -> P = Phi(2 / sqrt 2) = Phi(1.414) = 0.921
    c1 = [(b, w, p) for (b, w, p), m in zip(rep.ranking, rep.ranking_measures) if m == "C@1"]
    assert c1[0][:2] == ("a", "b") and c1[0][2] == pytest.approx(0.9213504, abs=1e-6)
    assert rep.to_dict()["ranking"][0]["measure"] == "C@1"


def test_known_relevant_counts_without_being_judged():
    # c has its original "o" that no run retrieved: textbook AP divides by 2 (o + x)
    rankings = {"a": {"c": ["x", "y"]}}
    judged = {("c", "x"): True, ("c", "y"): False}
    r = by_key(estimate_metrics(rankings, judged, {}, known_relevant={"c": {"o"}}, measures=("AP", "C@1")))
    assert r[("a", "AP")].estimate == pytest.approx(0.5)
    # a query only in known_relevant is averaged in with 0
    r = by_key(estimate_metrics(rankings, judged, {}, known_relevant={"d": {"o"}}, measures=("C@1",)))
    assert r[("a", "C@1")].estimate == pytest.approx(0.5)


def _enumerate(rankings, truth, pi, known, measures):
    """Every Poisson sample of the pool: (probability, report) for each subset of pairs."""
    pairs = sorted(truth)
    out = []
    for mask in itertools.product((0, 1), repeat=len(pairs)):
        prob = 1.0
        judged, inclusion = {}, {}
        for take, pair in zip(mask, pairs):
            prob *= pi[pair] if take else 1.0 - pi[pair]
            if take:
                judged[pair] = truth[pair]
                inclusion[pair] = pi[pair]
        if prob > 0:
            out.append((prob, by_key(estimate_metrics(rankings, judged, inclusion, known_relevant=known,
                                                      measures=measures))))
    return out


def _expected_raw_variance(rankings, truth, pi, known, run, k, measure="C"):
    from annotation.analysis.judging.estimates import _per_query, _prepare

    pairs = sorted(truth)
    total = 0.0
    for mask in itertools.product((0, 1), repeat=len(pairs)):
        prob = float(np.prod([pi[p] if t else 1 - pi[p] for t, p in zip(mask, pairs)]))
        judged = {p: truth[p] for t, p in zip(mask, pairs) if t}
        queries, prepared = _prepare(rankings, judged, {p: pi[p] for p in judged}, known)
        kind, kk = ("C", k) if measure == "C" else (("AP", None) if measure == "AP" else ("nDCG", int(measure[5:])))
        total += prob * sum(_per_query(kind, kk, prepared[q], run)[1] for q in queries) / len(queries) ** 2
    return total


def test_unbiased_in_expectation_over_every_possible_sample():
    # Two queries, two runs, 9 pooled pairs with inclusion probabilities 0.3..1: all 2^9 samples.
    rankings = {"a": {"q1": ["x", "y", "z", "u"], "q2": ["m", "n", "o"]},
                "b": {"q1": ["y", "u", "v"], "q2": ["n", "p", "m"]}}
    truth = {("q1", "x"): False, ("q1", "y"): True, ("q1", "z"): True, ("q1", "u"): False, ("q1", "v"): True,
             ("q2", "m"): False, ("q2", "n"): True, ("q2", "o"): True, ("q2", "p"): False}
    pi = dict(zip(sorted(truth), (0.3, 0.5, 0.7, 1.0, 0.4, 0.6, 0.35, 0.8, 0.5)))
    known = {"q2": {"k"}}
    measures = ("C@1", "C@2", "C@3", "AP", "nDCG@10")
    full = by_key(estimate_metrics(rankings, truth, {}, known_relevant=known, measures=measures))
    samples = _enumerate(rankings, truth, pi, known, measures)
    assert sum(p for p, _ in samples) == pytest.approx(1.0)
    for run in ("a", "b"):
        for m in ("C@1", "C@2", "C@3"):
            mean = sum(p * r[(run, m)].estimate for p, r in samples)
            assert mean == pytest.approx(full[(run, m)].estimate, abs=1e-12), (run, m)
            # The variance estimate is unbiased too, before the report clips a negative one to 0
            # (which can only make the interval wider): E[v] = Var(estimate).
            var = sum(p * (r[(run, m)].estimate - mean) ** 2 for p, r in samples)
            assert _expected_raw_variance(rankings, truth, pi, known, run, int(m[2:])) == pytest.approx(var, abs=1e-12)
            assert sum(p * r[(run, m)].se ** 2 for p, r in samples) >= var - 1e-12
        # AP and nDCG (subset expansion): exactly unbiased too, and so is their variance estimate
        # before clipping (se^2 here is the clipped mean-over-queries variance: E[se^2] >= Var).
        for m in ("AP", "nDCG@10"):
            mean = sum(p * r[(run, m)].estimate for p, r in samples)
            assert mean == pytest.approx(full[(run, m)].estimate, abs=1e-12), (run, m)
            var = sum(p * (r[(run, m)].estimate - mean) ** 2 for p, r in samples)
            assert _expected_raw_variance(rankings, truth, pi, known, run, None, m) == pytest.approx(var, abs=1e-12)


def test_paired_difference_variance_is_unbiased_for_c_at_k():
    # Var(C_a - C_b) from the ranking's P(ordered right) is the exact design variance in
    # expectation: check E[se_d^2] = Var(d) by enumeration, recovering se_d from P = Phi(d / se_d).
    from annotation.analysis.judging.estimates import _difference_variance, _prepare, _per_query

    rankings = {"a": {"q": ["x", "y", "z"]}, "b": {"q": ["y", "w", "x"]}}
    truth = {("q", "x"): True, ("q", "y"): False, ("q", "z"): True, ("q", "w"): True}
    pi = {("q", "x"): 0.5, ("q", "y"): 0.6, ("q", "z"): 0.3, ("q", "w"): 0.7}
    pairs = sorted(truth)
    diffs, var_hats, probs = [], [], []
    for mask in itertools.product((0, 1), repeat=len(pairs)):
        prob = np.prod([pi[p] if t else 1 - pi[p] for t, p in zip(mask, pairs)])
        judged = {p: truth[p] for t, p in zip(mask, pairs) if t}
        _, prepared = _prepare(rankings, judged, {p: pi[p] for p in judged}, None)
        qd = prepared["q"]
        va, _, da = _per_query("C", 2, qd, "a")
        vb, _, db = _per_query("C", 2, qd, "b")
        diffs.append(va - vb)
        var_hats.append(_difference_variance(qd, da, db))
        probs.append(prob)
    probs = np.array(probs)
    diffs = np.array(diffs)
    mean = (probs * diffs).sum()
    assert mean == pytest.approx(1.0 - 1.0, abs=1e-12)  # both runs have a relevant pair in their top 2
    assert (probs * np.array(var_hats)).sum() == pytest.approx((probs * (diffs - mean) ** 2).sum(), abs=1e-12)


def test_integer_ids_match():
    # ids given as ints (database ids) match: pi 0.5 is found, so C@1 = 1 / 0.5 = 2
    r = by_key(estimate_metrics({"a": {1: [7]}}, {(1, 7): True}, {(1, 7): 0.5}, measures=("C@1",)))
    assert r[("a", "C@1")].estimate == pytest.approx(2.0)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="inclusion probability"):
        estimate_metrics({"a": {"q": ["x"]}}, {("q", "x"): True}, {("q", "x"): 0.0})
    with pytest.raises(ValueError, match="unknown measure"):
        estimate_metrics({"a": {"q": ["x"]}}, {}, {}, measures=("P@5",))


def _settled_and_unsettled(n_settled, n_unsettled, pi, give_unjudged_pi=True):
    """Run a: n_settled queries with the known original at rank 1; n_unsettled queries whose two
    pairs are x (judged not relevant, pi) and y (not judged; its pi given or not)."""
    rankings, judged, inclusion, known = {"a": {}}, {}, {}, {}
    for i in range(n_settled):
        rankings["a"][f"s{i}"] = ["o", "x"]
        known[f"s{i}"] = {"o"}
        judged[(f"s{i}", "x")] = False
        inclusion[(f"s{i}", "x")] = 1.0
    for i in range(n_unsettled):
        rankings["a"][f"u{i}"] = ["x", "y"]
        judged[(f"u{i}", "x")] = False
        inclusion[(f"u{i}", "x")] = pi
        if give_unjudged_pi:
            inclusion[(f"u{i}", "y")] = pi
    return rankings, judged, inclusion, known


@pytest.mark.parametrize("give_unjudged_pi", [True, False])
def test_no_hit_caught_among_unsettled_queries_gets_a_rare_event_upper_bound(give_unjudged_pi):
    # 15 settled queries (C@2 = 1 exactly) and 5 unsettled ones whose sample caught no relevant
    # pair: estimate 15/20 = 0.75, variance estimate 0 -> the normal interval is the point 0.75
    # (it missed whenever an unsettled query hides a hit). Gamma interval on the unsettled hits
    # y = 0, v = 0 with w = mean 1/pi of their open top-2 pairs = 1/0.8 = 1.25 (the same from the
    # judged x's alone when y's pi is not given): upper = w * chi2_{0.975}(2) / 2 = 1.25 * -ln 0.025
    # = 1.25 * 3.688879 = 4.611099 hits (< 5 unsettled) -> C@2 in [0.75, (15 + 4.611099) / 20 = 0.980555].
    rankings, judged, inclusion, known = _settled_and_unsettled(15, 5, 0.8, give_unjudged_pi)
    r = by_key(estimate_metrics(rankings, judged, inclusion, known_relevant=known, measures=("C@2",)))
    e = r[("a", "C@2")]
    assert e.estimate == pytest.approx(0.75) and e.se == 0.0
    assert e.ci_low == pytest.approx(0.75)
    assert e.ci_high == pytest.approx(0.980555, abs=1e-6)


def test_rare_event_upper_bound_is_at_most_every_unsettled_query():
    # pi = 0.5: w = 2 -> 2 * 3.688879 = 7.38 hits, more than the 5 unsettled queries: upper (15 + 5) / 20
    rankings, judged, inclusion, known = _settled_and_unsettled(15, 5, 0.5)
    e = by_key(estimate_metrics(rankings, judged, inclusion, known_relevant=known, measures=("C@2",)))[("a", "C@2")]
    assert (e.ci_low, e.ci_high) == (pytest.approx(0.75), pytest.approx(1.0))
    # no unsettled query (every pair judged with pi = 1): a point, as before
    rankings, judged, inclusion, known = _settled_and_unsettled(15, 0, 0.5)
    e = by_key(estimate_metrics(rankings, judged, inclusion, known_relevant=known, measures=("C@2",)))[("a", "C@2")]
    assert e.ci_low == e.ci_high == 1.0


def test_gamma_interval_with_hits_caught():
    # Fay-Feuer on y = 4 estimated hits (two caught at pi = 0.5), v = 2 * (1 - 0.5) / 0.25 = 4,
    # w = 2, 20 unsettled of 20 queries:
    #   normal: 4 +- 1.959964 * 2 = [0.0799, 7.9201]
    #   gamma upper: (v + w^2) / (2 (y + w)) * chi2_{0.975}(2 (y + w)^2 / (v + w^2))
    #              = 8 / 12 * chi2_{0.975}(9) = 0.666667 * 19.022768 = 12.681845
    #   gamma lower: v / (2 y) * chi2_{0.025}(2 y^2 / v) = 0.5 * chi2_{0.025}(8) = 0.5 * 2.179731 = 1.089866
    # hull: [0.0799, 12.6818] / 20
    from annotation.analysis.judging.estimates import c_at_k_interval

    low, high = c_at_k_interval(0.0, 4.0, 4.0, 2.0, 20, 20)
    assert float(low) == pytest.approx((4 - 1.959964 * 2) / 20, abs=1e-6)
    assert float(high) == pytest.approx(12.681845 / 20, abs=1e-6)
    # with more settled hits the gamma lower bound can be the tighter one: the hull keeps the normal
    low, high = c_at_k_interval(10.0, 4.0, 4.0, 2.0, 20, 30)
    assert float(low) == pytest.approx((14 - 1.959964 * 2) / 30, abs=1e-6)
    # no weight known (no pi < 1 anywhere): the plain normal interval
    low, high = c_at_k_interval(0.0, 4.0, 4.0, 0.0, 20, 20)
    assert float(high) == pytest.approx((4 + 1.959964 * 2) / 20, abs=1e-6)
    # a pair that could not be sampled (pi = 0, w = inf): any unsettled query may hold a hit
    low, high = c_at_k_interval(0.0, 0.0, 0.0, np.inf, 7, 20)
    assert (float(low), float(high)) == (0.0, pytest.approx(7 / 20))


def _few_relevant_world(n_queries=300, seed=3):
    """Per query: 8 pooled items, the original "o" (known relevant, run a's rank 1 and run b's
    rank 3) and each other item relevant with probability 0.15 (about 2 relevant per query, as in
    the bench); run a ranks o, i1..i5, run b ranks i1, i2, o, i6, i7. Design: each run's rank 1 is
    judged for sure (pi = 1), every other pair with pi = 0.3."""
    rng = np.random.default_rng(seed)
    rankings, truth, pi, known = {"a": {}, "b": {}}, {}, {}, {}
    for i in range(n_queries):
        q = f"q{i}"
        rankings["a"][q] = ["o", "i1", "i2", "i3", "i4", "i5"]
        rankings["b"][q] = ["i1", "i2", "o", "i6", "i7"]
        known[q] = {"o"}
        for j in range(1, 8):
            truth[(q, f"i{j}")] = bool(rng.random() < 0.15)
            pi[(q, f"i{j}")] = 1.0 if j == 1 else 0.3
    return rankings, truth, pi, known


def test_ap_and_ndcg_intervals_cover_with_few_relevant_per_query():
    # Finding (bench, 30% sample): the per-query ratio estimators N_hat / R_hat with ~2 relevant
    # per query are biased by 1-3 points after averaging over 1,000 queries and their linearised
    # se is half the real spread: the 95% intervals covered in 0 of 50 samples. Here: 300
    # queries, 120 samples; the intervals must cover the full-pool value in >= 88% of them (95%
    # nominal, binomial sd 0.02) and the bias must stay well inside the half-width.
    rankings, truth, pi, known = _few_relevant_world()
    measures = ("AP", "nDCG@10")
    full = by_key(estimate_metrics(rankings, truth, {}, known_relevant=known, measures=measures))
    pairs = sorted(truth)
    p = np.array([pi[k] for k in pairs])
    rng = np.random.default_rng(11)
    hits, est, half = {}, {}, {}
    for _ in range(120):
        take = np.flatnonzero(rng.random(len(pairs)) < p)
        judged = {pairs[i]: truth[pairs[i]] for i in take}
        rep = by_key(estimate_metrics(rankings, judged, {pairs[i]: p[i] for i in take}, known_relevant=known,
                                      measures=measures))
        for key, e in rep.items():
            hits.setdefault(key, []).append(e.ci_low <= full[key].estimate <= e.ci_high)
            est.setdefault(key, []).append(e.estimate)
            half.setdefault(key, []).append((e.ci_high - e.ci_low) / 2)
    for key in full:
        bias = np.mean(est[key]) - full[key].estimate
        assert np.mean(hits[key]) >= 0.88, (key, np.mean(hits[key]), bias, np.mean(half[key]))
        assert abs(bias) < 0.25 * np.mean(half[key]), (key, bias, np.mean(half[key]))


@pytest.mark.parametrize("measure,kind,k", [("AP", "AP", None), ("nDCG@2", "nDCG", 2)])
def test_paired_difference_variance_is_unbiased_for_ap_and_ndcg(measure, kind, k):
    # Same check as for C@K: E[var_hat(d)] = Var(d) and E[d] = the true difference, over all 16
    # samples (known original "k" fixed relevant, ranked by b only).
    from annotation.analysis.judging.estimates import _difference_variance, _prepare, _per_query

    rankings = {"a": {"q": ["x", "y", "z"]}, "b": {"q": ["y", "k", "w", "x"]}}
    truth = {("q", "x"): True, ("q", "y"): False, ("q", "z"): True, ("q", "w"): True}
    pi = {("q", "x"): 0.5, ("q", "y"): 0.6, ("q", "z"): 0.3, ("q", "w"): 0.7}
    known = {"q": {"k"}}
    full = by_key(estimate_metrics(rankings, truth, {}, known_relevant=known, measures=(measure,)))
    pairs = sorted(truth)
    diffs, var_hats, probs = [], [], []
    for mask in itertools.product((0, 1), repeat=len(pairs)):
        probs.append(np.prod([pi[p] if t else 1 - pi[p] for t, p in zip(mask, pairs)]))
        judged = {p: truth[p] for t, p in zip(mask, pairs) if t}
        _, prepared = _prepare(rankings, judged, {p: pi[p] for p in judged}, known)
        qd = prepared["q"]
        va, _, da = _per_query(kind, k, qd, "a")
        vb, _, db = _per_query(kind, k, qd, "b")
        diffs.append(va - vb)
        var_hats.append(_difference_variance(qd, da, db))
    probs, diffs = np.array(probs), np.array(diffs)
    mean = (probs * diffs).sum()
    assert mean == pytest.approx(full[("a", measure)].estimate - full[("b", measure)].estimate, abs=1e-12)
    assert (probs * np.array(var_hats)).sum() == pytest.approx((probs * (diffs - mean) ** 2).sum(), abs=1e-12)


def test_ap_interval_uses_t_with_satterthwaite_degrees_of_freedom():
    from annotation.analysis.judging.estimates import _t_quantile

    # per-query variances 1, 1, 0, -1 (clipped to 0): df = (1 + 1)^2 / (1 + 1) = 2 -> t_{0.975}(2) = 4.302653
    assert _t_quantile([1.0, 1.0, 0.0, -1.0], 0.95) == pytest.approx(4.302653, abs=1e-6)
    # 1,000 equal contributions: df 1,000 -> 1.962339, about z
    assert _t_quantile([0.5] * 1000, 0.95) == pytest.approx(1.962339, abs=1e-6)
    assert _t_quantile([0.0, 0.0], 0.95) == pytest.approx(1.959964, abs=1e-6)
    # the hand-worked AP above: one query with variance 0.5 -> df 1, t_{0.975}(1) = 12.706205
    rankings = {"a": {"q": ["x", "y", "z"]}}
    judged = {("q", "x"): True, ("q", "y"): False, ("q", "z"): True}
    inclusion = {("q", "x"): 0.5, ("q", "y"): 1.0, ("q", "z"): 1.0}
    e = by_key(estimate_metrics(rankings, judged, inclusion, measures=("AP",)))[("a", "AP")]
    assert e.ci_high == pytest.approx(4 / 3 + 12.706205 * np.sqrt(0.5), abs=1e-5)


def test_many_caught_relevant_pairs_fall_back_to_the_ratio_estimator_and_say_so():
    # 13 relevant pairs caught at pi = 0.5 in one query: 2^13 worlds is past the limit (12), so
    # AP is N_hat / R_hat: every y_hat = 2, R_hat = 26, N_hat = sum_k 2/k (1 + 2(k - 1)) over k = 1..13
    items = [f"i{j}" for j in range(13)]
    judged = {("q", i): True for i in items}
    inclusion = {("q", i): 0.5 for i in items}
    rep = estimate_metrics({"a": {"q": items}}, judged, inclusion, measures=("AP",))
    n_hat = sum(2.0 / k * (1 + 2 * (k - 1)) for k in range(1, 14))
    assert by_key(rep)[("a", "AP")].estimate == pytest.approx(n_hat / 26)
    assert "1 of 1 queries" in rep.conventions["AP_nDCG_ratio_fallback"]
    # 12 caught: exact expansion, no note
    rep = estimate_metrics({"a": {"q": items[:12]}}, {("q", i): True for i in items[:12]},
                           {("q", i): 0.5 for i in items[:12]}, measures=("AP",))
    assert "AP_nDCG_ratio_fallback" not in rep.conventions


def test_ap_ndcg_se_is_floored_by_the_design_variance_when_the_sample_catches_little():
    # Two queries, each with a known relevant "k" no run ranks (so R >= 1). Run b ranks x_q first in
    # both; run a ranks x1 first in q1, and f2 (judged not relevant, pi = 1) then x2 in q2. Both x
    # are sampled with pi = 0.5 in the same floor stratum (best rank 1, ranked by 2 runs): x1 judged
    # not relevant, x2 relevant (caught). nDCG@2 of run a, g = 1/log2(3), IDCG with 2 relevant 1 + g:
    #   q1: 0, and x1 turning relevant would add delta1 = 1 / (1 + g)
    #   q2: f({x2}) = g / (1 + g) = delta2; f_hat = 2 delta2; v_hat = (2 delta2)^2 - 2 delta2^2 = 2 delta2^2
    # Relevant share of the stratum (Hajek): (1/0.5) / (1/0.5 + 1/0.5) = 0.5, so the floor is
    #   0.5 * (1 - 0.5)/0.5^2 * (delta1^2 + delta2^2) = delta1^2 + delta2^2 > v_hat (the catch fell
    # in the query where a relevant pair moves nDCG less). se = sqrt(floor) / 2, and the estimate
    # stays the unbiased delta2.
    g = 1 / np.log2(3)
    d1, d2 = 1 / (1 + g), g / (1 + g)
    rankings = {"a": {"q1": ["x1"], "q2": ["f2", "x2"]}, "b": {"q1": ["x1"], "q2": ["x2"]}}
    judged = {("q1", "x1"): False, ("q2", "x2"): True, ("q2", "f2"): False}
    inclusion = {("q1", "x1"): 0.5, ("q2", "x2"): 0.5, ("q2", "f2"): 1.0}
    known = {"q1": {"k"}, "q2": {"k"}}
    e = by_key(estimate_metrics(rankings, judged, inclusion, known_relevant=known, measures=("nDCG@2",)))[("a", "nDCG@2")]
    assert e.estimate == pytest.approx(2 * d2 / 2, abs=1e-12)
    assert e.se == pytest.approx(np.sqrt(d1 ** 2 + d2 ** 2) / 2, abs=1e-12)
    assert 2 * d2 ** 2 < d1 ** 2 + d2 ** 2   # the unbiased estimate alone would have been narrower
    # t quantile from the unbiased per-query variances (one query carries it: df 1)
    assert e.ci_high == pytest.approx(e.estimate + 12.706205 * e.se, abs=1e-5)
    # every pair judged with pi = 1: no floor, a point
    census = by_key(estimate_metrics(rankings, judged, {}, known_relevant=known, measures=("nDCG@2",)))
    assert census[("a", "nDCG@2")].se == 0.0
