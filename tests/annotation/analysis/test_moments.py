"""Moment pooling (merge rule) and moment-retrieval metrics, on hand-worked examples."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from annotation.analysis.moments import (
    InvalidMomentError,
    MomentPrediction,
    format_recall_table,
    group_index,
    moment_recall_table,
    pool_moments,
    positive_moments_from_labels,
    prediction_label,
    temporal_iou,
    temporal_iou_matrix,
)


def P(run, start, end, rank, caption="c1", video="v1", score=None):
    return MomentPrediction(run, caption, video, start, end, rank,
                            score if score is not None else 1.0 / rank)


def spans(groups):
    return [(g.caption, g.video, g.start, g.end) for g in groups]


# --- temporal IoU -----------------------------------------------------------------------------

def test_temporal_iou_basic_cases():
    assert temporal_iou((0, 5), (5, 10)) == 0.0  # touching
    assert temporal_iou((0, 4), (6, 10)) == 0.0  # disjoint
    assert temporal_iou((0, 10), (0, 10)) == 1.0
    assert temporal_iou((0, 10), (2, 6)) == pytest.approx(0.4)  # nested: 4 / 10
    assert temporal_iou((0, 10), (5, 15)) == pytest.approx(5 / 15)


def test_temporal_iou_matrix_matches_scalar():
    rng = np.random.default_rng(0)
    a = np.sort(rng.uniform(0, 30, size=(7, 2)), axis=1)
    b = np.sort(rng.uniform(0, 30, size=(5, 2)), axis=1)
    m = temporal_iou_matrix(a[:, 0], a[:, 1], b[:, 0], b[:, 1])
    assert m.shape == (7, 5)
    for i in range(7):
        for j in range(5):
            assert m[i, j] == pytest.approx(temporal_iou(tuple(a[i]), tuple(b[j])))


# --- merge rule -------------------------------------------------------------------------------

def test_touching_spans_do_not_merge():
    groups = pool_moments([P("A", 0, 5, 1), P("B", 5, 10, 1)], iou_threshold=0.7)
    assert spans(groups) == [("c1", "v1", 0, 5), ("c1", "v1", 5, 10)]


def test_nested_spans_merge_only_at_threshold():
    # [1, 9] inside [0, 10]: IoU 0.8 >= 0.7 -> one group, judged span = the outer one.
    g = pool_moments([P("A", 0, 10, 1), P("B", 1, 9, 1)], iou_threshold=0.7)
    assert spans(g) == [("c1", "v1", 0, 10)]
    assert g[0].min_member_iou == pytest.approx(0.8)
    # [4, 6] inside [0, 10]: IoU 0.2 -> two groups even though one contains the other.
    g = pool_moments([P("A", 0, 10, 1), P("B", 4, 6, 1)], iou_threshold=0.7)
    assert spans(g) == [("c1", "v1", 0, 10), ("c1", "v1", 4, 6)]


def test_iou_exactly_at_threshold_merges_despite_float_rounding():
    # 0.42 / 0.6 is 0.7 on paper but not in binary floating point.
    assert (0.62 - 0.2) / (0.8 - 0.2) < 0.7
    g = pool_moments([P("A", 0.2, 0.8, 1), P("B", 0.2, 0.62, 1)], iou_threshold=0.7)
    assert len(g) == 1
    g = pool_moments([P("A", 0, 10, 1), P("B", 0, 7, 1)], iou_threshold=0.7)
    assert len(g) == 1


def test_chain_merges_into_hull():
    # a~b (IoU 0.739), b~c (0.739), but a !~ c (0.538): connected components join all three.
    a, b, c = P("A", 0, 10, 1), P("B", 1.5, 11.5, 1), P("C", 3, 13, 1)
    assert temporal_iou((0, 10), (3, 13)) < 0.7
    groups = pool_moments([a, b, c], iou_threshold=0.7)
    assert len(groups) == 1
    g = groups[0]
    assert (g.start, g.end) == (0, 13)
    assert [(m.run, m.rank, m.start, m.end) for m in g.members] == [
        ("A", 1, 0, 10), ("B", 1, 1.5, 11.5), ("C", 1, 3, 13)]
    assert g.min_member_iou == pytest.approx(10 / 13)
    assert g.runs == ("A", "B", "C")


def test_long_chain_drift_is_reported():
    # Sliding windows: each step IoU 0.818, the hull is far larger than any member.
    preds = [P("A", i, i + 10, i + 1) for i in range(10)]
    (g,) = pool_moments(preds, iou_threshold=0.7)
    assert (g.start, g.end) == (0, 19)
    assert g.min_member_iou == pytest.approx(10 / 19)
    assert g.min_member_iou < 0.7  # a caller can flag this group for review


def test_pair_group_hull_keeps_threshold_for_members():
    rng = np.random.default_rng(3)
    for _ in range(200):
        s1, s2 = rng.uniform(0, 10, 2)
        l1, l2 = rng.uniform(1, 10, 2)
        groups = pool_moments([P("A", s1, s1 + l1, 1), P("B", s2, s2 + l2, 1)])
        for g in groups:
            if len(g.members) == 2:
                assert g.min_member_iou >= 0.7 - 1e-12


def test_no_merge_across_videos_or_captions():
    preds = [P("A", 0, 10, 1, video="v1"), P("B", 0, 10, 1, video="v2"),
             P("C", 0, 10, 1, caption="c2", video="v1")]
    groups = pool_moments(preds)
    assert spans(groups) == [("c1", "v1", 0, 10), ("c1", "v2", 0, 10), ("c2", "v1", 0, 10)]


def test_top_k_per_caption_and_run():
    preds = [P("A", 0, 10, r, video=f"v{r}") for r in range(1, 13)]
    preds += [P("B", 0, 10, 1, caption="c2")]
    groups = pool_moments(preds, top_k=10)
    assert len(groups) == 11  # A's ranks 1..10 for c1 + B's rank 1 for c2
    assert all(m.rank <= 10 for g in groups for m in g.members)


def test_identical_spans_from_two_runs_keep_both_provenances():
    (g,) = pool_moments([P("B", 2, 8, 3, score=0.5), P("A", 2, 8, 1, score=0.9)])
    assert [(m.run, m.rank, m.score) for m in g.members] == [("A", 1, 0.9), ("B", 3, 0.5)]


def _random_predictions(seed: int, n_runs: int = 4, n_captions: int = 3, n_videos: int = 3,
                        depth: int = 12) -> list[MomentPrediction]:
    rng = np.random.default_rng(seed)
    preds = []
    for r in range(n_runs):
        for c in range(n_captions):
            for rank in range(1, depth + 1):
                v = int(rng.integers(n_videos))
                # Spans clustered around a few centres so that merges and chains are frequent.
                centre = float(rng.choice([10.0, 14.0, 40.0])) + float(rng.normal(0, 1.5))
                length = float(rng.uniform(4, 12))
                start = round(max(0.0, centre - length / 2), 1)
                preds.append(MomentPrediction(f"run{r}", f"c{c}", f"v{v}", start,
                                              round(start + length, 1), rank, 1.0 / rank))
    return preds


@pytest.mark.parametrize("threshold", [0.5, 0.7])
def test_pooling_is_order_independent(threshold):
    preds = _random_predictions(11)
    reference = pool_moments(preds, iou_threshold=threshold, top_k=10)
    assert any(len(g.members) >= 3 for g in reference)  # the example does exercise merging
    shuffler = random.Random(5)
    for _ in range(25):
        shuffled = preds[:]
        shuffler.shuffle(shuffled)
        assert pool_moments(shuffled, iou_threshold=threshold, top_k=10) == reference


def test_groups_partition_the_pooled_predictions_and_respect_threshold():
    preds = _random_predictions(2)
    groups = pool_moments(preds, iou_threshold=0.7, top_k=10)
    members = [(g.caption, m.run, m.rank) for g in groups for m in g.members]
    pooled = [(p.caption, p.run, p.rank) for p in preds if p.rank <= 10]
    assert sorted(members) == sorted(pooled)
    # Two predictions with IoU >= threshold are always in the same group.
    where = {(g.caption, m.run, m.rank): g.key for g in groups for m in g.members}
    top = [p for p in preds if p.rank <= 10]
    for i, p in enumerate(top):
        for q in top[i + 1:]:
            if (p.caption, p.video) == (q.caption, q.video) and \
                    temporal_iou((p.start, p.end), (q.start, q.end)) >= 0.7:
                assert where[(p.caption, p.run, p.rank)] == where[(q.caption, q.run, q.rank)]
    # Keys are unique.
    assert len({g.key for g in groups}) == len(groups)


@pytest.mark.parametrize("start,end,word", [
    (5, 5, "zero-length"), (7, 3, "inverted"), (-1, 3, "negative"), (math.nan, 3, "non-finite"),
    (0, math.inf, "non-finite"),
])
def test_invalid_spans_are_rejected_with_the_prediction_named(start, end, word):
    bad = MomentPrediction("runX", "caption-42", "video-7", start, end, 3, 0.1)
    with pytest.raises(InvalidMomentError) as info:
        pool_moments([P("A", 0, 10, 1), bad])
    assert isinstance(info.value, ValueError)
    msg = str(info.value)
    assert word in msg and "runX" in msg and "caption-42" in msg and "video-7" in msg


def test_invalid_span_rejected_even_beyond_top_k():
    with pytest.raises(InvalidMomentError):
        pool_moments([P("A", 3, 3, 50)], top_k=10)


def test_duplicate_rank_and_bad_parameters_rejected():
    with pytest.raises(InvalidMomentError, match="duplicate rank"):
        pool_moments([P("A", 0, 10, 1, video="v1"), P("A", 20, 30, 1, video="v2")])
    with pytest.raises(InvalidMomentError, match="rank 0"):
        pool_moments([P("A", 0, 10, 0, score=1.0)])
    with pytest.raises(ValueError):
        pool_moments([P("A", 0, 10, 1)], iou_threshold=0.0)
    with pytest.raises(ValueError):
        pool_moments([P("A", 0, 10, 1)], top_k=0)


# --- labels -----------------------------------------------------------------------------------

def test_prediction_inherits_group_label():
    a, b, c = P("A", 0, 10, 1), P("B", 1, 10, 2), P("A", 30, 40, 2)
    deep = P("B", 0, 10, 11)
    groups = pool_moments([a, b, c, deep], top_k=10)
    index = group_index(groups)
    first, second = groups
    labels = {first.key: "relevant"}
    assert prediction_label(a, index, labels) == "relevant"
    assert prediction_label(b, index, labels) == "relevant"
    assert prediction_label(c, index, labels) is None  # pooled, not yet labelled
    assert prediction_label(deep, index, labels) is None  # not pooled
    labels[second.key] = "not_relevant"
    assert prediction_label(c, index, labels) == "not_relevant"


def test_positive_moments_from_labels_keeps_originals():
    groups = pool_moments([P("A", 0, 10, 1), P("A", 30, 40, 2), P("A", 0, 5, 1, caption="c2")])
    labels = {groups[0].key: "relevant", groups[1].key: "not_relevant",
              groups[2].key: "relevant"}
    pos = positive_moments_from_labels({"c1": [("v9", 1.0, 2.0)]}, groups, labels)
    assert pos == {"c1": [("v9", 1.0, 2.0), ("v1", 0, 10)], "c2": [("v1", 0, 5)]}


# --- metrics ----------------------------------------------------------------------------------

def test_moment_recall_table_hand_example():
    positives = {
        "c1": [("v1", 0.0, 10.0)],
        "c2": [("v2", 20.0, 30.0), ("v3", 0.0, 4.0)],
        "c3": [("v5", 0.0, 10.0)],
    }
    runs = {
        "A": {
            # IoU with [0,10]: rank1 wrong video; rank2 [0,6] IoU .6; rank3 [1,9] IoU .8.
            "c1": [("v9", 0, 10), ("v1", 0, 6), ("v1", 1, 9)],
            # rank1 [21,29] on v2: IoU .8 -> correct at both thresholds from rank 1.
            "c2": [("v2", 21, 29)],
            # c3 not answered -> 0 everywhere.
        },
        "B": {
            # Right video, wrong place: never a moment hit, but video R@1 = 1.
            "c1": [("v1", 50, 60), ("v1", 70, 80)],
            # Video v2 appears 6 times before v3 (distinct videos: v2, v4, v3).
            "c2": [("v2", 0, 1), ("v2", 2, 3), ("v4", 0, 4), ("v2", 5, 6), ("v2", 7, 8),
                   ("v2", 9, 10), ("v3", 0, 4.5)],
            "c3": [("v5", 0, 5)],  # IoU .5: correct at 0.5, not at 0.7
        },
    }
    t = moment_recall_table(runs, positives, ks=(1, 5, 10), iou_thresholds=(0.5, 0.7))
    assert t.columns == ("R@1 IoU=0.5", "R@5 IoU=0.5", "R@10 IoU=0.5",
                         "R@1 IoU=0.7", "R@5 IoU=0.7", "R@10 IoU=0.7",
                         "Video R@1", "Video R@5", "Video R@10")
    assert t.n_captions == 3
    a = t.rows["A"]
    assert a["R@1 IoU=0.5"] == pytest.approx(1 / 3)  # only c2
    assert a["R@5 IoU=0.5"] == pytest.approx(2 / 3)  # c1 at rank 2 (IoU .6)
    assert a["R@1 IoU=0.7"] == pytest.approx(1 / 3)
    assert a["R@5 IoU=0.7"] == pytest.approx(2 / 3)  # c1 at rank 3 (IoU .8)
    assert a["Video R@1"] == pytest.approx(1 / 3)
    assert a["Video R@5"] == pytest.approx(2 / 3)
    b = t.rows["B"]
    assert b["R@1 IoU=0.5"] == pytest.approx(1 / 3)  # c3
    assert b["R@5 IoU=0.5"] == pytest.approx(1 / 3)
    assert b["R@10 IoU=0.5"] == pytest.approx(2 / 3)  # c2's v3 [0,4.5] at rank 7, IoU .889
    assert b["R@1 IoU=0.7"] == 0.0
    assert b["R@10 IoU=0.7"] == pytest.approx(1 / 3)
    assert b["Video R@1"] == pytest.approx(1.0)  # c1 v1, c2 v2, c3 v5 all first
    text = format_recall_table(t)
    assert text.splitlines()[0].split()[0] == "Run"
    assert "33.33" in text and "100.00" in text


def test_moment_recall_uses_iou_not_group_membership():
    # Chain group hull [0, 19] judged relevant; a member [9, 19] has IoU 10/19 < 0.7 with it.
    preds = [P("A", i, i + 10, i + 1) for i in range(10)]
    groups = pool_moments(preds)
    pos = positive_moments_from_labels({}, groups, {groups[0].key: "relevant"})
    run = {"A": {"c1": [("v1", 9, 19)]}}
    t = moment_recall_table(run, pos, ks=(1,))
    assert t.rows["A"]["R@1 IoU=0.5"] == 1.0
    assert t.rows["A"]["R@1 IoU=0.7"] == 0.0


def test_moment_recall_rejects_bad_spans_and_ks():
    with pytest.raises(InvalidMomentError):
        moment_recall_table({"A": {"c1": [("v1", 3, 2)]}}, {"c1": [("v1", 0, 1)]})
    with pytest.raises(InvalidMomentError):
        moment_recall_table({"A": {}}, {"c1": [("v1", 1, 1)]})
    with pytest.raises(ValueError):
        moment_recall_table({"A": {}}, {"c1": [("v1", 0, 1)]}, ks=(0,))


def _brute_force_groups(preds, threshold):
    """Connected components by repeated flooding: slow, obviously correct."""
    unassigned = list(range(len(preds)))
    groups = []
    while unassigned:
        stack, comp = [unassigned.pop(0)], set()
        while stack:
            i = stack.pop()
            comp.add(i)
            for j in list(unassigned):
                a, b = preds[i], preds[j]
                if (a.caption, a.video) == (b.caption, b.video) and temporal_iou(
                        (a.start, a.end), (b.start, b.end)) >= threshold - 1e-9:
                    unassigned.remove(j)
                    stack.append(j)
        groups.append(frozenset((preds[i].run, preds[i].rank) for i in comp))
    return set(groups)


@pytest.mark.parametrize("n_runs", [2, 12])  # 12 runs x 10 ranks = 120 spans: the NumPy path
def test_grouping_matches_brute_force_connected_components(n_runs):
    rng = np.random.default_rng(n_runs)
    preds = []
    for r in range(n_runs):
        for rank in range(1, 11):
            start = round(float(rng.uniform(0, 40)), 1)
            preds.append(P(f"r{r:02d}", start, round(start + float(rng.uniform(5, 12)), 1), rank))
    groups = pool_moments(preds, iou_threshold=0.6)
    got = {frozenset((m.run, m.rank) for m in g.members) for g in groups}
    assert got == _brute_force_groups(preds, 0.6)
    if n_runs == 12:
        assert max(len(g.members) for g in groups) > 3
