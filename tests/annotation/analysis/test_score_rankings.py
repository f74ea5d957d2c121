"""Top-k rankings of a score matrix under trec_eval's rule (score descending, ties by document id
descending), and nDCG against several relevance matrices with one sort of the similarity."""
from __future__ import annotations

import math

import numpy as np
import pytest

from annotation.analysis.ndcg import descending_order, ndcg, ndcg_many, ndcg_per_query
from annotation.analysis.sample_eval import trec_order
from annotation.analysis.score_rankings import tie_order, top_k

L3 = math.log2(3)


def test_top_k_by_hand():
    ids = ["v1", "v2", "v3", "v4"]
    scores = np.array([[0.2, 0.9, 0.5, 0.9],    # v2 and v4 tie at the top: v4 (the higher id) first
                       [0.1, 0.1, 0.1, 0.7],    # v1, v2, v3 tie behind v4: v3, v2, v1
                       [-1.0, 3.0, 0.0, 2.0]])  # no tie: v2, v4, v3, v1
    order = tie_order(ids)
    assert order.tolist() == [3, 2, 1, 0]
    assert top_k(scores, 4, order).tolist() == [[3, 1, 2, 0], [3, 2, 1, 0], [1, 3, 2, 0]]
    # k = 2 cuts inside q2's three-way tie: of v1, v2, v3 only v3 makes it.
    assert top_k(scores, 2, order).tolist() == [[3, 1], [3, 2], [1, 3]]
    assert top_k(scores, 9, order).shape == (3, 4)  # k past the clips: every clip
    with pytest.raises(ValueError):
        top_k(scores, 0, order)
    with pytest.raises(ValueError):
        top_k(scores, 2, np.array([0, 1, 2, 2]))


def test_ids_compare_as_text_not_numbers():
    # "v10" < "v9" as text, so in a tie v9 ranks first, as trec_eval's strcmp puts it.
    ids = ["v10", "v9"]
    assert top_k(np.array([[1.0, 1.0]]), 2, tie_order(ids)).tolist() == [[1, 0]]


def test_top_k_matches_trec_order_on_random_ties():
    rng = np.random.default_rng(7)
    for _ in range(300):
        n, m = int(rng.integers(1, 8)), int(rng.integers(1, 12))
        scores = rng.integers(0, 4, size=(n, m)).astype(np.float32)
        ids = [f"d{int(rng.integers(0, 50))}_{j}" for j in range(m)]
        k = int(rng.integers(1, m + 2))
        got = top_k(scores, k, tie_order(ids), block_rows=int(rng.integers(1, 4)))
        for i in range(n):
            assert [ids[j] for j in got[i]] == trec_order(ids, scores[i].tolist())[:k]


def test_descending_order_is_the_stable_argsort():
    rng = np.random.default_rng(11)
    for _ in range(200):
        sim = rng.integers(0, 3, size=(int(rng.integers(1, 8)), int(rng.integers(1, 9)))).astype(np.float64)
        sim[rng.random(sim.shape) < 0.3] = -np.inf
        if rng.random() < 0.3:
            sim = rng.random(sim.shape)  # no ties: the fast path alone
        np.testing.assert_array_equal(descending_order(sim), np.argsort(-sim, axis=1, kind="stable"))


def test_ndcg_many_equals_one_matrix_at_a_time():
    # One query, items a, b, c with similarity 0.9, 0.9, 0.1 (a tie kept in column order: a, b, c).
    #   relevance [0, 1, 0.5]: |R| = 2, DCG = 0 + 1/log2 3, IDCG = 1 + 0.5/log2 3
    #   relevance [1, 0, 0]:   |R| = 1, DCG = 1 = IDCG -> 1
    sim = np.array([[0.9, 0.9, 0.1]])
    rels = [np.array([[0.0, 1.0, 0.5]]), np.array([[1.0, 0.0, 0.0]])]
    a, b = (float(x[0]) for x in [ndcg_per_query(sim, r) for r in rels])
    assert a == pytest.approx((1 / L3) / (1 + 0.5 / L3)) and b == 1.0
    rng = np.random.default_rng(5)
    sim = rng.integers(0, 4, size=(23, 17)).astype(np.float32)
    rels = [np.where(rng.random(sim.shape) < 0.4, rng.random(sim.shape), 0.0) for _ in range(3)]
    together = ndcg_many(sim, rels, gain="exponential", empty="zero")
    for rel, got in zip(rels, together):
        alone = ndcg(sim, rel, gain="exponential", empty="zero")
        assert (got.video_to_text, got.text_to_video, got.mean) == (alone.video_to_text, alone.text_to_video, alone.mean)
    with pytest.raises(ValueError):
        ndcg_many(sim, rels, empty="drop")
