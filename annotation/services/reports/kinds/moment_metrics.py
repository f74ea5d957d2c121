"""The `moment_metrics` report kind: R@K at temporal IoU 0.5 and 0.7 and video-level R@K
(`annotation.analysis.moments.moment_recall_table`), once against the corrected positive moments
(each caption's original moment plus every judged span resolved relevant) and once against the
original moments only, over the same captions, so the change the labels make can be read off
(FIRE's "A (B + C)"). Videos are compared by `Clip.video_id`, so a prediction on a whole-video
clip matches an original moment stored as a segment clip of that video. A caption's original
moment is its original clip's span, or the whole clip [0, duration] when the clip has no span;
an original clip with neither gives no original moment.

Its parameters (runs, ks, IoU thresholds) are declared on KIND; the report is computed as an
operation (reports/operations.py). Its own pages and CSV show it, so it lays out no tables here.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction

from annotation.analysis.moments import MomentGroup, moment_recall_table, positive_moments_from_labels
from annotation.models import Caption, Clip, Job, MomentPoolDesign, Pool, PooledPair, Prediction, Report, Run
from annotation.selectors.reports import FETCH
from annotation.services.reports.kind import Param, ReportError, ReportKind
from annotation.services.reports.runs import report_runs
from annotation.services.reports.store import report_store

MOMENT_METRICS = "moment_metrics"


def moment_design(pool: Pool) -> MomentPoolDesign:
    design = MomentPoolDesign.objects.filter(pool=pool).first()
    if design is None:
        raise ReportError(f"pool '{pool.name}' is not a moment pool")
    return design


def _original_moments(pool: Pool) -> dict[str, list[tuple[str, float, float]]]:
    originals: dict[str, list[tuple[str, float, float]]] = {}
    for caption, video, start, end, duration in Caption.objects.filter(
            dataset=pool.dataset_id, original_clip__isnull=False).values_list(
            "pk", "original_clip__video_id", "original_clip__start", "original_clip__end", "original_clip__duration"):
        if start is not None:
            originals[str(caption)] = [(video, start, end)]
        elif duration:
            originals[str(caption)] = [(video, 0.0, duration)]
    return originals


@dataclass(frozen=True)
class MomentPoolInputs:
    """What a moment pool's runs are scored on: each run's predictions per caption in rank order
    (``(video, start, end)``), the original and corrected positive moments per caption, the
    captions scored (answered by some run and with a corrected positive), the judged spans and
    their resolved labels."""

    ranked: dict[str, dict[str, list[tuple[str, float, float]]]]
    original: dict[str, list[tuple[str, float, float]]]
    corrected: dict[str, list[tuple[str, float, float]]]
    captions: list[str]
    answered: set[str]
    spans: list[tuple]
    labels: dict[tuple[str, str, int], str]


def moment_pool_inputs(pool: Pool, runs: Sequence[Run]) -> MomentPoolInputs:
    video_of = dict(Clip.objects.filter(dataset=pool.dataset_id).values_list("pk", "video_id"))
    name_of = {run.pk: run.name for run in runs}
    ranked: dict[str, dict[str, list[tuple[str, float, float]]]] = {run.name: defaultdict(list) for run in runs}
    # Every rank, not only the first max(ks): video R@K counts the first K *distinct* videos, which
    # can lie deeper when a run ranks several moments of one video.
    rows = (Prediction.objects.filter(run__in=runs).order_by("run_id", "caption_id", "rank")
            .values_list("run_id", "caption_id", "clip_id", "start", "end"))
    for run, caption, clip, start, end in rows.iterator(chunk_size=FETCH):
        ranked[name_of[run]][str(caption)].append((video_of[clip], start, end))
    answered = set().union(*(per_caption.keys() for per_caption in ranked.values()))

    spans = list(PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL).values_list(
        "pk", "caption_id", "clip_id", "start", "end", "state", "resolved_label"))
    groups = [MomentGroup(str(caption), video_of[clip], pk, start, end, (), 1.0) for pk, caption, clip, start, end, _, _ in spans]
    labels = {(str(caption), video_of[clip], pk): label for pk, caption, clip, _, _, state, label in spans
              if state == PooledPair.State.RESOLVED}
    original = _original_moments(pool)
    corrected = positive_moments_from_labels(original, groups, labels)
    captions = sorted(c for c in answered if corrected.get(c))
    return MomentPoolInputs(ranked, original, corrected, captions, answered, spans, labels)


@transaction.atomic
def moment_metrics_report_create(*, pool: Pool, run_ids: Sequence[int] | None = None, ks: Sequence[int] = (1, 5, 10),
                                 iou_thresholds: Sequence[float] = (0.5, 0.7), created_by=None,
                                 job: Job | None = None) -> Report:
    design = moment_design(pool)
    runs = report_runs(pool, run_ids, Run.Kind.MOMENT)
    ks, iou_thresholds = sorted({int(k) for k in ks}), [float(t) for t in iou_thresholds]
    inputs = moment_pool_inputs(pool, runs)
    ranked, original, corrected, captions = inputs.ranked, inputs.original, inputs.corrected, inputs.captions
    answered, spans, labels = inputs.answered, inputs.spans, inputs.labels
    with_labels = moment_recall_table(ranked, {c: corrected[c] for c in captions}, ks=ks, iou_thresholds=iou_thresholds)
    original_only = moment_recall_table(ranked, {c: original.get(c, []) for c in captions}, ks=ks,
                                        iou_thresholds=iou_thresholds)
    result = {
        "columns": list(with_labels.columns),
        "n_captions": with_labels.n_captions,
        "captions_without_positive": len(answered) - len(captions),
        "runs": [{"run_id": run.pk, "run": run.name, "corrected": with_labels.rows[run.name],
                  "original": original_only.rows[run.name]} for run in runs],
        "spans": {"judged_spans": len(spans), "resolved": len(labels),
                  "relevant": sum(1 for label in labels.values() if label == PooledPair.Answer.RELEVANT),
                  "waiting": len(spans) - len(labels)},
    }
    params = {"pool_id": pool.pk, "run_ids": [run.pk for run in runs], "ks": ks, "iou_thresholds": iou_thresholds,
              "merge_iou_threshold": design.iou_threshold,
              "positives": "original moment plus judged spans resolved relevant; videos matched by video_id"}
    return report_store(kind=MOMENT_METRICS, dataset_id=pool.dataset_id, pool=pool, title=f"Moment metrics: {pool.name}",
                        params=params, result=result, job=job, created_by=created_by)


KIND = ReportKind(name=MOMENT_METRICS, title=None, params={
    "run_ids": Param(list, None, "ids of the moment runs of the dataset scored (null: the pool's runs)", 1, None,
                     nullable=True, unique_sorted=False),
    "ks": Param(list, [1, 5, 10], "the cut-offs K of R@K", 1, 1000),
    "iou_thresholds": Param(list, [0.5, 0.7], "temporal IoU thresholds a prediction must reach", 0.01, 1, items=float),
})
