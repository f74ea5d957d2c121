"""Moment-retrieval evaluation with the official tools' rules, on hand-worked fixtures
(tests/fixtures/moments/) and against a straight-loop reference of Moment-DETR's algorithm."""
from __future__ import annotations

import math

import numpy as np
import pytest

from annotation.analysis.moment_eval import (
    QVH_IOU_THRESHOLDS,
    TvrTruth,
    didemo_iou,
    didemo_metrics,
    qvhighlights_metrics,
    tvr_metrics,
)
from annotation.formats.moment_files import (
    load_didemo_ground_truth,
    load_qvhighlights_ground_truth,
    load_qvhighlights_predictions,
    load_tvr_ground_truth,
    load_tvr_predictions,
)
from tests.conftest import FIXTURES

MOMENTS = FIXTURES / "moments"


def _qvh_fixture():
    gt = {q: r.windows for q, r in load_qvhighlights_ground_truth(MOMENTS / "qvh_gt.jsonl").items()}
    pred = {q: r.windows for q, r in load_qvhighlights_predictions(MOMENTS / "qvh_pred.jsonl").items()}
    return gt, pred


# --- QVHighlights -----------------------------------------------------------------------------
#
# Query 1: windows A=[0,8] (short), B=[20,40] (middle), C=[60,110] (long); predictions in score
# order p1=[20,40] p2=[20,40] (the duplicate) p3=[0,10] p4=[60,100] p5=[120,130].
#   IoU: p1,p2 with B = 1; p3 with A = 8/10 = 0.8; p4 with C = 40/50 = 0.8; p5 = 0.
#   t <= 0.8 (7 thresholds): TP FP TP TP FP; precision 1, 1/2, 2/3, 3/4, 3/5; recall steps of 1/3
#     at ranks 1, 3, 4; interpolated precision there 1, 3/4, 3/4 -> AP = (1 + 3/4 + 3/4)/3 = 5/6.
#     (0.8 itself counts: IoU equal to the threshold is a hit.)
#   t >= 0.85 (3 thresholds): only p1 -> AP = 1/3.
#   mean over the 10 thresholds: (7 * 5/6 + 3 * 1/3) / 10 = 41/60.   R1: p1 has IoU 1 -> hit.
# Query 2: window [10,20] (length 10: short), no prediction -> AP 0, R1 0.
# Query 3: window [30,60] (length 30: middle); p1=[40,60] IoU 20/30, p2=[30,60] IoU 1.
#   t <= 0.65 (4 thresholds): AP 1; t >= 0.7 (6): FP then TP -> AP 1/2; mean = 0.7.
#   R1: 0.667 -> hit at 0.5, miss at 0.7.
# full:  mAP = (41/60 + 0 + 0.7)/3 = 0.46111 -> 46.11;  mAP@0.5 = (5/6 + 0 + 1)/3 -> 61.11;
#        mAP@0.75 = (5/6 + 0 + 1/2)/3 -> 44.44;  R1@0.5 = 2/3 -> 66.67;  R1@0.7 = 1/3 -> 33.33.
# short (0,10]:  q1 keeps A only: p3 is the first hit at rank 3 -> AP 1/3 for t <= 0.8, else 0
#        -> 7/30; q2 0 -> (7/30)/2 = 0.11667 -> 11.67.
# middle (10,30]: q1 keeps B: p1 hits at every t -> 1; q3 0.7 -> 0.85 -> 85.0.
# long (30,150]: q1 keeps C: p4 at rank 4 -> 1/4 for t <= 0.8 -> 7/10 * 1/4 = 0.175 -> 17.5.

def test_qvhighlights_fixture_worked_by_hand():
    gt, pred = _qvh_fixture()
    result = qvhighlights_metrics(gt, pred)
    assert result.measures == {
        "MR-full-R1@0.5": 66.67, "MR-full-R1@0.7": 33.33,
        "MR-full-mAP": 46.11, "MR-full-mAP@0.5": 61.11, "MR-full-mAP@0.75": 44.44,
        "MR-long-mAP": 17.5, "MR-middle-mAP": 85.0, "MR-short-mAP": 11.67,
    }
    assert list(result.measures) == sorted(result.measures)  # the official brief block's order
    assert result.counts == {"queries": 3, "unanswered": 1, "unknown_queries": 0, "queries_short": 2,
                             "queries_middle": 2, "queries_long": 1, "queries_full": 3}
    q1 = result.per_query["1"]
    assert q1["MR-full-mAP"] == pytest.approx(100 * 41 / 60)
    assert q1["MR-full-mAP@0.5"] == pytest.approx(100 * 5 / 6)
    assert q1["MR-short-mAP"] == pytest.approx(100 * 7 / 30)
    assert q1["MR-full-R1@0.7"] == 100.0
    assert result.per_query["2"] == {"MR-short-mAP": 0.0, "MR-full-mAP": 0.0, "MR-full-mAP@0.5": 0.0,
                                     "MR-full-mAP@0.75": 0.0, "MR-full-R1@0.5": 0.0, "MR-full-R1@0.7": 0.0}
    assert "MR-short-mAP" not in result.per_query["3"] and "MR-long-mAP" not in result.per_query["3"]
    assert result.per_query["3"]["MR-full-R1@0.5"] == 100.0 and result.per_query["3"]["MR-full-R1@0.7"] == 0.0
    # The official nested block: per threshold, and the average taken before rounding.
    assert result.detail["full"]["MR-mAP"]["0.8"] == pytest.approx(100 * (5 / 6 + 0 + 0.5) / 3, abs=0.005)
    assert result.detail["full"]["MR-mAP"]["0.85"] == pytest.approx(100 * (1 / 3 + 0 + 0.5) / 3, abs=0.005)
    assert list(result.detail["full"]["MR-R1"]) == [str(t) for t in QVH_IOU_THRESHOLDS]


def test_a_duplicated_prediction_is_kept_and_costs_precision():
    gt, pred = _qvh_fixture()
    once = dict(pred)
    once["1"] = tuple(w for i, w in enumerate(pred["1"]) if i != 1)
    # Without the repeat q1's predictions are TP TP TP FP at t <= 0.8: AP 1 instead of 5/6.
    with_repeat = qvhighlights_metrics(gt, pred).per_query["1"]["MR-full-mAP@0.5"]
    without = qvhighlights_metrics(gt, once).per_query["1"]["MR-full-mAP@0.5"]
    assert with_repeat == pytest.approx(100 * 5 / 6)
    assert without == pytest.approx(100.0)


def test_a_query_missing_from_the_predictions_counts_zero_and_unknown_queries_are_ignored():
    gt, pred = _qvh_fixture()
    pred = {q: w for q, w in pred.items() if q != "2"} | {"999": ((0.0, 10.0, 1.0),)}
    result = qvhighlights_metrics(gt, pred)
    assert result.measures["MR-full-mAP"] == 46.11  # the same as an empty list
    assert result.counts["unanswered"] == 1 and result.counts["unknown_queries"] == 1


def test_top1_is_the_first_listed_and_only_the_first_ten_listed_count():
    gt = {"q": ((0.0, 10.0),)}
    # The highest score is listed 11th: R1 looks at the first listed (a miss) and mAP never sees it.
    pred = {"q": tuple((50.0 + i, 60.0 + i, 0.1) for i in range(10)) + ((0.0, 10.0, 0.99),)}
    result = qvhighlights_metrics(gt, pred)
    assert result.measures["MR-full-R1@0.5"] == 0.0
    assert result.measures["MR-full-mAP"] == 0.0
    assert qvhighlights_metrics(gt, pred, max_pred_windows=None).measures["MR-full-mAP"] == 100.0


def test_a_length_bin_no_query_falls_in_is_nan_as_the_official_script_prints():
    result = qvhighlights_metrics({"q": ((0.0, 20.0),)}, {"q": ((0.0, 20.0, 1.0),)})
    assert math.isnan(result.measures["MR-short-mAP"]) and math.isnan(result.measures["MR-long-mAP"])
    assert result.measures["MR-middle-mAP"] == 100.0


# A straight transcription of the official loops (one prediction, one threshold, one window at a
# time), to check the vectorised version on many random queries.

def _cross_iou(a, b):
    inter = max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
    return inter / ((a[1] - a[0]) + (b[1] - b[0]) - inter)


def _reference_ap(gt, preds, t):
    preds = sorted(preds[:10], key=lambda w: -w[2])
    if not preds:
        return 0.0
    used, tp = [False] * len(gt), []
    for p in preds:
        ious = [_cross_iou(p, g) for g in gt]
        hit = False
        for j in sorted(range(len(gt)), key=lambda j: (-ious[j], -j)):
            if ious[j] < t:
                break
            if not used[j]:
                used[j] = hit = True
                break
        tp.append(hit)
    tp_c = np.cumsum(tp)
    precision = tp_c / np.arange(1, len(tp) + 1)
    recall = tp_c / len(gt)
    ap, previous = 0.0, 0.0
    for i in range(len(tp)):
        if recall[i] != previous:
            ap += (recall[i] - previous) * max(precision[i:])
            previous = recall[i]
    return ap


def _reference_r1(gt, preds, t):
    if not preds:
        return False
    p = preds[0]
    g = gt[int(np.argmax([_cross_iou(p, g) for g in gt]))]
    inter = max(0.0, min(p[1], g[1]) - max(p[0], g[0]))
    return inter / (max(p[1], g[1]) - min(p[0], g[0])) >= t


def _random_case(rng, n):
    gt, pred = {}, {}
    for q in range(n):
        windows = []
        for _ in range(rng.integers(1, 5)):
            s, length = 2.0 * rng.integers(0, 70), 2.0 * rng.integers(1, 40)
            windows.append((s, min(150.0, s + length)))
        if rng.random() < 0.2:
            windows.append(windows[0])  # a repeated ground-truth window counts twice, as officially
        preds = []
        for _ in range(rng.integers(0, 14)):
            if rng.random() < 0.5:
                s, e = windows[rng.integers(len(windows))]
                s = max(0.0, s + 2 * rng.integers(-3, 3))
                e = max(s + 2, e + 2 * rng.integers(-3, 3))
            else:
                s = 2.0 * rng.integers(0, 70)
                e = s + 2.0 * rng.integers(1, 40)
            preds.append((float(s), float(e), rng.integers(0, 5) / 4))  # ties in score on purpose
        if preds and rng.random() < 0.3:
            preds.insert(1, preds[0])
        gt[str(q)], pred[str(q)] = tuple(windows), tuple(preds)
    return gt, pred


@pytest.mark.parametrize("seed", range(5))
def test_vectorised_matching_equals_the_official_loops(seed):
    gt, pred = _random_case(np.random.default_rng(seed), 80)
    result = qvhighlights_metrics(gt, pred)
    bins = {"short": (0, 10), "middle": (10, 30), "long": (30, 150), "full": None}
    for name, bounds in bins.items():
        kept = {q: [w for w in ws if bounds is None or bounds[0] < w[1] - w[0] <= bounds[1]] for q, ws in gt.items()}
        kept = {q: ws for q, ws in kept.items() if ws}
        aps = np.array([[_reference_ap(kept[q], list(pred[q]), t) for t in QVH_IOU_THRESHOLDS] for q in kept])
        r1 = np.array([[_reference_r1(kept[q], list(pred[q]), t) for t in QVH_IOU_THRESHOLDS] for q in kept])
        for i, t in enumerate(QVH_IOU_THRESHOLDS):
            assert result.detail[name]["MR-mAP"][str(t)] == float(f"{100 * aps[:, i].mean():.2f}"), (name, t)
            assert result.detail[name]["MR-R1"][str(t)] == float(f"{100 * r1[:, i].mean():.2f}"), (name, t)
        assert result.detail[name]["MR-mAP"]["average"] == float(f"{100 * aps.mean(axis=0).mean():.2f}")


def test_evaluating_1550_queries_is_vectorised():
    # Behaviour, not a clock: the matching loop runs once per prediction rank (10), not per query,
    # so 1,550 queries go through the same handful of array operations as 3 do.
    gt, pred = _random_case(np.random.default_rng(7), 1550)
    result = qvhighlights_metrics(gt, pred)
    assert result.counts["queries"] == 1550 and len(result.per_query) == 1550


# --- TVR --------------------------------------------------------------------------------------
#
# video2idx: a=0, b=1, c=2, x=3.
# VCMR  101 (a, [10,20]): rank 1 is video x (IoU taken as 0), rank 2 [12,20] IoU 0.8 -> R@1 miss,
#           R@5 hit at 0.5 and 0.7.
#       102 (b, [0,30]): [0,10] IoU 1/3, [0,20] IoU 2/3 -> 0.5: R@5 hit; 0.7: miss.
#       103 (c, four windows [0,5] [0,5] [5,10] [20,25]; two must agree): [5,10] matches one window
#           only -> miss; [0,10] has IoU 0.5 with three -> hit at 0.5, miss at 0.7.
#   0.5-r1 = 0; 0.5-r5 = 3/3 = 100; 0.7-r1 = 0; 0.7-r5 = 1/3 = 33.33.
# SVMR  101: the video-x row is skipped, [12,20] is then rank 1 -> hit at both; 102: [0,30] IoU 1
#           -> hit; 103 not answered -> 0.  0.5-r1 = 0.7-r1 = 2/3 = 66.67.
# VR    101: x then a -> r1 miss, r5 hit; 102: b first -> r1 hit; 103: x five times (repeats are
#           not removed) then c -> r5 miss, r10 hit.  r1 = 33.33, r5 = 66.67, r10 = 100.

def _tvr_fixture():
    truth = {q: TvrTruth(r.video, r.windows, r.desc_type)
             for q, r in load_tvr_ground_truth(MOMENTS / "tvr_gt.jsonl").items()}
    submission = load_tvr_predictions(MOMENTS / "tvr_pred.json")
    return truth, submission


def test_tvr_fixture_worked_by_hand():
    truth, submission = _tvr_fixture()
    result = tvr_metrics(truth, submission.tasks, submission.video_index)
    m = result.measures
    assert (m["VCMR-0.5-r1"], m["VCMR-0.5-r5"], m["VCMR-0.7-r1"], m["VCMR-0.7-r5"]) == (0.0, 100.0, 0.0, 33.33)
    assert m["VCMR-0.5-r100"] == 100.0
    assert (m["SVMR-0.5-r1"], m["SVMR-0.7-r1"], m["SVMR-0.7-r5"]) == (66.67, 66.67, 66.67)
    assert (m["VR-r1"], m["VR-r5"], m["VR-r10"]) == (33.33, 66.67, 100.0)
    assert result.detail["VCMR"]["0.7-r5"] == 33.33 and result.detail["VR"]["r1"] == 33.33
    # By description type: 101 is "v" and is found at 0.7 within 5; 102 ("t") is not.
    assert result.detail["VCMR_by_type"]["v-0.7-r5"] == 100.0
    assert result.detail["VCMR_by_type"]["t-0.7-r5"] == 0.0
    assert result.detail["VCMR_by_type"]["desc_type_ratio"] == "v 33.33 t 33.33 vt 33.33"
    assert result.counts["SVMR_unanswered"] == 1 and result.counts["VCMR_unanswered"] == 0
    assert result.per_query["103"]["VCMR-0.5-r5"] == 100.0 and result.per_query["103"]["VCMR-0.7-r5"] == 0.0


def test_tvr_compares_in_float32_as_the_official_script():
    # IoU 0.7 on paper: [0.2, 3.0] against [0, 2.3] shares 2.1 of 3.0. In float64 it comes out
    # as 0.6999999999999998 (a miss); the official script casts to float32, where it is 0.7 (a hit).
    truth = {"d": TvrTruth("a", ((0.0, 2.3),))}
    result = tvr_metrics(truth, {"VCMR": {"d": [[0, 0.2, 3.0]]}}, {"a": 0})
    assert result.measures["VCMR-0.7-r1"] == 100.0
    assert (min(3.0, 2.3) - max(0.2, 0.0)) / (3.0 - 0.0) < 0.7  # the float64 value would miss


def test_tvr_only_the_first_100_predictions_count():
    truth = {"d": TvrTruth("a", ((0.0, 10.0),))}
    rows = [[1, 0.0, 10.0]] * 100 + [[0, 0.0, 10.0]]
    assert tvr_metrics(truth, {"VCMR": {"d": rows}}, {"a": 0, "b": 1}).measures["VCMR-0.5-r100"] == 0.0
    assert tvr_metrics(truth, {"VCMR": {"d": rows[1:]}}, {"a": 0, "b": 1}).measures["VCMR-0.5-r100"] == 100.0


# --- DiDeMo -----------------------------------------------------------------------------------
#
# a1 times (1,1) (1,1) (1,2) (4,4); ranked (1,1) (1,2) (0,0):
#   IoU of the top (1,1): 1, 1, 1/2 (segments 1-2 hold 2, share 1), 0 -> mean of the best three 5/6.
#   ranks 1, 1, 2, and (4,4) is not ranked -> mean of the best three 4/3: rank@1 no, rank@5 yes.
# a2 times (0,0) (2,3) x3; ranked (2,3) (0,0): IoUs 0, 1, 1, 1 -> 1; ranks 2, 1, 1, 1 -> mean 1.
# a3 not answered: rank infinite, IoU 0; its four windows are not ranked.
# rank@1 = 1/3, rank@5 = 2/3, miou = (5/6 + 1 + 0)/3 = 11/18.

def test_didemo_fixture_worked_by_hand():
    truth = {q: r.windows for q, r in load_didemo_ground_truth(MOMENTS / "didemo_gt.json").items()}
    ranked = {"a1": [(1, 1), (1, 2), (0, 0)], "a2": [(2, 3), (0, 0)]}
    result = didemo_metrics(truth, ranked)
    assert result.measures["rank@1"] == pytest.approx(1 / 3)
    assert result.measures["rank@5"] == pytest.approx(2 / 3)
    assert result.measures["miou"] == pytest.approx(11 / 18)
    assert result.per_query["a1"] == {"rank@1": 0.0, "rank@5": 1.0, "miou": pytest.approx(5 / 6)}
    assert result.counts == {"queries": 3, "unanswered": 1, "windows_not_ranked": 5, "unknown_queries": 0}


def test_didemo_iou_counts_the_last_segment():
    assert didemo_iou((1, 1), (1, 1)) == 1.0
    assert didemo_iou((0, 5), (2, 3)) == pytest.approx(2 / 6)
    assert didemo_iou((0, 1), (2, 3)) == 0.0


def _reference_tvr_iou(rows: np.ndarray, window) -> np.ndarray:
    """TVRetrieval's IoU, float32, union as max end - min start."""
    g = np.asarray(window, dtype=np.float32)
    inter = np.maximum(0, np.minimum(rows[:, 1], g[1]) - np.maximum(rows[:, 0], g[0]))
    union = np.maximum(rows[:, 1], g[1]) - np.minimum(rows[:, 0], g[0])
    return np.divide(inter, union, out=np.zeros_like(inter), where=union != 0)


@pytest.mark.parametrize("seed", range(3))
def test_tvr_vectorised_equals_the_official_loops(seed):
    rng = np.random.default_rng(seed)
    index = {f"v{i}": i for i in range(4)}
    truth, preds = {}, {"VCMR": {}, "SVMR": {}, "VR": {}}
    for q in range(60):
        if rng.random() < 0.3:  # four annotators' windows: two must agree
            windows = tuple((float(s), float(s + rng.integers(1, 3))) for s in rng.integers(0, 5, 4))
        else:
            s = round(float(rng.uniform(0, 10)), 1)
            windows = ((s, round(s + float(rng.uniform(0.5, 5)), 1)),)
        truth[str(q)] = TvrTruth(f"v{rng.integers(0, 4)}", windows)
        for task in preds:
            starts = np.round(rng.uniform(0, 10, int(rng.integers(1, 30))), 1)
            preds[task][str(q)] = [[int(rng.integers(0, 4)), float(s), round(float(s + rng.uniform(0.5, 5)), 1)]
                                   for s in starts]
    result = tvr_metrics(truth, preds, index, ks=(1, 5, 10))
    for task in preds:
        hits: dict[str, list[bool]] = {}
        for q, t in truth.items():
            rows = np.array(preds[task][q], dtype=np.float32)
            matched = rows[:, 0] == index[t.video]
            for thd in (0.5, 0.7):
                ious = [_reference_tvr_iou(rows[:, 1:3], w) * matched >= thd for w in t.windows]
                correct = sum(ious) >= 2 if len(t.windows) >= 4 else ious[0]
                for k in (1, 5, 10):
                    if task == "VR":
                        hits.setdefault(f"VR-r{k}", []).append(bool(matched[:k].any()))
                    elif task == "SVMR":
                        hits.setdefault(f"SVMR-{thd}-r{k}", []).append(bool(correct[matched][:k].any()))
                    else:
                        hits.setdefault(f"VCMR-{thd}-r{k}", []).append(bool(correct[:k].any()))
        for name, values in hits.items():
            assert result.measures[name] == round(float(np.mean(values)) * 100, 2), name
