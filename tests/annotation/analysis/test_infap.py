"""Inferred AP: trec_eval's infAP (via ir_measures) and the stratified xinfAP (NumPy).

Checks: hand computations on tiny examples, a line-by-line port of NIST's sample_eval.pl loop as a
reference for xinfAP, full judgments = exact AP, uniform sampling = trec_eval's infAP, and a
simulation (known ground truth, many seeds) for bias and spread.
"""

from __future__ import annotations

import numpy as np
import pytest

from annotation.analysis.infap import (
    average_precision,
    exact_ap,
    infap_trec_eval,
    infap_trec_eval_runs,
    xinfap,
    xinfap_arrays,
    xinfap_query,
    xinfap_runs,
)
from annotation.analysis.sampled_pools import assign_strata, build_sampled_pool, draw_sample


# --- textbook AP ------------------------------------------------------------------------------

def test_average_precision_hand_example():
    # Relevant at ranks 1, 3, 6 of 4 relevant: (1/1 + 2/3 + 3/6) / 4 = 0.541666...
    ranked = ["a", "x", "b", "y", "z", "c"]
    assert average_precision(ranked, {"a", "b", "c", "never"}) == pytest.approx(13 / 24)
    assert average_precision(ranked, set()) == 0.0
    assert exact_ap({"q": ranked}, {"q": {"a": 1, "b": 1, "c": 2, "x": 0}, "q2": {"a": 1}}) == \
        pytest.approx({"q": (1 + 2 / 3 + 3 / 6) / 3, "q2": 0.0})


# --- (a) trec_eval infAP ----------------------------------------------------------------------

def test_trec_eval_infap_matches_hand_computation():
    # Rank: 1 a (rel) | 2 x (not pooled) | 3 b (pooled, unjudged) | 4 c (non-rel) | 5 d (rel)
    #       | 6 e (unjudged) | 7 f (rel).  Judged relevant in qrels: a, d, f, g  -> divide by 4.
    # P@1 = 1.
    # P@5 = 1/5 + (4/5) * (pooled above 3 / 4) * ((1 + e) / (1 + 1 + 2e)) = 0.2 + 0.3 = 0.5
    #       (above d: a rel, c non-rel, b unjudged; x unpooled counts only in the rank).
    # P@7 = 1/7 + (6/7) * (5 / 6) * ((2 + e) / (2 + 1 + 2e)) = 1/7 + (5/7)(2/3) = 0.619047...
    eps = 1e-5
    p5 = 1 / 5 + (4 / 5) * (3 / 4) * ((1 + eps) / (2 + 2 * eps))
    p7 = 1 / 7 + (6 / 7) * (5 / 6) * ((2 + eps) / (3 + 2 * eps))
    expected = (1 + p5 + p7) / 4
    assert expected == pytest.approx((1 + 0.5 + 1 / 7 + 10 / 21) / 4, abs=1e-5)
    run = {"q1": ["a", "x", "b", "c", "d", "e", "f"]}
    qrels = {"q1": {"a": 1, "b": -1, "c": 0, "d": 1, "e": -1, "f": 1, "g": 1, "h": 0}}
    res = infap_trec_eval(run, qrels)
    assert res.per_query["q1"] == pytest.approx(expected, abs=1e-9)


def test_trec_eval_infap_missing_query_and_no_relevant_score_zero():
    qrels = {"q1": {"a": 1, "b": 0}, "q2": {"a": 1}, "q3": {"a": 0, "b": -1}}
    run = {"q1": ["a", "b"], "q3": ["b", "a"], "not-in-qrels": ["a"]}
    res = infap_trec_eval(run, qrels)
    assert res.per_query == {"q1": 1.0, "q2": 0.0, "q3": 0.0}
    assert res.mean == pytest.approx(1 / 3)
    assert res.queries_without_relevant == ("q3",)
    both = infap_trec_eval_runs({"A": run, "B": {}}, qrels)
    assert both["B"].mean == 0.0 and both["A"].n_queries == 3


def test_trec_eval_infap_full_judgments_is_ap():
    run = {"q": ["a", "x", "b", "y", "z", "c"]}
    qrels = {"q": {"a": 1, "b": 1, "c": 1, "x": 0, "y": 0, "z": 0}}
    assert infap_trec_eval(run, qrels).per_query["q"] == pytest.approx(
        (1 + 2 / 3 + 3 / 6) / 3, abs=1e-4)


def test_duplicate_doc_in_run_is_rejected():
    with pytest.raises(ValueError):
        infap_trec_eval({"q": ["a", "a"]}, {"q": {"a": 1}})
    with pytest.raises(ValueError):
        xinfap({"q": ["a", "a"]}, {"q": {"a": (0, 1)}})


# --- (b) xinfAP: reference port of sample_eval.pl ---------------------------------------------

def sample_eval_reference(ranked, qrels, eps=1e-5):
    """sample_eval.pl's per-topic infAP loop, transliterated (no max-result-size adjustment)."""
    docs_per_category, sampled_docs, sampled_rel = {}, {}, {}
    for doc, (cat, rel) in qrels.items():
        docs_per_category[cat] = docs_per_category.get(cat, 0) + 1
        if rel >= 0:
            sampled_docs[cat] = sampled_docs.get(cat, 0) + 1
        if rel > 0:
            sampled_rel[cat] = sampled_rel.get(cat, 0) + 1
    num_rels = 0.0
    for cat in docs_per_category:
        if sampled_docs.get(cat, 0):
            num_rels += sampled_rel.get(cat, 0) * docs_per_category[cat] / sampled_docs[cat]
    num_depth100, sap = 0, {}
    num_sampled, num_relevant, num_docs = {}, {}, {}
    for rank, doc in enumerate(ranked, start=1):
        cat, rel = qrels.get(doc, (None, None))
        if rel is not None and rel > 0:
            prec_above = 0.0
            for c in docs_per_category:
                if num_depth100 != 0:
                    prob = num_docs.get(c, 0) / num_depth100
                    if prob != 0:
                        prec_above += prob * (num_relevant.get(c, 0) + eps) / (
                            num_sampled.get(c, 0) + 3 * eps)
            prec = 1 / rank + (num_depth100 / rank) * prec_above
            sap[cat] = sap.get(cat, 0.0) + prec
            num_relevant[cat] = num_relevant.get(cat, 0) + 1
        if doc in qrels:
            num_depth100 += 1
            num_docs[cat] = num_docs.get(cat, 0) + 1
            if rel >= 0:
                num_sampled[cat] = num_sampled.get(cat, 0) + 1
    ap = 0.0
    for cat in docs_per_category:
        if sampled_docs.get(cat, 0):
            est = sampled_rel.get(cat, 0) * docs_per_category[cat] / sampled_docs[cat]
            if num_rels != 0:
                ap_cat = sap.get(cat, 0.0) / sampled_rel[cat] if sampled_rel.get(cat, 0) else 0.0
                ap += (est / num_rels) * ap_cat
    return ap, num_rels


def _random_case(rng, n_pool=120, n_strata=3):
    docs = [f"d{i}" for i in range(n_pool)]
    qrels = {}
    for d in docs:
        s = int(rng.integers(n_strata))
        if s == n_strata - 1 and rng.random() < 0.5:
            rel = -1
        else:
            rel = int(rng.random() < 0.3) if rng.random() < 0.6 else -1
        qrels[d] = (s, rel)
    outside = [f"u{i}" for i in range(40)]  # never pooled
    ranked = list(rng.permutation(docs[: int(n_pool * 0.8)] + outside))
    return ranked, qrels


def test_xinfap_equals_sample_eval_reference_on_random_cases():
    rng = np.random.default_rng(123)
    for _ in range(60):
        ranked, qrels = _random_case(rng, n_strata=int(rng.integers(1, 5)))
        ours, r_hat = xinfap_query(ranked, qrels)
        ref, ref_r = sample_eval_reference(ranked, qrels)
        assert ours == pytest.approx(ref, rel=1e-12, abs=1e-14)
        assert r_hat == pytest.approx(ref_r, rel=1e-12)


def test_xinfap_hand_computation_two_strata():
    # Pool: stratum 0 = {a, b} fully judged (a rel, b non-rel); stratum 1 = {c, d, e, f},
    # 2 judged (c rel, d non-rel), e and f unjudged: pi_1 = 1/2.
    # R_hat = 1 + 1 * 4/2 = 3.
    # Run: a, x (unpooled), e, c.
    #   a at k=1: P = 1 (nothing above), weight 1.
    #   c at k=4: above = a (s0 judged rel), x (unpooled), e (s1 unjudged).
    #     s0: D=1, m=1, q=1 -> (1+eps)/(1+3eps);  s1: D=1, m=0, q=0 -> eps/(3eps) = 1/3.
    #     P = (1 + (1+eps)/(1+3eps) + 1/3) / 4 ~= (1 + 1 + 1/3) / 4 = 7/12; weight 2.
    # xinfAP = (1 + 2 * 7/12) / 3 = 13/18 ~= 0.7222.
    qrels = {"a": (0, 1), "b": (0, 0), "c": (1, 1), "d": (1, 0), "e": (1, -1), "f": (1, -1)}
    ap, r_hat = xinfap_query(["a", "x", "e", "c"], qrels)
    assert r_hat == pytest.approx(3.0)
    assert ap == pytest.approx(13 / 18, abs=1e-4)
    eps = 1e-5
    exact = (1 + 2 * (1 + (1 + eps) / (1 + 3 * eps) + 1 / 3) / 4) / 3
    assert ap == pytest.approx(exact, rel=1e-12)


def test_xinfap_full_judgments_equal_exact_ap():
    rng = np.random.default_rng(5)
    runs = {f"r{i}": {f"q{q}": [f"d{d}" for d in rng.permutation(400)[:150]] for q in range(5)}
            for i in range(3)}
    truth = {f"q{q}": {f"d{d}" for d in rng.choice(400, size=25 + 10 * q, replace=False)}
             for q in range(5)}
    pool = build_sampled_pool(runs, [(1, 10, 1.0), (11, 50, 1.0), (51, 150, 1.0)], seed=0)
    assert pool.judgments_saved == 0
    judgments = {q: {d: int(d in truth[q]) for d in docs} for q, docs in pool.to_judge().items()}
    strat = pool.stratified_qrels(judgments)
    flat = pool.trec_qrels(judgments)
    for name, run in runs.items():
        exact = exact_ap(run, flat)  # textbook: divide by R = relevant docs in the pool
        exact_with_eps0 = xinfap(run, strat, epsilon=0.0)
        smoothed = xinfap(run, strat)
        for q in exact:
            assert exact_with_eps0.per_query[q] == pytest.approx(exact[q], rel=1e-12, abs=1e-15)
            # sample_eval's smoothing moves each precision ratio by < eps / judged-above.
            assert smoothed.per_query[q] == pytest.approx(exact[q], abs=1e-5)
        assert exact_with_eps0.mean == pytest.approx(np.mean(list(exact.values())), rel=1e-12)


def test_xinfap_single_stratum_equals_trec_eval_infap():
    # With one stratum both estimators are the same formula except the smoothing constants
    # ((q + e) / (m + 2e) in trec_eval, (q + e) / (m + 3e) in sample_eval), and trec_eval divides
    # by the judged relevant count r where xinfAP weights each by 1/pi and divides by R_hat = r/pi.
    # The constants matter only where nothing above a relevant doc is judged (1/2 vs 1/3), so the
    # top doc of every run is judged here; then the two agree to ~1e-5.
    rng = np.random.default_rng(8)
    runs = {f"r{i}": {f"q{q}": [f"d{d}" for d in rng.permutation(600)[:300]] for q in range(6)}
            for i in range(3)}
    truth = {f"q{q}": {f"d{d}" for d in rng.choice(600, size=60, replace=False)} for q in range(6)}
    pool = build_sampled_pool(runs, [(1, 300, 0.3)], seed=4)
    to_judge = pool.to_judge()
    for run in runs.values():
        for q, ranked in run.items():
            if ranked[0] not in to_judge[q]:
                to_judge[q].append(ranked[0])
    judgments = {q: {d: int(d in truth[q]) for d in docs} for q, docs in to_judge.items()}
    flat = pool.trec_qrels(judgments, missing="unjudged")
    for q, docs in to_judge.items():
        for d in docs:
            flat[q][d] = judgments[q][d]
    strat = {q: {d: (0, rel) for d, rel in per_q.items()} for q, per_q in flat.items()}
    a = infap_trec_eval_runs(runs, flat)
    b = xinfap_runs(runs, strat)
    for name in runs:
        for q in a[name].per_query:
            assert b[name].per_query[q] == pytest.approx(a[name].per_query[q], abs=1e-4)
        assert b[name].mean == pytest.approx(a[name].mean, abs=1e-4)


def test_smoothing_differs_from_trec_eval_when_nothing_above_is_judged():
    # Relevant doc at rank 2 under one unjudged pooled doc: trec_eval estimates the precision of
    # the unjudged doc as e/(2e) = 1/2, sample_eval as e/(3e) = 1/3.
    ranked = ["u", "r"]
    trec = infap_trec_eval({"q": ranked}, {"q": {"u": -1, "r": 1, "n": 0}}).per_query["q"]
    ours, _ = xinfap_query(ranked, {"u": (0, -1), "r": (0, 1), "n": (0, 0)})
    assert trec == pytest.approx((1 + 1 / 2) / 2, abs=1e-6)
    assert ours == pytest.approx((1 + 1 / 3) / 2, abs=1e-6)


def test_xinfap_no_relevant_and_missing_queries_score_zero():
    qrels = {"q1": {"a": (0, 1), "b": (0, 0)}, "q2": {"a": (0, 0), "b": (1, -1)},
             "q3": {"a": (0, 1)}}
    res = xinfap({"q1": ["a", "b"], "q2": ["a", "b"]}, qrels)
    assert res.per_query == {"q1": 1.0, "q2": 0.0, "q3": 0.0}
    assert res.mean == pytest.approx(1 / 3)
    assert res.queries_without_relevant == ("q2",)


def test_xinfap_max_result_size_adjustment():
    # Every stratum-1 doc judged relevant at rate 1/10: R_hat = 2 * 10 = 20 > 10.
    qrels = {"a": (0, 1)} | {f"d{i}": (1, 1 if i < 2 else -1) for i in range(20)}
    ranked = ["a", "d0", "d1"]
    plain, r_hat = xinfap_query(ranked, qrels)
    adjusted, _ = xinfap_query(ranked, qrels, max_result_size=10)
    assert r_hat == pytest.approx(21.0)
    assert adjusted == pytest.approx(plain * 21 / 10)
    same, _ = xinfap_query(ranked, qrels, max_result_size=1000)
    assert same == plain


def test_xinfap_string_strata_like_sample_eval_files():
    qrels = {"a": ("top", 1), "b": ("deep", 1), "c": ("deep", -1)}
    ints = {"a": (0, 1), "b": (1, 1), "c": (1, -1)}
    assert xinfap_query(["b", "a"], qrels) == xinfap_query(["b", "a"], ints)


# --- simulation -------------------------------------------------------------------------------

RATE_SETTINGS = {  # (nominal rates for ranks 1-10, 11-100, 101-1000)
    "low": (1.0, 0.1, 0.02),
    "trecvid": (1.0, 0.2, 0.05),
    "high": (1.0, 0.5, 0.2),
}


def _simulated_world(seed=7, n_queries=10, universe=3000, depth=1000,
                     qualities=(0.5, 1.0, 2.0)):
    """Runs whose scores are ``quality * relevant + N(0, 1)``: weak, medium and strong runs."""
    rng = np.random.default_rng(seed)
    docs = np.array([f"d{j}" for j in range(universe)])
    runs = {f"r{i}": {} for i in range(len(qualities))}
    relevant = {}
    for qi in range(n_queries):
        q = f"q{qi}"
        rel = np.zeros(universe, dtype=bool)
        rel[rng.choice(universe, int(rng.integers(20, 200)), replace=False)] = True
        relevant[q] = set(docs[rel])
        for i, quality in enumerate(qualities):
            score = quality * rel + rng.normal(size=universe)
            runs[f"r{i}"][q] = list(docs[np.argsort(-score)[:depth]])
    return runs, relevant


def test_stratified_infap_is_nearly_unbiased_and_tightens_with_rate():
    """Over 200 seeds, mean-over-queries xinfAP of each run vs its true AP (full pool judged).

    Tolerance: observed |bias| at TRECVID rates is <= 0.011 (strong run; the ratio estimator's
    small-sample bias, E[1/R_hat] > 1/E[R_hat]), with a Monte-Carlo standard error of ~0.0024; 0.02
    leaves ~4 standard errors of margin while still catching a wrong weight or stratum (those give
    biases of 0.05 and more). At the lowest rates the strong run's bias reaches ~0.022, so the bias
    bound is asserted at the TRECVID and high settings. The spread must strictly shrink as rates
    grow for every run.
    """
    runs, relevant = _simulated_world()
    strata_bounds = [(1, 10), (11, 100), (101, 1000)]
    pools = assign_strata(runs, [(lo, hi, 1.0) for lo, hi in strata_bounds])
    n_strata = len(strata_bounds)
    prepared = {}
    true_map = {}
    for q, p in pools.items():
        pool_rel = np.array([d in relevant[q] for d in p.docs])
        index = {d: i for i, d in enumerate(p.docs)}
        prepared[q] = (p.stratum, pool_rel, np.bincount(p.stratum, minlength=n_strata),
                       {r: np.array([index[d] for d in runs[r][q]]) for r in runs})
    for r in runs:
        true_map[r] = np.mean([
            average_precision(runs[r][q], {d for d, m in zip(p.docs, prepared[q][1]) if m})
            for q, p in pools.items()])

    bias, spread = {}, {}
    for name, rates in RATE_SETTINGS.items():
        rates = np.array(rates)
        maps = {r: [] for r in runs}
        for seed in range(200):
            rng = np.random.default_rng(seed)
            per_run = {r: [] for r in runs}
            for q, (stratum, pool_rel, sizes, run_index) in prepared.items():
                sampled, _ = draw_sample(stratum, rates, rng)
                judged = np.bincount(stratum[sampled], minlength=n_strata)
                rel_judged = np.bincount(stratum[sampled & pool_rel], minlength=n_strata)
                judgment = np.where(sampled, pool_rel.astype(np.int64), -1)
                for r, ix in run_index.items():
                    ap, _ = xinfap_arrays(stratum[ix], judgment[ix], sizes, judged, rel_judged)
                    per_run[r].append(ap)
            for r in runs:
                maps[r].append(np.mean(per_run[r]))
        for r in runs:
            arr = np.array(maps[r])
            bias[(name, r)] = arr.mean() - true_map[r]
            spread[(name, r)] = arr.std()

    for r in runs:
        for name in ("trecvid", "high"):
            assert abs(bias[(name, r)]) < 0.02, (name, r, bias[(name, r)])
        assert spread[("low", r)] > spread[("trecvid", r)] > spread[("high", r)], (
            r, [spread[(n, r)] for n in RATE_SETTINGS])
    # Averaged over the three runs the bias is smaller still.
    assert abs(np.mean([bias[("trecvid", r)] for r in runs])) < 0.01
