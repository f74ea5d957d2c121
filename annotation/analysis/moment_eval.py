"""Moment-retrieval evaluation with the official tools' rules (methodology sections 8 and 9).

Three benchmarks, three official scripts, three sets of conventions. Each function here
reproduces one script's numbers to the printed digit on a complete prediction file, and says
where it must depart from it (the official scripts crash or refuse; this code scores and counts).

QVHighlights (Moment-DETR ``standalone_eval/eval.py``)
------------------------------------------------------
* A query has one or more ground-truth windows. Predictions are ``[start, end, score]`` in the
  file's order.
* ``R1@t``: the *first prediction in the file* (not the highest-scored one) is correct when its
  IoU with some window is ``>= t``. The official script picks the window with the highest IoU
  (IoU as ``inter / (|a| + |b| - inter)``, first one on ties) and then re-computes the IoU with
  ``inter / (max end - min start)``; both formulas agree on overlapping spans and give 0 on
  disjoint ones, and this code uses the same two to stay on the same side of every threshold.
* ``mAP@t``: the first ``max_pred_windows`` (10) predictions *in file order* are kept, then sorted
  by score (descending, stable, so ties keep file order). Each prediction in turn is matched to
  the unmatched window with the highest IoU among those at ``>= t``; it is a true positive if
  there is one, else a false positive. A window matched once cannot be matched again, so a
  prediction listed twice counts once and its repeat is a false positive unless another window
  fits it (this is how the official script takes the 81 duplicated predictions of the val
  file: they are kept, not refused and not merged). AP is the VOC/ActivityNet interpolated area
  (precision made non-increasing from the right, summed over recall steps) with the number of
  windows as the recall denominator. On equal IoU the window listed *last* is taken first: that
  is what ``argsort()[::-1]`` gives for the handful of windows a query has (numpy's sort is stable
  below 16 elements); duplicated windows make the choice immaterial.
* ``MR-full-mAP`` averages mAP over ``t = 0.50, 0.55, ..., 0.95``. ``short``/``middle``/``long``
  keep only the windows whose length ``l`` is in ``(0, 10]``, ``(10, 30]``, ``(30, 150]`` seconds
  and only the queries that keep at least one window; predictions are left as they are (so a
  prediction of a long window is a false positive in ``short``). ``full`` keeps every window.
* Aggregates are printed x100 with two decimals (``float(f"{100 * v:.2f}")``); the mean over
  thresholds is taken before rounding, as the official script does.
* Departures: the official script refuses a file whose query set differs from the ground truth
  (``match_number``) and crashes on a query with an empty prediction list. Here a ground-truth
  query without predictions scores 0 in every measure and is counted in ``counts["unanswered"]``;
  predictions for queries not in the ground truth are ignored and counted in
  ``counts["unknown_queries"]``. On a complete file both give the official numbers.

TVR (TVRetrieval ``standalone_eval/eval.py``)
---------------------------------------------
* A prediction is ``[video_index, start, end]``; the first ``max_pred_per_query`` (100) in file
  order count (the score is ignored). Spans are compared in float32, as the official script
  casts them; IoU is ``inter / (max end - min start)``, 0 for a prediction in another video.
* ``VCMR``: R@K at IoU t = some prediction among the first K is in the right video with IoU >= t.
  ``SVMR``: the same among the predictions in the right video only (the first K of those).
  ``VR``: some prediction among the first K names the right video (repeats are not removed).
* A ground truth with four or more windows (DiDeMo in TVR's layout) counts a prediction correct
  when its IoU is >= t with at least two of them.
* Printed as ``round(100 * v, 2)``, under the official names ``0.5-r1`` ... (``r1`` for VR),
  and per description type (``v``, ``t``, ``vt``) when every query has one.

DiDeMo (Hendricks et al. 2017, ``LocalizingMoments/utils/eval.py``)
-------------------------------------------------------------------
* Moments are 5-second segment indices with an *inclusive* end: ``[2, 3]`` covers segments 2 and
  3, so IoU is ``(min end + 1 - max start) / (max end + 1 - min start)``.
* Each query has several annotators' windows (usually four). ``miou`` is the mean of the three
  highest IoUs between the top prediction and the annotators' windows; the rank of each window
  is its 1-based position in the ranked predictions, a query's rank is the mean of its three best
  ranks, and ``rank@1`` / ``rank@5`` are the fraction of queries whose mean rank is <= 1 / <= 5.
  This tolerates one annotator who disagrees with the others.
* Printed as fractions (``%f``), as the official script prints them.
* Departure: the official script raises when an annotator's window is not in the ranked list;
  here its rank is infinite (the query cannot reach rank@5 through it) and the window is counted
  in ``counts["windows_not_ranked"]``.

Every function returns a :class:`MomentEvaluation`: ``measures`` (official names, official scale
and rounding), ``per_query`` (the same names per query, same scale, unrounded), ``detail`` (the
official script's own nested result) and ``counts``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "QVH_IOU_THRESHOLDS",
    "QVH_LENGTH_BINS",
    "TVR_TASKS",
    "MomentEvaluation",
    "TvrTruth",
    "qvhighlights_metrics",
    "tvr_metrics",
    "didemo_metrics",
    "didemo_iou",
]

#: 0.5, 0.55, ..., 0.95, rounded to two decimals as the official script rounds its linspace.
QVH_IOU_THRESHOLDS: tuple[float, ...] = tuple(float(f"{t:.2f}") for t in np.linspace(0.5, 0.95, 10))
#: (name, lower, upper): a window of length l is in the bin when lower < l <= upper; None = all.
QVH_LENGTH_BINS: tuple[tuple[str, float | None, float | None], ...] = (
    ("short", 0.0, 10.0), ("middle", 10.0, 30.0), ("long", 30.0, 150.0), ("full", None, None),
)
TVR_TASKS = ("VCMR", "SVMR", "VR")
TVR_DESC_TYPES = ("v", "t", "vt")

Window = tuple[float, float]


@dataclass(frozen=True)
class MomentEvaluation:
    measures: dict[str, float]
    per_query: dict[str, dict[str, float]]
    detail: dict = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)


def _official_pct(value: float) -> float:
    """x100 with two decimals, the way Moment-DETR prints (``float(f"{100 * v:.2f}")``)."""
    return float(f"{100 * value:.2f}") if math.isfinite(value) else float("nan")


def _padded(rows: list[np.ndarray], width: int, columns: int) -> tuple[np.ndarray, np.ndarray]:
    """Stack ragged ``(n_i, columns)`` arrays into ``(len(rows), width, columns)`` plus a validity
    mask; padding is zeros."""
    out = np.zeros((len(rows), width, columns), dtype=float)
    valid = np.zeros((len(rows), width), dtype=bool)
    for i, r in enumerate(rows):
        n = min(len(r), width)
        if n:
            out[i, :n] = r[:n]
            valid[i, :n] = True
    return out, valid


# --- QVHighlights --------------------------------------------------------------------------------

def _qvh_ap(pred: np.ndarray, pred_valid: np.ndarray, gt: np.ndarray, gt_valid: np.ndarray,
            thresholds: np.ndarray) -> np.ndarray:
    """AP per query and threshold, shape ``(Q, T)``.

    ``pred`` is ``(Q, P, 2)`` already in score order, ``gt`` is ``(Q, G, 2)``; the greedy matching
    runs over prediction ranks (at most ``max_pred_windows`` steps) with every query and threshold
    handled at once.
    """
    q, p_max, _ = pred.shape
    g_max = gt.shape[1]
    t_n = len(thresholds)
    if q == 0:
        return np.zeros((0, t_n))
    ps, pe = pred[:, :, 0][:, :, None], pred[:, :, 1][:, :, None]
    gs, ge = gt[:, :, 0][:, None, :], gt[:, :, 1][:, None, :]
    inter = np.clip(np.minimum(pe, ge) - np.maximum(ps, gs), 0.0, None)
    union = (pe - ps) + (ge - gs) - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / union
    iou = np.where(gt_valid[:, None, :], iou, -np.inf)  # (Q, P, G)

    locked = np.zeros((q, t_n, g_max), dtype=bool)
    tp = np.zeros((q, t_n, p_max), dtype=bool)
    rows = np.arange(q)[:, None]
    cols = np.arange(t_n)[None, :]
    for p in range(p_max):
        cand_iou = iou[:, p, None, :]  # (Q, 1, G)
        eligible = (cand_iou >= thresholds[None, :, None]) & ~locked & pred_valid[:, p, None, None]
        scored = np.where(eligible, cand_iou, -np.inf)
        # argmax on the reversed axis: among equal IoUs the last-listed window wins (see module doc).
        choice = g_max - 1 - np.argmax(scored[:, :, ::-1], axis=2)  # (Q, T)
        hit = eligible.any(axis=2)
        tp[:, :, p] = hit
        locked[rows, cols, choice] |= hit
    fp = pred_valid[:, None, :] & ~tp
    tp_c = np.cumsum(tp, axis=2, dtype=float)
    fp_c = np.cumsum(fp, axis=2, dtype=float)
    n_gt = gt_valid.sum(axis=1).astype(float)[:, None, None]
    recall = tp_c / n_gt
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(tp_c + fp_c > 0, tp_c / (tp_c + fp_c), 0.0)
    # Interpolated precision: the best precision at this rank or any later one.
    envelope = np.maximum.accumulate(precision[:, :, ::-1], axis=2)[:, :, ::-1]
    step = np.diff(recall, axis=2, prepend=0.0)
    return (step * envelope).sum(axis=2)


def _qvh_r1(first: np.ndarray, answered: np.ndarray, gt: np.ndarray, gt_valid: np.ndarray,
            thresholds: np.ndarray) -> np.ndarray:
    """Top-1 correctness per query and threshold, ``(Q, T)`` booleans."""
    if len(first) == 0:
        return np.zeros((0, len(thresholds)), dtype=bool)
    ps, pe = first[:, 0][:, None], first[:, 1][:, None]
    gs, ge = gt[:, :, 0], gt[:, :, 1]
    inter = np.clip(np.minimum(pe, ge) - np.maximum(ps, gs), 0.0, None)
    union = (pe - ps) + (ge - gs) - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = np.where(gt_valid, inter / union, -np.inf)
    best = np.argmax(cross, axis=1)  # first maximum, as np.argmax in the official script
    chosen = gt[np.arange(len(gt)), best]
    inter1 = np.maximum(0.0, np.minimum(first[:, 1], chosen[:, 1]) - np.maximum(first[:, 0], chosen[:, 0]))
    union1 = np.maximum(first[:, 1], chosen[:, 1]) - np.minimum(first[:, 0], chosen[:, 0])
    paired = np.divide(inter1, union1, out=np.zeros_like(inter1), where=union1 != 0)
    return (paired[:, None] >= thresholds[None, :]) & answered[:, None]


def _t_name(t: float) -> str:
    return str(float(t))


def qvhighlights_metrics(
    ground_truth: Mapping[str, Sequence[Window]],
    predictions: Mapping[str, Sequence[tuple[float, float, float]]],
    *,
    max_pred_windows: int | None = 10,
) -> MomentEvaluation:
    """QVHighlights moment retrieval as Moment-DETR's ``standalone_eval`` computes it.

    ``ground_truth[qid]`` = the query's ``relevant_windows`` ``(start, end)`` (one or more);
    ``predictions[qid]`` = its ``pred_relevant_windows`` ``(start, end, score)`` in file order,
    duplicates included. See the module docstring for every rule.

    ``measures``: ``MR-full-mAP``, ``MR-full-mAP@0.5``, ``MR-full-mAP@0.75``, ``MR-short-mAP``,
    ``MR-middle-mAP``, ``MR-long-mAP``, ``MR-full-R1@0.5``, ``MR-full-R1@0.7`` (x100, two
    decimals; NaN for a length bin no query falls in, as the official script prints).
    ``detail[bin]`` = ``{"MR-mAP": {"0.5": .., ..., "average": ..}, "MR-R1": {"0.5": .., ...}}``.
    ``per_query[qid]``: ``MR-full-R1@0.5``/``@0.7`` (0 or 100), ``MR-<bin>-mAP`` (the query's AP
    averaged over thresholds, for each bin the query is in), ``MR-full-mAP@0.5``/``@0.75``.
    """
    thresholds = np.array(QVH_IOU_THRESHOLDS)
    qids = list(ground_truth)
    unknown = sum(1 for q in predictions if q not in ground_truth)
    pred_rows: list[np.ndarray] = []
    first = np.zeros((len(qids), 2))
    answered = np.zeros(len(qids), dtype=bool)
    for i, qid in enumerate(qids):
        windows = predictions.get(qid) or ()
        kept = list(windows[:max_pred_windows] if max_pred_windows is not None else windows)
        arr = np.array([(w[0], w[1], w[2]) for w in kept], dtype=float).reshape(-1, 3)
        if len(arr):
            first[i] = arr[0, :2]
            answered[i] = True
            # Stable sort on descending score: ties keep file order, as list.sort does.
            arr = arr[np.argsort(-arr[:, 2], kind="stable")]
        pred_rows.append(arr[:, :2])
    p_max = max((len(r) for r in pred_rows), default=0)
    pred, pred_valid = _padded(pred_rows, max(p_max, 1), 2)

    gt_lists = [np.array(ground_truth[q], dtype=float).reshape(-1, 2) for q in qids]
    for q, g in zip(qids, gt_lists):
        if len(g) == 0:
            raise ValueError(f"query {q!r} has no ground-truth window")
    g_max = max((len(g) for g in gt_lists), default=1)
    gt_all, gt_all_valid = _padded(gt_lists, g_max, 2)
    lengths = gt_all[:, :, 1] - gt_all[:, :, 0]

    per_query: dict[str, dict[str, float]] = {q: {} for q in qids}
    detail: dict[str, dict] = {}
    counts = {"queries": len(qids), "unanswered": int((~answered).sum()), "unknown_queries": unknown}
    for name, lower, upper in QVH_LENGTH_BINS:
        if lower is None:
            in_bin = gt_all_valid
        else:
            in_bin = gt_all_valid & (lengths > lower) & (lengths <= upper)
        rows = np.flatnonzero(in_bin.any(axis=1))
        counts[f"queries_{name}"] = len(rows)
        gt_b, gt_b_valid = gt_all[rows], in_bin[rows]
        ap = _qvh_ap(pred[rows], pred_valid[rows], gt_b, gt_b_valid, thresholds)  # (Qb, T)
        r1 = _qvh_r1(first[rows], answered[rows], gt_b, gt_b_valid, thresholds)
        with np.errstate(invalid="ignore"):
            ap_t = ap.mean(axis=0) if len(rows) else np.full(len(thresholds), np.nan)
            r1_t = r1.mean(axis=0) if len(rows) else np.full(len(thresholds), np.nan)
        m_ap = {_t_name(t): _official_pct(v) for t, v in zip(thresholds, ap_t)}
        m_ap["average"] = _official_pct(float(np.mean(ap_t)))
        detail[name] = {"MR-mAP": m_ap,
                        "MR-R1": {_t_name(t): _official_pct(v) for t, v in zip(thresholds, r1_t)}}
        i50, i75, i70 = (QVH_IOU_THRESHOLDS.index(t) for t in (0.5, 0.75, 0.7))
        for j, row in enumerate(rows):
            values = per_query[qids[row]]
            values[f"MR-{name}-mAP"] = 100 * float(ap[j].mean())
            if name == "full":
                values["MR-full-mAP@0.5"] = 100 * float(ap[j, i50])
                values["MR-full-mAP@0.75"] = 100 * float(ap[j, i75])
                values["MR-full-R1@0.5"] = 100.0 * bool(r1[j, i50])
                values["MR-full-R1@0.7"] = 100.0 * bool(r1[j, i70])

    brief = {
        "MR-full-mAP": detail["full"]["MR-mAP"]["average"],
        "MR-full-mAP@0.5": detail["full"]["MR-mAP"]["0.5"],
        "MR-full-mAP@0.75": detail["full"]["MR-mAP"]["0.75"],
        "MR-short-mAP": detail["short"]["MR-mAP"]["average"],
        "MR-middle-mAP": detail["middle"]["MR-mAP"]["average"],
        "MR-long-mAP": detail["long"]["MR-mAP"]["average"],
        "MR-full-R1@0.5": detail["full"]["MR-R1"]["0.5"],
        "MR-full-R1@0.7": detail["full"]["MR-R1"]["0.7"],
    }
    measures = dict(sorted(brief.items()))  # the official "brief" block is sorted by name
    return MomentEvaluation(measures=measures, per_query=per_query, detail=detail, counts=counts)


# --- TVR -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TvrTruth:
    """One TVR description: its video, one window (or four or more annotators' windows), and the
    description type ``v`` / ``t`` / ``vt`` when the file gives it."""

    video: str
    windows: tuple[Window, ...]
    desc_type: str | None = None


def _tvr_rows(rows, limit: int) -> np.ndarray:
    """The first ``limit`` predictions as an ``(n, 3)`` array ``[video_index, start, end]``."""
    arr = np.asarray(rows[:limit], dtype=float)
    if arr.size == 0:
        return np.zeros((0, 3))
    return arr.reshape(len(arr), -1)[:, :3]


def _tvr_correct(pred: np.ndarray, valid: np.ndarray, matched: np.ndarray, truth: list[TvrTruth],
                 thresholds: np.ndarray) -> np.ndarray:
    """Correct predictions ``(Q, P, T)`` under TVR's rules, computed in float32 as the official
    script does."""
    q, p_max, _ = pred.shape
    g_max = max((len(t.windows) for t in truth), default=1)
    gt = np.zeros((q, g_max, 2), dtype=np.float32)
    gt_valid = np.zeros((q, g_max), dtype=bool)
    for i, t in enumerate(truth):
        gt[i, :len(t.windows)] = np.asarray(t.windows, dtype=np.float32)
        gt_valid[i, :len(t.windows)] = True
    ps = pred[:, :, 1].astype(np.float32)[:, :, None]
    pe = pred[:, :, 2].astype(np.float32)[:, :, None]
    gs, ge = gt[:, None, :, 0], gt[:, None, :, 1]
    inter = np.maximum(np.float32(0), np.minimum(pe, ge) - np.maximum(ps, gs))
    union = np.maximum(pe, ge) - np.minimum(ps, gs)
    iou = np.divide(inter, union, out=np.zeros_like(inter), where=union != 0)
    iou = iou * (matched & valid)[:, :, None]  # another video's prediction has IoU 0
    hits = (iou[..., None] >= thresholds.astype(np.float32)[None, None, None, :]) & gt_valid[:, None, :, None]
    n_hits = hits.sum(axis=2)  # (Q, P, T)
    needed = np.array([2 if len(t.windows) >= 4 else 1 for t in truth])[:, None, None]
    return (n_hits >= needed) & valid[:, :, None]


def tvr_metrics(
    ground_truth: Mapping[str, TvrTruth],
    predictions: Mapping[str, Mapping[str, np.ndarray | Sequence[Sequence[float]]]],
    video_index: Mapping[str, int],
    *,
    iou_thresholds: Sequence[float] = (0.5, 0.7),
    ks: Sequence[int] = (1, 5, 10, 100),
    max_pred_per_query: int = 100,
) -> MomentEvaluation:
    """TVR's VCMR, SVMR and VR recall as TVRetrieval's ``standalone_eval`` computes it.

    ``predictions[task][desc_id]`` = rows ``(video_index, start, end[, score])`` in file order, for
    each task present (``VCMR``, ``SVMR``, ``VR``); ``video_index`` is the submission's
    ``video2idx`` (a ground-truth video absent from it matches no prediction).

    ``measures``: ``VCMR-0.5-r1``, ..., ``SVMR-0.7-r100``, ``VR-r1``, ... (x100, two decimals);
    ``detail`` is the official nested result (``{"VCMR": {"0.5-r1": ..}, "VCMR_by_type": {..}}``);
    ``per_query[desc_id]`` holds the same names with 0 or 100.
    """
    thresholds = np.array([float(t) for t in iou_thresholds])
    ks = tuple(int(k) for k in ks)
    qids = list(ground_truth)
    truth = [ground_truth[q] for q in qids]
    gt_video = np.array([video_index.get(t.video, -1) for t in truth], dtype=np.int64)
    types = [t.desc_type for t in truth]
    by_type = bool(qids) and all(t in TVR_DESC_TYPES for t in types)
    type_arr = np.array(types if by_type else [None] * len(qids), dtype=object)

    measures: dict[str, float] = {}
    per_query: dict[str, dict[str, float]] = {q: {} for q in qids}
    detail: dict[str, dict] = {}
    counts: dict[str, int] = {"queries": len(qids)}
    for task in TVR_TASKS:
        if task not in predictions:
            continue
        task_preds = predictions[task]
        counts[f"{task}_unanswered"] = sum(1 for q in qids if len(task_preds.get(q, ())) == 0)
        counts[f"{task}_unknown_queries"] = sum(1 for q in task_preds if q not in ground_truth)
        rows = [_tvr_rows(task_preds.get(q, ()), max_pred_per_query) for q in qids]
        p_max = max(1, min(max_pred_per_query, max((len(r) for r in rows), default=0)))
        pred, valid = _padded(rows, p_max, 3)
        # Video indices compared as integers (the official float32 cast is exact below 2**24).
        matched = valid & (pred[:, :, 0].astype(np.int64) == gt_video[:, None])
        names: list[str] = []
        hit_columns: list[np.ndarray] = []
        if task == "VR":
            for k in ks:
                names.append(f"r{k}")
                hit_columns.append(matched[:, :k].any(axis=1))
        else:
            correct = _tvr_correct(pred, valid, matched, truth, thresholds)
            if task == "SVMR":
                # Rank among the predictions in the right video only.
                rank_in_video = np.cumsum(matched, axis=1)
                correct = correct & matched[:, :, None]
            for ti, t in enumerate(thresholds):
                for k in ks:
                    names.append(f"{_t_name(t)}-r{k}")
                    if task == "SVMR":
                        hit_columns.append((correct[:, :, ti] & (rank_in_video <= k)).any(axis=1))
                    else:
                        hit_columns.append(correct[:, :k, ti].any(axis=1))
        task_detail: dict[str, float] = {}
        for name, hits in zip(names, hit_columns):
            value = round(float(hits.mean()) * 100, 2) if len(hits) else float("nan")
            task_detail[name] = value
            measures[f"{task}-{name}"] = value
            for q, h in zip(qids, hits):
                per_query[q][f"{task}-{name}"] = 100.0 * bool(h)
        detail[task] = task_detail
        if by_type:
            typed: dict[str, object] = {}
            for desc_type in TVR_DESC_TYPES:
                in_type = type_arr == desc_type
                n_type = int(in_type.sum())
                for name, hits in zip(names, hit_columns):
                    typed[f"{desc_type}-{name}"] = (round(float((hits & in_type).sum()) / n_type * 100, 2)
                                                    if n_type else float("nan"))
            typed["desc_type_ratio"] = "v {} t {} vt {}".format(
                *[round(float((type_arr == d).sum()) / len(qids) * 100, 2) for d in TVR_DESC_TYPES])
            detail[f"{task}_by_type"] = typed
    return MomentEvaluation(measures=measures, per_query=per_query, detail=detail, counts=counts)


# --- DiDeMo --------------------------------------------------------------------------------------

def didemo_iou(a: Window, b: Window) -> float:
    """IoU of two DiDeMo moments given as inclusive segment indices ``(first, last)``."""
    inter = max(0.0, min(a[1], b[1]) + 1 - max(a[0], b[0]))
    union = max(a[1], b[1]) + 1 - min(a[0], b[0])
    return float(inter) / union


def didemo_metrics(
    ground_truth: Mapping[str, Sequence[Window]],
    predictions: Mapping[str, Sequence[Window]],
) -> MomentEvaluation:
    """DiDeMo's rank@1, rank@5 and mIoU over several annotators' windows (Hendricks et al.).

    ``ground_truth[qid]`` = every annotator's ``times`` (segment indices, inclusive end, repeats
    kept: two annotators who chose the same moment count twice); ``predictions[qid]`` = ranked
    moments in the same units. ``measures``: ``rank@1``, ``rank@5``, ``miou`` as fractions.
    """
    qids = list(ground_truth)
    ranks = np.empty(len(qids))
    mious = np.zeros(len(qids))
    not_ranked = 0
    unanswered = 0
    per_query: dict[str, dict[str, float]] = {}
    for i, qid in enumerate(qids):
        times = [(float(s), float(e)) for s, e in ground_truth[qid]]
        if not times:
            raise ValueError(f"query {qid!r} has no annotated window")
        ranked = [(float(p[0]), float(p[1])) for p in (predictions.get(qid) or ())]
        if not ranked:
            unanswered += 1
        position: dict[Window, int] = {}
        for r, moment in enumerate(ranked, start=1):
            position.setdefault(moment, r)  # list.index: the first occurrence counts
        time_ranks = [position.get(t, math.inf) for t in times]
        not_ranked += sum(1 for r in time_ranks if r == math.inf)
        ranks[i] = float(np.mean(sorted(time_ranks)[:3]))
        if ranked:
            ious = sorted(didemo_iou(ranked[0], t) for t in times)
            mious[i] = float(np.mean(ious[-3:]))
        per_query[qid] = {"rank@1": float(ranks[i] <= 1), "rank@5": float(ranks[i] <= 5), "miou": mious[i]}
    n = len(qids)
    measures = {
        "rank@1": float(np.sum(ranks <= 1)) / n if n else float("nan"),
        "rank@5": float(np.sum(ranks <= 5)) / n if n else float("nan"),
        "miou": float(np.mean(mious)) if n else float("nan"),
    }
    counts = {"queries": n, "unanswered": unanswered, "windows_not_ranked": not_ranked,
              "unknown_queries": sum(1 for q in predictions if q not in ground_truth)}
    return MomentEvaluation(measures=measures, per_query=per_query, detail=dict(measures), counts=counts)
