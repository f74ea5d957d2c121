"""Pool bias by leave one run out (annotation/analysis/pool_bias.py) against hand-worked figures and
against pytrec_eval / ir_measures on the qrels minus each run's own pairs, computed here from the
provenance by plain set arithmetic (never by the platform's code)."""
from __future__ import annotations

import math
import random

import ir_measures
import pytest
import pytrec_eval
from ir_measures import Judged

import numpy as np

from annotation.analysis.pool_bias import pool_bias_block, pool_bias_rows, pool_bias_summary, qrels_without

MEASURES = ["C@1", "C@5", "C@10", "AP", "nDCG@10"]
CUTOFFS = [1, 5, 10]
TREC = {"C@1": "success_1", "C@5": "success_5", "C@10": "success_10", "AP": "map", "nDCG@10": "ndcg_cut_10"}


def test_two_runs_one_unique_relevant_pair_by_hand():
    """q1: original positive o; x relevant and proposed by A alone; y not relevant, proposed by both.
    A ranks x, o, y; B ranks y, z, o (z never judged)."""
    qrels = {"q1": {"o": 1, "x": 1, "y": 0}}
    provenance = {("q1", "o"): {"A"}, ("q1", "x"): {"A"}, ("q1", "y"): {"A", "B"}}
    runs = {"A": {"q1": ["x", "o", "y"]}, "B": {"q1": ["y", "z", "o"]}}
    rows = pool_bias_rows(runs, qrels, provenance, measures=MEASURES, cutoffs=CUTOFFS, keep={("q1", "o")})
    a, b = rows["A"], rows["B"]
    # A loses x (its own, relevant); o stays (the original positive), y stays (B proposed it too).
    assert (a["pairs_removed"], a["relevant_removed"], a["queries"]) == (1, 1, 1)
    # With: x at 1 and o at 2 are both relevant: C@1 1, AP (1/1 + 2/2) / 2 = 1, nDCG 1.
    assert a["with"] == pytest.approx({"C@1": 1, "C@5": 1, "C@10": 1, "AP": 1, "nDCG@10": 1})
    # Without x (unjudged = not relevant): o at rank 2 of one positive: C@1 0, AP 1/2, nDCG 1/log2(3).
    assert a["without"] == pytest.approx({"C@1": 0, "C@5": 1, "C@10": 1, "AP": 0.5, "nDCG@10": 1 / math.log2(3)})
    assert a["difference"] == pytest.approx({"C@1": 1, "C@5": 0, "C@10": 0, "AP": 0.5,
                                             "nDCG@10": 1 - 1 / math.log2(3)})
    # Judged@K: with, x o y are all judged; without, x is not: 0/1, 2/3, 2/3.
    assert a["judged_with"] == pytest.approx({1: 1, 5: 1, 10: 1})
    assert a["judged_without"] == pytest.approx({1: 0, 5: 2 / 3, 10: 2 / 3})
    # B contributed nothing of its own: the same scores, difference 0. With: o at 3, x missed:
    # AP (1/3) / 2 positives.
    assert (b["pairs_removed"], b["relevant_removed"]) == (0, 0)
    assert b["with"] == b["without"] and all(v == 0 for v in b["difference"].values())
    assert b["with"]["AP"] == pytest.approx(1 / 6) and b["with"]["C@1"] == 0 and b["with"]["C@5"] == 1
    assert b["judged_without"] == pytest.approx({1: 1, 5: 2 / 3, 10: 2 / 3})


def test_one_run_loses_every_pair_and_scores_zero_on_the_same_queries():
    """One run: every judged pair is its own, the leave-one-out qrels are empty, and both sides are
    still averaged over the same two queries (0 without)."""
    qrels = {"q1": {"a": 1, "b": 0}, "q2": {"c": 1}}
    provenance = {("q1", "a"): {"R"}, ("q1", "b"): {"R"}, ("q2", "c"): {"R"}}
    rows = pool_bias_rows({"R": {"q1": ["b", "a"], "q2": ["c"]}}, qrels, provenance, measures=MEASURES,
                          cutoffs=CUTOFFS)
    r = rows["R"]
    assert (r["pairs_removed"], r["relevant_removed"], r["queries"]) == (3, 2, 2)
    assert r["with"]["C@1"] == pytest.approx(0.5) and r["with"]["AP"] == pytest.approx((0.5 + 1) / 2)
    assert all(v == 0 for v in r["without"].values()) and all(v == 0 for v in r["judged_without"].values())
    assert r["difference"] == r["with"]


def test_no_labels_and_no_query_answered():
    rows = pool_bias_rows({"R": {"q9": ["a"]}}, {}, {}, measures=MEASURES, cutoffs=CUTOFFS)
    assert rows["R"]["queries"] == 0 and rows["R"]["pairs_removed"] == 0
    assert all(v is None for v in rows["R"]["with"].values())
    assert all(v is None for v in rows["R"]["difference"].values())


def test_qrels_without_drops_a_query_left_empty():
    assert qrels_without({"q1": {"a": 1}, "q2": {"b": 0, "c": 1}}, [("q1", "a"), ("q2", "b")]) == {"q2": {"c": 1}}


def _trec_means(qrels, ranked, queries):
    te_run = {q: {c: float(len(ranked[q]) - i) for i, c in enumerate(ranked[q])} for q in queries}
    per = pytrec_eval.RelevanceEvaluator({q: qrels.get(q, {}) for q in queries},
                                         {"success.1,5,10", "map", "ndcg_cut.10"}).evaluate(te_run)
    return {m: sum(per.get(q, {}).get(t, 0.0) for q in queries) / len(queries) for m, t in TREC.items()}


def _judged(qrels, ranked, queries, k):
    """ir_measures' Judged@k over ``queries`` (a query with no judgment left: 0, as nothing is judged)."""
    te_run = {q: {c: float(len(ranked[q]) - i) for i, c in enumerate(ranked[q])} for q in queries}
    per = {m.query_id: m.value for m in ir_measures.iter_calc([Judged @ k], {q: qrels[q] for q in queries
                                                                             if q in qrels}, te_run)}
    return sum(per.get(q, 0.0) for q in queries) / len(queries)


@pytest.mark.parametrize("seed", range(12))
def test_equals_trec_eval_and_ir_measures_on_the_qrels_minus_each_runs_own_pairs(seed):
    rng = random.Random(seed)
    clips = [f"c{i}" for i in range(15)]
    queries = [f"q{i}" for i in range(rng.randint(1, 6))]
    n_runs = rng.randint(1, 4)
    runs = {f"r{j}": {q: rng.sample(clips, rng.randint(1, 12)) for q in queries if rng.random() < 0.85}
            for j in range(n_runs)}
    depth = rng.randint(1, 5)
    provenance: dict = {}
    for name, run in runs.items():
        for q, ranked in run.items():
            for c in ranked[:depth]:
                provenance.setdefault((q, c), set()).add(name)
    originals = {(q, rng.choice(clips)) for q in queries}
    qrels: dict = {}
    for (q, c) in provenance:
        if rng.random() < 0.8:  # some pooled pairs stay unjudged
            qrels.setdefault(q, {})[c] = rng.randint(0, 1)
    for q, c in originals:
        qrels.setdefault(q, {})[c] = 1
    rows = pool_bias_rows(runs, qrels, provenance, measures=MEASURES, cutoffs=CUTOFFS, keep=originals)
    for name, run in runs.items():
        own = {(q, c) for q, judged in qrels.items() for c in judged
               if provenance.get((q, c)) == {name} and (q, c) not in originals}
        loo = {q: {c: g for c, g in judged.items() if (q, c) not in own} for q, judged in qrels.items()}
        scored = sorted(q for q in run if q in qrels)
        row = rows[name]
        assert row["pairs_removed"] == len(own) and row["queries"] == len(scored)
        if not scored:
            continue
        with_all, without = _trec_means(qrels, run, scored), _trec_means(loo, run, scored)
        for m in MEASURES:
            assert row["with"][m] == pytest.approx(with_all[m], abs=1e-12), (name, m)
            assert row["without"][m] == pytest.approx(without[m], abs=1e-12), (name, m)
            assert row["difference"][m] == pytest.approx(with_all[m] - without[m], abs=1e-12)
        for k in CUTOFFS:
            assert row["judged_without"][k] == pytest.approx(_judged(loo, run, scored, k), abs=1e-12), (name, k)
            assert row["judged_with"][k] == pytest.approx(_judged(qrels, run, scored, k), abs=1e-12), (name, k)


def _trec_per_query(qrels, ranked, queries):
    te_run = {q: {c: float(len(ranked[q]) - i) for i, c in enumerate(ranked[q])} for q in queries}
    per = pytrec_eval.RelevanceEvaluator({q: qrels.get(q, {}) for q in queries},
                                         {"success.1,5,10", "map", "ndcg_cut.10"}).evaluate(te_run)
    return {m: np.array([per.get(q, {}).get(t, 0.0) for q in queries]) for m, t in TREC.items()}


@pytest.mark.parametrize("seed", range(8))
def test_the_with_side_given_by_the_leaderboard_is_taken_as_it_is(seed):
    """A release hands pool_bias_block the leaderboard's per-query values as the With side
    (``scored``): only the Without side is computed, on the queries that lost a pair, and the table
    equals pytrec_eval's on the qrels without each run's own pairs."""
    rng = random.Random(100 + seed)
    clips = [f"c{i}" for i in range(12)]
    queries = [f"q{i}" for i in range(rng.randint(1, 7))]
    runs = {f"r{j}": {q: rng.sample(clips, rng.randint(1, 10)) for q in queries if rng.random() < 0.9}
            for j in range(rng.randint(1, 3))}
    provenance: dict = {}
    for name, run in runs.items():
        for q, ranked in run.items():
            for c in ranked[:rng.randint(1, 4)]:
                provenance.setdefault((q, c), set()).add(name)
    qrels: dict = {}
    for q, c in provenance:
        if rng.random() < 0.7:
            qrels.setdefault(q, {})[c] = rng.randint(0, 1)
    scored = {}
    for name, run in runs.items():
        order = sorted(q for q in run if q in qrels)
        per = _trec_per_query(qrels, run, order)
        judged = {k: np.array([sum(c in qrels[q] for c in run[q][:k]) / len(run[q][:k]) for q in order])
                  for k in CUTOFFS}
        scored[name] = (per, judged)
    before = {name: [v.copy() for v in per.values()] for name, (per, _) in scored.items()}
    block = pool_bias_block(runs, qrels, provenance, measures=MEASURES, cutoffs=CUTOFFS, scored=scored)
    rows = pool_bias_summary([block], measures=MEASURES, cutoffs=CUTOFFS)
    for name, run in runs.items():
        assert block[name]["with"] is scored[name][0] and block[name]["judged_with"] is scored[name][1]
        own = {(q, c) for q, judged in qrels.items() for c in judged if provenance.get((q, c)) == {name}}
        loo = {q: {c: g for c, g in judged.items() if (q, c) not in own} for q, judged in qrels.items()}
        order = sorted(q for q in run if q in qrels)
        if not order:
            continue
        without = _trec_means(loo, run, order)
        for m in MEASURES:
            assert rows[name]["without"][m] == pytest.approx(without[m], abs=1e-12), (name, m)
        for k in CUTOFFS:
            assert rows[name]["judged_without"][k] == pytest.approx(_judged(loo, run, order, k), abs=1e-12)
        # The With side's arrays are not written to when the Without side differs.
        assert all(np.array_equal(a, b) for a, b in zip(before[name], scored[name][0].values()))
