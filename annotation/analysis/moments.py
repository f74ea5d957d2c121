"""Moment pools and moment-retrieval metrics (methodology section 8).

In video corpus moment retrieval a prediction is ``(caption, video, start, end)`` with a rank and a
score inside one run. Pooling moments differs from pooling whole videos: two runs rarely predict
byte-identical spans, so "deduplicate the pair" becomes "merge spans that overlap strongly" and the
rater judges one span per merged group instead of each near-duplicate prediction.

Merge rule (order-independent by construction)
-----------------------------------------------
Within one ``(caption, video)``, build the graph whose nodes are the pooled predictions and whose
edges join every two predictions with temporal IoU ``>= iou_threshold``. Each connected component
(found with union-find) is one *group*; its judged span is the hull ``[min start, max end]`` of its
members. Chains are therefore merged: if ``a ~ b`` and ``b ~ c`` but not ``a ~ c``, all three are
one group.

Why this rule:

* It is a function of the *set* of predictions only (a graph's connected components do not depend
  on the order edges are visited), so the pool is identical whatever order runs are imported in.
  Greedy NMS-style clustering depends on the visiting order or on scores, and scores are not
  comparable across runs.
* It keeps the promise the threshold makes: two predictions with IoU >= threshold are always
  judged together. A non-chaining clustering must split some such pair, and which pair it splits is
  an arbitrary tie rule.
* For a group of two, the hull has IoU >= threshold with both members
  (``|a| / |a u b| >= |a n b| / |a u b|``), so a relevant label on the hull transfers to each member
  at the same IoU. For chains this is not guaranteed (the hull can drift away from a short member),
  so every group reports ``min_member_iou`` (the smallest IoU between a member and the judged span):
  a caller can flag groups below the threshold for review, and the metrics below never rely on group
  membership anyway.

Touching spans (``[0, 5]`` and ``[5, 10]``) have IoU 0 and never merge (the threshold must be > 0).
Spans must satisfy ``0 <= start < end`` with finite values (the same check constraint the database
holds); anything else raises :class:`InvalidMomentError`, a ``ValueError`` naming the prediction.

Metrics
-------
:func:`moment_recall_table` computes R@K at IoU thresholds against the *corrected positive moments*
(original moments plus judged spans labelled relevant): a prediction is correct when its IoU with a
positive moment of the same caption and video is ``>= threshold``. It deliberately does not use
group membership: a member of a relevant group whose span drifted from the hull is not counted
correct at a strict IoU, exactly as if the hull were an original annotation.
:func:`prediction_label` maps a pooled prediction to its group's label for display and auditing.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "InvalidMomentError",
    "MomentPrediction",
    "MomentMember",
    "MomentGroup",
    "MomentRecallTable",
    "temporal_iou",
    "temporal_iou_matrix",
    "pool_moments",
    "group_index",
    "prediction_label",
    "positive_moments_from_labels",
    "moment_recall_table",
    "format_recall_table",
]

# Spans come from decimal seconds (0.1, 0.7...) whose binary IoU can land one ulp below a threshold
# it equals on paper; "at or above" must not depend on that rounding.
IOU_TOLERANCE = 1e-9


class InvalidMomentError(ValueError):
    """A prediction or moment that cannot be pooled or scored; the message names it."""


@dataclass(frozen=True, slots=True)
class MomentPrediction:
    """One row of a moment run: ``rank`` is 1-based within ``(run, caption)``."""

    run: str
    caption: str
    video: str
    start: float
    end: float
    rank: int
    score: float = 0.0


@dataclass(frozen=True, slots=True)
class MomentMember:
    """Provenance of a pooled prediction inside a group: which run, at which rank, which span."""

    run: str
    rank: int
    start: float
    end: float
    score: float


@dataclass(frozen=True, slots=True)
class MomentGroup:
    """One judged span: the hull of a connected component of overlapping predictions.

    ``ordinal`` numbers the groups of one ``(caption, video)`` in span order, so ``key`` is unique
    (two different components can share a hull when chains are involved).
    """

    caption: str
    video: str
    ordinal: int
    start: float
    end: float
    members: tuple[MomentMember, ...]
    min_member_iou: float

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.caption, self.video, self.ordinal)

    @property
    def runs(self) -> tuple[str, ...]:
        return tuple(sorted({m.run for m in self.members}))


def _check_span(start: float, end: float, what: object) -> None:
    if not (math.isfinite(start) and math.isfinite(end)):
        raise InvalidMomentError(f"non-finite span [{start}, {end}] in {what!r}")
    if start < 0:
        raise InvalidMomentError(f"negative start {start} in {what!r}")
    if end <= start:
        kind = "zero-length" if end == start else "inverted"
        raise InvalidMomentError(f"{kind} span [{start}, {end}] (need start < end) in {what!r}")


def temporal_iou(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Temporal IoU of two spans ``(start, end)``: overlap length / union length (0 if disjoint)."""
    inter = min(a[1], b[1]) - max(a[0], b[0])
    if inter <= 0:
        return 0.0
    union = max(a[1], b[1]) - min(a[0], b[0])
    return inter / union


def temporal_iou_matrix(
    starts_a: np.ndarray, ends_a: np.ndarray, starts_b: np.ndarray, ends_b: np.ndarray
) -> np.ndarray:
    """IoU of every span in A (shape ``(n,)``) with every span in B (``(m,)``): shape ``(n, m)``.

    The union is ``max end - min start``, which equals ``|a| + |b| - |a n b|`` whenever the spans
    overlap; for disjoint spans the intersection is clipped to 0 so the value is 0 either way.
    """
    sa = np.asarray(starts_a, dtype=float)[:, None]
    ea = np.asarray(ends_a, dtype=float)[:, None]
    sb = np.asarray(starts_b, dtype=float)[None, :]
    eb = np.asarray(ends_b, dtype=float)[None, :]
    inter = np.clip(np.minimum(ea, eb) - np.maximum(sa, sb), 0.0, None)
    union = np.maximum(ea, eb) - np.minimum(sa, sb)
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def _edges(spans: list[tuple[float, float]], threshold: float) -> tuple[list[int], list[int]]:
    """Index pairs ``i < j`` whose IoU is at or above ``threshold``."""
    n = len(spans)
    if n > 64:
        # Large groups: one vectorized IoU matrix beats n^2 / 2 Python calls.
        arr = np.array(spans)
        iou = temporal_iou_matrix(arr[:, 0], arr[:, 1], arr[:, 0], arr[:, 1])
        ii, jj = np.nonzero(np.triu(iou >= threshold - IOU_TOLERANCE, k=1))
        return ii.tolist(), jj.tolist()
    # Most (caption, video) pairs hold one to a few predictions, where NumPy's per-call
    # overhead dominates: plain Python is several times faster there.
    ii, jj = [], []
    for i in range(n):
        for j in range(i + 1, n):
            if temporal_iou(spans[i], spans[j]) >= threshold - IOU_TOLERANCE:
                ii.append(i)
                jj.append(j)
    return ii, jj


def _components(n: int, edges_i: list[int], edges_j: list[int]) -> list[list[int]]:
    """Connected components by union-find; the result does not depend on edge order."""
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]  # path halving keeps the trees shallow
            x = parent[x]
        return x

    for i, j in zip(edges_i, edges_j):
        ri, rj = find(i), find(j)
        if ri != rj:
            # Attach the larger root under the smaller: any fixed rule works, this one is simple.
            parent[max(ri, rj)] = min(ri, rj)
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(n):
        groups[find(i)].append(i)
    return list(groups.values())


def _pooled_predictions(
    predictions: Iterable[MomentPrediction], top_k: int
) -> list[MomentPrediction]:
    """Validate every prediction, then keep ranks ``1..top_k`` of each ``(run, caption)``."""
    seen_rank: dict[tuple[str, str, int], MomentPrediction] = {}
    kept: list[MomentPrediction] = []
    for p in predictions:
        _check_span(p.start, p.end, p)
        if p.rank < 1:
            raise InvalidMomentError(f"rank {p.rank} < 1 in {p!r}")
        # A repeated rank would make "top-k" depend on arrival order: reject it instead.
        other = seen_rank.setdefault((p.run, p.caption, p.rank), p)
        if other is not p:
            raise InvalidMomentError(f"duplicate rank {p.rank} for run {p.run!r}, caption "
                                     f"{p.caption!r}: {other!r} and {p!r}")
        if p.rank <= top_k:
            kept.append(p)
    return kept


def pool_moments(
    predictions: Iterable[MomentPrediction],
    *,
    top_k: int = 10,
    iou_threshold: float = 0.7,
) -> list[MomentGroup]:
    """Pool the top-``top_k`` predictions per caption of every run and merge overlapping spans.

    Input: any iterable of :class:`MomentPrediction` (all runs mixed, any order).
    Output: groups sorted by ``(caption, video, start, end)``; each carries the judged span (hull),
    its members (run, rank, original span, score; sorted by run then rank) and ``min_member_iou``.
    See the module docstring for the merge rule and why it is connected components.

    Raises :class:`InvalidMomentError` for a zero-length, inverted, negative or non-finite span, a
    rank below 1, or two predictions with the same ``(run, caption, rank)``.
    """
    if not 0.0 < iou_threshold <= 1.0:
        raise ValueError(f"iou_threshold must be in (0, 1], got {iou_threshold}")
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")

    by_pair: dict[tuple[str, str], list[MomentPrediction]] = defaultdict(list)
    for p in _pooled_predictions(predictions, top_k):
        by_pair[(p.caption, p.video)].append(p)

    groups: list[MomentGroup] = []
    for (caption, video), preds in sorted(by_pair.items()):
        # Canonical member order so that output (not only grouping) is arrival-order independent.
        preds.sort(key=lambda p: (p.run, p.rank))
        ii, jj = _edges([(float(p.start), float(p.end)) for p in preds], iou_threshold)
        drafts = []
        for comp in _components(len(preds), ii, jj):
            comp.sort()
            members = tuple(
                MomentMember(preds[i].run, preds[i].rank, preds[i].start, preds[i].end,
                             preds[i].score)
                for i in comp
            )
            hs = float(min(m.start for m in members))
            he = float(max(m.end for m in members))
            # Members lie inside the hull, so IoU(member, hull) is simply |member| / |hull|.
            min_iou = min((m.end - m.start) / (he - hs) for m in members)
            drafts.append((hs, he, tuple((m.run, m.rank) for m in members), members, min_iou))
        drafts.sort(key=lambda d: (d[0], d[1], d[2]))
        for ordinal, (hs, he, _, members, min_iou) in enumerate(drafts):
            groups.append(MomentGroup(caption, video, ordinal, hs, he, members, min_iou))
    return groups


def group_index(groups: Sequence[MomentGroup]) -> dict[tuple[str, str, int], tuple[str, str, int]]:
    """Map each pooled prediction ``(run, caption, rank)`` to the key of its group."""
    index: dict[tuple[str, str, int], tuple[str, str, int]] = {}
    for g in groups:
        for m in g.members:
            index[(m.run, g.caption, m.rank)] = g.key
    return index


def prediction_label(
    prediction: MomentPrediction,
    index: Mapping[tuple[str, str, int], tuple[str, str, int]],
    labels: Mapping[tuple[str, str, int], str],
) -> str | None:
    """Label a prediction inherits from the judged span of its group, or ``None``.

    ``index`` comes from :func:`group_index`; ``labels`` maps group keys to resolved labels. Returns
    ``None`` when the prediction was not pooled (rank beyond ``top_k``) or its group has no label
    yet.
    This is for display and auditing: metrics use IoU against positive moments, not membership
    (see :func:`moment_recall_table`), so a chain member far from the hull is not credited with it.
    """
    key = index.get((prediction.run, prediction.caption, prediction.rank))
    if key is None:
        return None
    return labels.get(key)


def positive_moments_from_labels(
    original: Mapping[str, Sequence[tuple[str, float, float]]],
    groups: Sequence[MomentGroup],
    labels: Mapping[tuple[str, str, int], str],
    *,
    relevant_label: str = "relevant",
) -> dict[str, list[tuple[str, float, float]]]:
    """Corrected positive moments per caption: the original moments plus relevant judged spans.

    The original moments always stay positive (FIRE's convention, methodology section 3).
    """
    positives = {c: list(moms) for c, moms in original.items()}
    for g in groups:
        if labels.get(g.key) == relevant_label:
            positives.setdefault(g.caption, []).append((g.video, g.start, g.end))
    return positives


@dataclass(frozen=True)
class MomentRecallTable:
    """Rows = runs, columns = ``columns``; values are fractions in [0, 1] (papers print x100)."""

    columns: tuple[str, ...]
    rows: dict[str, dict[str, float]]
    n_captions: int


def _column(k: int, iou: float | None) -> str:
    return f"R@{k} IoU={iou:g}" if iou is not None else f"Video R@{k}"


def moment_recall_table(
    runs: Mapping[str, Mapping[str, Sequence[tuple[str, float, float]]]],
    positives: Mapping[str, Sequence[tuple[str, float, float]]],
    *,
    ks: Sequence[int] = (1, 5, 10),
    iou_thresholds: Sequence[float] = (0.5, 0.7),
) -> MomentRecallTable:
    """R@K at each IoU threshold, and video-level R@K, for every run.

    Inputs:
      ``runs[run][caption]`` = that run's predictions for the caption in rank order, each
      ``(video, start, end)``;
      ``positives[caption]`` = corrected positive moments ``(video, start, end)``.

    Definitions (means over the captions of ``positives``; a caption a run did not answer counts 0,
    as ir_measures does):
      * ``R@K IoU=t``: 1 if some prediction among the run's first K has IoU >= t with a positive
        moment of the same caption *and* video.
      * ``Video R@K``: 1 if a video holding a positive moment is among the first K *distinct*
        videos of the ranking (videos in order of first appearance), i.e. the video-retrieval
        stage of corpus moment retrieval; a video repeated with several spans is counted once.

    Output: :class:`MomentRecallTable` with columns ordered as moment-retrieval papers print them:
    R@ks at the first IoU, R@ks at the next IoU, ..., then Video R@ks.
    """
    ks = tuple(int(k) for k in ks)
    if not ks or min(ks) < 1:
        raise ValueError(f"ks must be positive integers, got {ks}")
    kmax = max(ks)
    ts = tuple(float(t) for t in iou_thresholds)
    columns = tuple(_column(k, t) for t in ts for k in ks) + tuple(_column(k, None) for k in ks)

    # Plain tuples, not arrays: a caption has a handful of positives, and scalar Python beats
    # NumPy call overhead at that size (the table is computed for 10^4+ captions per run).
    pos_by_caption: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for caption, moms in positives.items():
        per_video: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for video, s, e in moms:
            _check_span(s, e, (caption, video, s, e))
            per_video[video].append((float(s), float(e)))
        pos_by_caption[caption] = dict(per_video)
    n = len(pos_by_caption)

    rows: dict[str, dict[str, float]] = {}
    for run in sorted(runs):
        hits = {c: 0 for c in columns}
        preds_by_caption = runs[run]
        for caption, pos in pos_by_caption.items():
            preds = list(preds_by_caption.get(caption, ()))[:kmax]
            if not preds:
                continue
            # First rank (0-based) of a correct prediction for each threshold; inf when none.
            first_ok = [math.inf] * len(ts)
            for r, (video, s, e) in enumerate(preds):
                _check_span(s, e, (run, caption, video, s, e))
                if video in pos:
                    best = max(temporal_iou((s, e), span) for span in pos[video])
                    for ti, t in enumerate(ts):
                        if first_ok[ti] == math.inf and best >= t - IOU_TOLERANCE:
                            first_ok[ti] = r
            videos = list(dict.fromkeys(v for v, _, _ in preds_by_caption.get(caption, ())))
            first_video = next((i for i, v in enumerate(videos[:kmax]) if v in pos), math.inf)
            for k in ks:
                for ti, t in enumerate(ts):
                    hits[_column(k, t)] += int(first_ok[ti] < k)
                hits[_column(k, None)] += int(first_video < k)
        rows[run] = {c: (hits[c] / n if n else 0.0) for c in columns}
    return MomentRecallTable(columns=columns, rows=rows, n_captions=n)


def format_recall_table(table: MomentRecallTable, *, digits: int = 2) -> str:
    """Plain-text table (values x100) in the layout of moment-retrieval papers."""
    head = ["Run", *table.columns]
    body = [[run, *(f"{100 * vals[c]:.{digits}f}" for c in table.columns)]
            for run, vals in table.rows.items()]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    lines = ["  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in
                       enumerate(zip(row, widths))) for row in [head, *body]]
    return "\n".join(lines)
