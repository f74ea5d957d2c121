"""Stratified sampled pools: strata by best rank, sample sizes, seeding, savings, qrels."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.analysis.sampled_pools import (
    assign_strata,
    build_sampled_pool,
    draw_sample,
    sample_size,
    sample_sizes,
    validate_strata,
)

TRECVID = [(1, 10, 1.0), (11, 100, 0.2), (101, 1000, 0.05)]


def synthetic_runs(n_runs=3, n_queries=4, depth=1000, universe=2500, seed=0):
    rng = np.random.default_rng(seed)
    runs = {}
    for r in range(n_runs):
        runs[f"run{r}"] = {
            f"q{q}": [f"d{d}" for d in rng.permutation(universe)[:depth]] for q in range(n_queries)
        }
    return runs


def test_validate_strata():
    assert validate_strata(TRECVID) == ((1, 10, 1.0), (11, 100, 0.2), (101, 1000, 0.05))
    for bad in ([(2, 10, 1.0)], [(1, 10, 1.0), (12, 20, 0.5)], [(1, 10, 1.0), (10, 20, 0.5)],
                [(1, 10, 1.5)], [(1, 10, -0.1)], [(5, 4, 1.0)], []):
        with pytest.raises(ValueError):
            validate_strata(bad)


def test_stratum_is_best_rank_over_runs_and_provenance_is_kept():
    strata = [(1, 2, 1.0), (3, 4, 0.5)]
    runs = {
        "A": {"q": ["a", "b", "c", "d", "e"]},  # e at rank 5 is beyond the depth (4)
        "B": {"q": ["d", "x", "a", "y"]},
    }
    (pool,) = assign_strata(runs, strata).values()
    assert pool.docs == ("a", "d", "b", "x", "c", "y")
    assert pool.best_rank.tolist() == [1, 1, 2, 2, 3, 4]
    assert pool.stratum.tolist() == [0, 0, 0, 0, 1, 1]  # d: rank 4 in A, rank 1 in B -> top
    assert dict(zip(pool.docs, pool.provenance))["d"] == (("A", 4), ("B", 1))
    assert dict(zip(pool.docs, pool.provenance))["a"] == (("A", 1), ("B", 3))


def test_duplicate_doc_in_a_ranked_list_is_rejected():
    with pytest.raises(ValueError, match="twice"):
        assign_strata({"A": {"q": ["a", "b", "a"]}}, [(1, 5, 1.0)])


def test_sample_size_rules():
    assert sample_size(100, 0.2) == 20  # 0.2 * 100 == 20.000000000000004 in floating point
    assert sample_size(7, 0.05) == 1  # ceil: at least one judged doc when the rate is positive
    assert sample_size(7, 0.05, "round") == 0
    assert sample_size(30, 0.05, "round") == 2  # 1.5 rounds half up
    assert sample_size(29, 0.05, "round") == 1  # 1.45
    assert sample_size(50, 0.0) == 0
    assert sample_size(50, 1.0) == 50
    assert sample_size(0, 0.5) == 0
    sizes, rates = np.array([10, 90, 900]), np.array([1.0, 0.2, 0.05])
    assert sample_sizes(sizes, rates).tolist() == [10, 18, 45]
    with pytest.raises(ValueError):
        sample_sizes(np.array([10]), np.array([0.5]), "floor")  # type: ignore[arg-type]


def test_sampled_pool_counts_and_inclusion_probabilities():
    runs = synthetic_runs()
    pool = build_sampled_pool(runs, TRECVID, seed=1)
    assert set(pool.queries) == {"q0", "q1", "q2", "q3"}
    for q, p in pool.queries.items():
        sizes = np.bincount(p.stratum, minlength=3)
        judged = np.bincount(p.stratum[pool.sampled[q]], minlength=3)
        assert judged.tolist() == sample_sizes(sizes, np.array([1.0, 0.2, 0.05])).tolist()
        for s in range(3):
            members = p.stratum == s
            assert np.allclose(pool.inclusion[q][members], judged[s] / sizes[s])
        assert pool.sampled[q][p.stratum == 0].all()
    assert pool.full_pool_size == sum(len(p.docs) for p in pool.queries.values())
    assert pool.judged_count + pool.judgments_saved == pool.full_pool_size
    assert 0.85 < pool.saved_fraction < 0.95
    summary = pool.stratum_summary()
    assert [row["judged"] for row in summary] == [
        sum(int((pool.sampled[q] & (p.stratum == s)).sum()) for q, p in pool.queries.items())
        for s in range(3)]
    docs = list(pool.documents())
    assert len(docs) == pool.full_pool_size
    assert sum(d.sampled for d in docs) == pool.judged_count
    top = next(d for d in docs if d.stratum == 0)
    assert top.inclusion_probability == 1.0 and top.sampled and top.best_rank <= 10


def test_judgments_saved_on_a_hand_example():
    # One run, one query, 1000 docs: 10 + ceil(.2*90)=18 + ceil(.05*900)=45 judged of 1000.
    runs = {"A": {"q": [f"d{i}" for i in range(1000)]}}
    pool = build_sampled_pool(runs, TRECVID, seed=0)
    assert (pool.full_pool_size, pool.judged_count, pool.judgments_saved) == (1000, 73, 927)


def test_sample_is_reproducible_and_independent_of_input_order():
    runs = synthetic_runs(seed=3)
    a = build_sampled_pool(runs, TRECVID, seed=42)
    b = build_sampled_pool(runs, TRECVID, seed=42)
    reordered = {r: {q: runs[r][q] for q in reversed(list(runs[r]))} for r in reversed(list(runs))}
    c = build_sampled_pool(reordered, TRECVID, seed=42)
    d = build_sampled_pool(runs, TRECVID, seed=43)
    for q in runs["run0"]:
        assert a.to_judge()[q] == b.to_judge()[q] == c.to_judge()[q]
    assert any(a.to_judge()[q] != d.to_judge()[q] for q in runs["run0"])
    # Dropping a query leaves the samples of the other queries unchanged.
    fewer = {r: {q: v for q, v in per_q.items() if q != "q0"} for r, per_q in runs.items()}
    e = build_sampled_pool(fewer, TRECVID, seed=42)
    for q in ("q1", "q2", "q3"):
        assert e.to_judge()[q] == a.to_judge()[q]


def test_every_doc_of_a_stratum_is_equally_likely():
    stratum = np.repeat([0, 1], [20, 50])
    rates = np.array([0.5, 0.1])
    rng = np.random.default_rng(9)
    counts = np.zeros(70)
    draws = 4000
    for _ in range(draws):
        sampled, incl = draw_sample(stratum, rates, rng)
        counts += sampled
    assert np.allclose(incl[:20], 0.5) and np.allclose(incl[20:], 0.1)
    freq = counts / draws
    # Binomial standard error at p = 0.1 over 4000 draws is 0.0047: allow 4 of them.
    assert np.abs(freq[:20] - 0.5).max() < 0.04
    assert np.abs(freq[20:] - 0.1).max() < 0.02


def test_qrels_for_both_estimators():
    runs = {"A": {"q": ["a", "b", "c", "d"]}, "B": {"q": ["e", "c"]}}
    pool = build_sampled_pool(runs, [(1, 1, 1.0), (2, 4, 0.5)], seed=7)
    to_judge = pool.to_judge()["q"]
    assert {"a", "e"} <= set(to_judge) and len(to_judge) == 2 + 2  # stratum 1 holds b, c, d
    judgments = {"q": {d: int(d in {"a", "c"}) for d in to_judge}}
    flat = pool.trec_qrels(judgments)
    assert set(flat["q"]) == {"a", "b", "c", "d", "e"}
    for d, rel in flat["q"].items():
        assert rel == (judgments["q"][d] if d in to_judge else -1)
    strat = pool.stratified_qrels(judgments)
    assert strat["q"]["a"] == (0, 1) and strat["q"]["e"] == (0, 0)
    assert {strat["q"][d][0] for d in "bcd"} == {1}
    with pytest.raises(KeyError):
        pool.trec_qrels({"q": {}})
    partial = pool.trec_qrels({"q": {"a": 1}}, missing="unjudged")
    assert partial["q"]["a"] == 1 and partial["q"]["e"] == -1


def test_zero_rate_stratum_is_pooled_but_never_judged():
    runs = {"A": {"q": [f"d{i}" for i in range(30)]}}
    pool = build_sampled_pool(runs, [(1, 10, 1.0), (11, 30, 0.0)], seed=0)
    assert pool.judged_count == 10 and pool.full_pool_size == 30
    assert (pool.inclusion["q"][10:] == 0).all()
