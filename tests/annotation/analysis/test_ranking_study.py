"""Five-caption selection, sampling and the human-to-proxy report (hand-worked numbers)."""

import numpy as np
import pytest

from annotation.analysis.ranking_study import (
    RankingTask,
    five_positions,
    human_proxy_report,
    kendalls_w,
    rank_captions,
    ranking_tasks,
    sample_clips,
    select_five,
)


def test_five_positions():
    assert five_positions(9) == (0, 2, 4, 6, 8)  # (n-1) = 8: 0, 2, 4, 6, 8 exactly
    # n = 10: 0, 2.25 -> 2, 4.5 -> 5 (halves up), 6.75 -> 7, 9
    assert five_positions(10) == (0, 2, 5, 7, 9)
    assert five_positions(5) == (0, 1, 2, 3, 4)
    with pytest.raises(ValueError):
        five_positions(4)


def test_select_five_excludes_own_caption_and_breaks_ties_by_index():
    # 10 captions; caption 3 is the clip's own (score 1).
    scores = [0.2, 0.9, 0.2, 1.0, 0.5, 0.0, 0.2, 0.7, 0.1, 0.0]
    # ranking without 3, ties by index: 1 (0.9), 7 (0.7), 4 (0.5), 0, 2, 6 (0.2), 8 (0.1), 5, 9 (0.0)
    assert rank_captions(scores, [3]).tolist() == [1, 7, 4, 0, 2, 6, 8, 5, 9]
    five = select_five(scores, own_captions=[3], clip=3)
    # n = 9 candidates -> ranks 0, 2, 4, 6, 8 -> captions 1, 4, 2, 8, 9
    assert five.caption_ids == (1, 4, 2, 8, 9)
    assert five.ranks == (0, 2, 4, 6, 8)
    assert five.scores == (0.9, 0.5, 0.2, 0.1, 0.0)
    assert five.n_candidates == 9 and five.clip == 3


def test_sampling_is_seeded_sorted_distinct():
    a = sample_clips(3492, 100, seed=0)
    b = sample_clips(3492, 100, seed=0)
    np.testing.assert_array_equal(a, b)
    assert len(set(a.tolist())) == 100 and np.all(np.diff(a) > 0)
    want = np.sort(np.random.default_rng(0).choice(3492, size=100, replace=False))
    np.testing.assert_array_equal(a, want)
    assert not np.array_equal(a, sample_clips(3492, 100, seed=1))
    with pytest.raises(ValueError):
        sample_clips(5, 6)


def test_ranking_tasks_square_matrix_excludes_diagonal():
    rng = np.random.default_rng(5)
    s = rng.random((12, 12)).astype(np.float32)
    np.fill_diagonal(s, 1.0)
    tasks = ranking_tasks(s, n=4, seed=2)
    assert [t.clip for t in tasks] == sample_clips(12, 4, 2).tolist()
    for t in tasks:
        assert t.clip not in t.caption_ids
        assert t.n_candidates == 11
        assert list(t.scores) == sorted(t.scores, reverse=True)
    # explicit owners for a clips x captions matrix: clip 0 owns captions 0 and 1
    s2 = np.array([[1, 1, 0.5, 0.4, 0.3, 0.2, 0.1], [0, 0, 1, 0.9, 0.8, 0.7, 0.6]])
    t0 = ranking_tasks(s2, clips=[0], caption_owner=[0, 0, 1, -1, -1, -1, -1])[0]
    assert t0.caption_ids == (2, 3, 4, 5, 6)


# One task, three raters, captions A..E (hand-worked example):
#   r1: A B C D E      r2: A B C D E      r3: B A C E D
ORDERINGS = [list("ABCDE"), list("ABCDE"), list("BACED")]
SCORES = {"A": 0.9, "B": 0.5, "C": 0.5, "D": 0.2, "E": 0.3}


def test_report_hand_worked_single_task():
    rep = human_proxy_report([RankingTask(list("ABCDE"), SCORES, ORDERINGS)])
    # 10 pairs; r3 flips A/B and D/E -> 8 consistent: A>C, A>D, A>E, B>C, B>D, B>E, C>D, C>E
    assert rep.n_pairs == 10 and rep.n_consistent == 8
    assert rep.consistent_share == pytest.approx(0.8)
    # proxy: A>C .9>.5, A>D, A>E, B>D .5>.2, B>E .5>.3, C>D, C>E agree (7); B vs C tie .5=.5
    assert (rep.proxy_agree, rep.proxy_ties, rep.proxy_disagree) == (7, 1, 0)
    assert rep.proxy_agreement == pytest.approx(7.5 / 8)  # tie counts half
    assert rep.proxy_agreement_strict == pytest.approx(7 / 8)
    # Kendall's W: rank sums A 1+1+2=4, B 5, C 9, D 13, E 14; mean 3*6/2 = 9;
    # S = 25+16+0+16+25 = 82; W = 12*82 / (9 * (125-5)) = 984/1080
    assert rep.kendalls_w == pytest.approx(984 / 1080)
    # Krippendorff ordinal alpha: units A {1,1,2} B {2,2,1} C {3,3,3} D {4,4,5} E {5,5,4}.
    # Coincidences (pairs / (m_u - 1) = /2): o11=1, o12=o21=2, o22=1, o33=3, o44=1,
    # o45=o54=2, o55=1; every value's marginal n_c = 3, n = 15.
    # Ordinal delta^2(c,k) = (sum_{g=c..k} n_g - (n_c+n_k)/2)^2 = (3|c-k|)^2 = 9 d^2.
    # Observed: sum o_ck delta^2 = (2+2+2+2) * 9 = 72.
    # Expected: sum_{c!=k} n_c n_k delta^2 = 9 * 9 * sum d^2 over ordered pairs of 1..5
    #           = 81 * (8*1 + 6*4 + 4*9 + 2*16) = 81 * 100 = 8100.
    # alpha = 1 - (n - 1) * 72 / 8100 = 1 - 14*72/8100 = 197/225 = 0.87556
    assert rep.krippendorff_alpha_ordinal == pytest.approx(197 / 225)


def test_report_two_tasks_averages_w_and_pools_pairs():
    perfect = RankingTask([1, 2, 3, 4, 5], [0.1, 0.2, 0.3, 0.4, 0.5], [[1, 2, 3, 4, 5]] * 3)
    rep = human_proxy_report([RankingTask(list("ABCDE"), SCORES, ORDERINGS), perfect])
    # second task: W = 1 (identical orderings); all 10 pairs consistent; the proxy ranks 5
    # highest, so it disagrees on every pair (raters put 1 above 2 etc.)
    assert rep.kendalls_w_per_task[1] == pytest.approx(1.0)
    assert rep.kendalls_w == pytest.approx((984 / 1080 + 1.0) / 2)
    assert rep.n_pairs == 20 and rep.n_consistent == 18
    assert rep.proxy_disagree == 10 and rep.proxy_agree == 7 and rep.proxy_ties == 1
    assert rep.proxy_agreement == pytest.approx(7.5 / 18)


def test_perfect_agreement_alpha_is_one_and_validation():
    t = RankingTask(list("abcde"), [5, 4, 3, 2, 1], [list("abcde")] * 3)
    rep = human_proxy_report([t, t])
    assert rep.krippendorff_alpha_ordinal == pytest.approx(1.0)
    assert rep.proxy_agreement == 1.0
    assert kendalls_w(np.array([[1, 2, 3], [3, 2, 1]])) == pytest.approx(0.0)
    with pytest.raises(ValueError):
        human_proxy_report([RankingTask(list("abcde"), [1] * 5, [list("abcdd"), list("abcde")])])
    with pytest.raises(ValueError):
        human_proxy_report([RankingTask(list("abcde"), [1] * 4, [list("abcde")] * 2)])
    with pytest.raises(ValueError):
        human_proxy_report([])
