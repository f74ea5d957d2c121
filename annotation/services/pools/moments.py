"""Moment pools: top-k moment predictions per caption across runs, overlapping spans merged.

A moment pool is an ordinary Pool whose pairs carry the judged span (start/end): raters judge the
span and the player plays only it, through the same queue as any pool. The merge rule is
`annotation.analysis.moments.pool_moments`: within one caption and clip, predictions whose temporal
IoU reaches the threshold are joined, chains included (connected components), and the judged span
is the hull of the group. The pool therefore does not depend on the order runs are listed in.
Which predictions each span stands for (run, rank, original span) is kept as MomentMember rows;
PairProvenance keeps each run's best rank in the group, as for whole-clip pools.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.db import transaction

from annotation.analysis import moments as analysis
from annotation.analysis.pair_hashes import needs_second_label, queue_positions
from annotation.analysis.params import Param, ParamInvalid
from annotation.models import (Caption, Clip, Dataset, MomentMember, MomentPoolDesign, PairProvenance, Pool,
                               PooledPair, PoolRun, Prediction, Run)
from annotation.services.pools.build import BATCH, PoolError


#: A moment pool's own parameters (the build operation, services/pools/operations.py, declares them
#: beside those every pool takes); checked here too, for the command line's direct build.
MOMENT_POOL_PARAMS = {
    "depth": Param(int, 10, "k: each run's top-k moments per caption are pooled", 1, 1000),
    "iou_threshold": Param(float, 0.7, "spans of one caption and clip whose temporal IoU reaches it are merged "
                           "(touching spans have IoU 0)", 0, 1, open_low=True),
}


def span_key(clip_external_id: str, start: float, end: float) -> str:
    """The clip key a judged span enters the pool's seeded hashes with, so that several spans of
    one clip get their own queue positions and redundancy draws instead of sharing the clip's."""
    return f"{clip_external_id}\x1f{start!r}\x1f{end!r}"


def moment_request_check(dataset: Dataset, name: str, runs: list[Run], depth: int, iou_threshold: float) -> None:
    if not runs:
        raise PoolError("a moment pool needs at least one run", param="run_ids")
    for run in runs:
        if run.dataset_id != dataset.pk:
            raise PoolError(f"run '{run.name}' belongs to another dataset", param="run_ids")
        if run.kind != Run.Kind.MOMENT:
            raise PoolError(f"run '{run.name}' is not a moment run (its predictions have no start and end)",
                            param="run_ids")
    for param, value in (("depth", depth), ("iou_threshold", iou_threshold)):
        try:
            MOMENT_POOL_PARAMS[param].check(value, name=param)
        except ParamInvalid as exc:
            raise PoolError(str(exc), param=param) from None
    if Pool.objects.filter(dataset=dataset, name=name).exists():
        raise PoolError(f"a pool named '{name}' already exists for '{dataset.name}'", param="name")


@transaction.atomic
def moment_pool_create(*, dataset: Dataset, name: str, runs: Iterable[Run], depth: int = 10, iou_threshold: float = 0.7,
                       redundancy: float = 0.1, seed: int = 0,
                       progress: Callable[[int, int | None], None] | None = None) -> Pool:
    runs = list(runs)
    moment_request_check(dataset, name, runs, depth, iou_threshold)
    rows = Prediction.objects.filter(run__in=runs, rank__lte=depth).values_list(
        "run_id", "caption_id", "clip_id", "rank", "score", "start", "end")
    try:
        predictions = (analysis.MomentPrediction(str(run), str(caption), str(clip), start, end, rank, score)
                       for run, caption, clip, rank, score, start, end in rows.iterator(chunk_size=BATCH))
        groups = analysis.pool_moments(predictions, top_k=depth, iou_threshold=iou_threshold)
    except analysis.InvalidMomentError as exc:
        raise PoolError(f"a prediction cannot be pooled: {exc}") from exc
    spans = _judged_spans(groups)
    if progress:
        progress(1, 3)
    pool = Pool.objects.create(dataset=dataset, name=name, depth=depth, redundancy=redundancy, seed=seed)
    MomentPoolDesign.objects.create(pool=pool, iou_threshold=iou_threshold)
    pairs = _insert_spans(pool, spans, iou_threshold)
    if progress:
        progress(2, 3)
    MomentMember.objects.bulk_create(
        (MomentMember(pair=pair, run_id=int(m.run), rank=m.rank, start=m.start, end=m.end, score=m.score)
         for pair, span in zip(pairs, spans) for m in span.members), batch_size=BATCH)
    PairProvenance.objects.bulk_create(
        (PairProvenance(pair=pair, run_id=int(run), rank=min(m.rank for m in span.members if m.run == run))
         for pair, span in zip(pairs, spans) for run in span.runs), batch_size=BATCH)
    _record_pool_runs(pool, runs, spans)
    if progress:
        progress(3, 3)
    return pool


@dataclass(frozen=True)
class _JudgedSpan:
    caption: int
    clip: int
    start: float
    end: float
    members: tuple[analysis.MomentMember, ...]

    @property
    def runs(self) -> list[str]:
        return sorted({m.run for m in self.members})


def _judged_spans(groups: list[analysis.MomentGroup]) -> list[_JudgedSpan]:
    """One span to judge per distinct hull. Two groups of a caption and clip can share a hull
    (two chains of spans of very different lengths); one label then answers for both."""
    members: dict[tuple[int, int, float, float], list[analysis.MomentMember]] = {}
    for g in groups:
        members.setdefault((int(g.caption), int(g.video), g.start, g.end), []).extend(g.members)
    return [_JudgedSpan(*key, tuple(found)) for key, found in members.items()]


def _insert_spans(pool: Pool, spans: list[_JudgedSpan], iou_threshold: float) -> list[PooledPair]:
    if not spans:
        return []
    caption_ext = dict(Caption.objects.filter(dataset=pool.dataset_id).values_list("pk", "external_id"))
    clip_rows = list(Clip.objects.filter(pk__in={s.clip for s in spans}).values_list("pk", "external_id", "video_id"))
    clip_ext = {pk: external_id for pk, external_id, _ in clip_rows}
    videos = {pk: video for pk, _, video in clip_rows}
    caption_keys = [caption_ext[s.caption] for s in spans]
    clip_keys = [span_key(clip_ext[s.clip], s.start, s.end) for s in spans]
    order = queue_positions(caption_keys, clip_keys, pool.seed)
    double = needs_second_label(caption_keys, clip_keys, pool.seed, pool.redundancy)
    originals = _original_clips(pool.dataset_id)
    return PooledPair.objects.bulk_create(
        (PooledPair(pool=pool, caption_id=s.caption, clip_id=s.clip, start=s.start, end=s.end, queue_order=int(o),
                    required_labels=2 if d else 1,
                    is_original_positive=_is_original(originals.get(s.caption), videos[s.clip], s, iou_threshold))
         for s, o, d in zip(spans, order, double)), batch_size=BATCH)


def _original_clips(dataset_id: int) -> dict[int, tuple[str, float | None, float | None]]:
    """Caption -> (video, start, end) of the clip it was written for (no span: the whole video)."""
    return {caption: (video, start, end) for caption, video, start, end in Caption.objects.filter(
        dataset=dataset_id, original_clip__isnull=False).values_list(
        "id", "original_clip__video_id", "original_clip__start", "original_clip__end")}


def _is_original(original, video: str, span: _JudgedSpan, iou_threshold: float) -> bool:
    """The judged span is the caption's original moment: same video, and the span matches the
    original one at the pool's merge threshold (any span matches an original without a span)."""
    if original is None or original[0] != video:
        return False
    if original[1] is None:
        return True
    return analysis.temporal_iou((span.start, span.end), (original[1], original[2])) >= iou_threshold - analysis.IOU_TOLERANCE


def _record_pool_runs(pool: Pool, runs: list[Run], spans: list[_JudgedSpan]) -> None:
    """A run 'adds' the spans that no run listed before it proposed."""
    position = {str(run.pk): index for index, run in enumerate(runs)}
    added = [0] * len(runs)
    for span in spans:
        added[min(position[r] for r in span.runs)] += 1
    PoolRun.objects.bulk_create([PoolRun(pool=pool, run=run, pairs_added=added[i]) for i, run in enumerate(runs)])
