"""Graded nDCG, relevant-count curve and row-wise Pearson (annotation/analysis/ndcg.py)."""

import itertools
import math

import numpy as np
import pytest

from annotation.analysis.ndcg import (
    expected_random_ndcg_per_query,
    random_ranking_ndcg,
    ndcg,
    ndcg_per_query,
    relevant_count_curve,
    rowwise_pearson,
)

SIM = np.array([[1.0, 0.7, 0.4, 0.0], [0.3, 0.9, 0.6, 0.1], [0.2, 0.5, 0.8, 0.4]])
REL = np.array([[1.0, 0.5, 0.25, 0.0], [0.0, 1.0, 0.4, 0.0], [0.5, 0.3, 1.0, 0.0]])


def test_reference_vector_mean_ndcg():
    # Row 0: ranking 0,1,2,3 is the ideal one -> 1.
    # Row 1: ranking 1,2,0,3; |R| = 2; DCG = 1/log2(2) + 0.4/log2(3) = ideal -> 1.
    # Row 2: ranking 2 (0.8), 1 (0.5), 3 (0.4), 0 (0.2); |R| = 3;
    #   DCG  = 1.0/1 + 0.3/log2(3) + 0.0/2 = 1.1892789
    #   IDCG = 1.0/1 + 0.5/log2(3) + 0.3/2 = 1.4654649 -> 0.8115370
    # mean over the three clips (video -> text) = (1 + 1 + 0.8115370) / 3
    per = ndcg_per_query(SIM, REL)
    row2 = (1.0 + 0.3 / math.log2(3)) / (1.0 + 0.5 / math.log2(3) + 0.3 / 2)
    np.testing.assert_allclose(per, [1.0, 1.0, row2], rtol=0, atol=1e-15)
    assert per.mean() == pytest.approx(0.9371789900735429, abs=1e-15)
    res = ndcg(SIM, REL)
    assert res.video_to_text == pytest.approx(0.9371789900735429, abs=1e-15)
    assert res.gain == "linear"


def test_text_to_video_and_empty_queries():
    # Columns as queries. Column 3 has no relevant clip: undefined (NaN), skipped by default.
    # Column 0: sim 1.0,0.3,0.2 -> clips 0,1,2; rel 1.0,0.0,0.5; |R|=2:
    #   DCG = 1 + 0/log2(3) = 1; IDCG = 1 + 0.5/log2(3) -> 1/(1+0.3154649) = 0.7601875
    # Columns 1 and 2 rank the most relevant clip first and the next one second -> 1 and 1.
    per = ndcg_per_query(SIM.T, REL.T)
    c0 = 1.0 / (1.0 + 0.5 / math.log2(3))
    assert per[0] == pytest.approx(c0) and per[1] == pytest.approx(1.0) and per[2] == pytest.approx(1.0)
    assert math.isnan(per[3])
    skip = ndcg(SIM, REL)
    assert skip.t2v_empty_queries == 1 and skip.v2t_empty_queries == 0
    assert skip.text_to_video == pytest.approx((c0 + 2) / 3)
    assert skip.mean == pytest.approx((0.9371789900735429 + (c0 + 2) / 3) / 2)
    zero = ndcg(SIM, REL, empty="zero")
    assert zero.text_to_video == pytest.approx((c0 + 2) / 4)


def test_exponential_gain():
    # Row 2 with gain 2^S - 1: gains rel 0.5 -> 0.41421356, 0.3 -> 0.23114441, 1.0 -> 1
    # DCG  = 1 + 0.23114441/log2(3) + 0 ; IDCG = 1 + 0.41421356/log2(3) + 0.23114441/2
    g = lambda x: 2.0**x - 1.0  # noqa: E731
    want = (1 + g(0.3) / math.log2(3)) / (1 + g(0.5) / math.log2(3) + g(0.3) / 2)
    per = ndcg_per_query(SIM, REL, gain="exponential")
    assert per[2] == pytest.approx(want)
    assert per[0] == pytest.approx(1.0)
    with pytest.raises(ValueError):
        ndcg_per_query(SIM, REL, gain="cubic")


def test_ties_keep_column_order():
    # Equal similarities: stable order -> column 0 ranks first.
    sim = np.array([[0.5, 0.5, 0.1]])
    # relevant item second among the tie: rank 1 holds rel 0 -> DCG 0 (only |R| = 1 rank counts)
    assert ndcg_per_query(sim, np.array([[0.0, 1.0, 0.0]]))[0] == 0.0
    assert ndcg_per_query(sim, np.array([[1.0, 0.0, 0.0]]))[0] == 1.0


def test_only_first_r_positions_count():
    # rel [0.2, 0, 0]: |R| = 1 so only rank 1 counts; sim puts column 1 (rel 0) there and the
    # relevant column 0 at rank 3 -> DCG = 0 -> nDCG 0
    assert ndcg_per_query(np.array([[0.1, 0.9, 0.5]]), np.array([[0.2, 0.0, 0.0]]))[0] == 0.0
    # perfect ranking of graded items -> 1
    rel = np.array([[0.9, 0.5, 0.1, 0.0]])
    assert ndcg_per_query(rel, rel)[0] == pytest.approx(1.0)


def test_blocks_give_same_result():
    rng = np.random.default_rng(3)
    s = rng.random((37, 11))
    r = np.where(rng.random((37, 11)) < 0.4, rng.random((37, 11)), 0.0)
    np.testing.assert_allclose(ndcg_per_query(s, r, block_rows=5), ndcg_per_query(s, r), equal_nan=True)


def test_relevant_count_curve():
    s = np.array([[1.0, 0.5, 0.2, 0.0], [1.0, 0.0, 0.0, 0.0]])
    # t = 0: all 4 in both rows -> 4; t = 0.2: 3 and 1 -> 2; t = 0.5: 2 and 1 -> 1.5;
    # t = 1: 1 and 1 -> 1; t = 1.1: 0
    got = relevant_count_curve(s, [0.0, 0.2, 0.5, 1.0, 1.1])
    np.testing.assert_allclose(got, [4.0, 2.0, 1.5, 1.0, 0.0])


def test_rowwise_pearson():
    a = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0], [3.0, 1.0, 2.0]])
    b = np.array([[2.0, 4.0, 6.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    # row 0: b = 2a -> r = 1; row 1: a constant -> skipped;
    # row 2: a - mean = (1, -1, 0), b - mean = (-1, 0, 1): sum = -1, norms sqrt(2) sqrt(2) -> -0.5
    res = rowwise_pearson(a, b)
    assert res.rows_used == 2 and res.rows_skipped == 1
    assert res.per_row[0] == pytest.approx(1.0) and res.per_row[2] == pytest.approx(-0.5)
    assert math.isnan(res.per_row[1])
    assert res.mean == pytest.approx(0.25)
    with pytest.raises(ValueError):
        rowwise_pearson(a, b[:2])


# --- random-ranking baseline ---------------------------------------------------------------

RANDOM_REL = np.array([[1.0, 0.5, 0.0, 0.0],
                       [0.0, 0.25, 0.0, 1.0],
                       [0.0, 0.0, 0.0, 0.0]])  # clips x captions; clip 3 relates to nothing


def _mean_over_all_rankings(rel: np.ndarray, gain: str) -> np.ndarray:
    """E[nDCG(q)] by enumerating every ordering of each row's items (scores = reversed position)."""
    n, m = rel.shape
    totals, count = np.zeros(n), 0
    for perm in itertools.permutations(range(m)):
        sim = np.empty((n, m))
        sim[:, list(perm)] = np.arange(m, 0, -1)  # perm[0] ranked first
        totals = totals + ndcg_per_query(sim, rel, gain=gain)
        count += 1
    return totals / count


def test_expected_random_ndcg_by_hand_and_by_enumerating_every_ranking():
    # Row 1 by hand: |R| = 2, IDCG = 1 + 0.5/log2(3); each rank holds an item of mean gain 1.5/4,
    # so E[DCG] = 0.375 * (1 + 1/log2(3)).
    d2 = 1 / math.log2(3)
    expected = expected_random_ndcg_per_query(RANDOM_REL)
    assert expected[0] == pytest.approx(0.375 * (1 + d2) / (1 + 0.5 * d2), abs=1e-12)
    assert math.isnan(expected[2])
    for gain in ("linear", "exponential"):
        for rel in (RANDOM_REL, RANDOM_REL.T):
            np.testing.assert_allclose(expected_random_ndcg_per_query(rel, gain=gain),
                                       _mean_over_all_rankings(rel, gain), rtol=0, atol=1e-12)


def test_random_ranking_baseline_is_seeded_and_centres_on_the_expectation():
    rng = np.random.default_rng(5)
    rel = np.where(rng.random((60, 80)) < 0.1, rng.random((60, 80)), 0.0)
    a, b = random_ranking_ndcg([rel, rel ** 2], draws=40, seed=3)
    again = random_ranking_ndcg([rel, rel ** 2], draws=40, seed=3)[0]
    assert a == again  # the same seed, the same draws
    assert random_ranking_ndcg([rel], draws=40, seed=4)[0].mean != a.mean
    assert a.minimum <= a.mean <= a.maximum and a.std > 0
    # 40 draws: the mean lies within a few standard errors of the exact expectation.
    assert abs(a.mean - a.expected) < 4 * a.std / math.sqrt(40)
    assert a.expected == pytest.approx((np.nanmean(expected_random_ndcg_per_query(rel))
                                        + np.nanmean(expected_random_ndcg_per_query(rel.T))) / 2)
    assert b.expected != a.expected
    with pytest.raises(ValueError, match="draws must be at least 1"):
        random_ranking_ndcg([rel], draws=0)
