"""Stored reports of the moments area: moment metrics of a moment pool, inferred AP of a sampled pool.

Moment metrics (kind "moment_metrics"): R@K at temporal IoU 0.5 and 0.7 and video-level R@K
(`annotation.analysis.moments.moment_recall_table`), once against the corrected positive moments
(each caption's original moment plus every judged span resolved relevant) and once against the
original moments only, over the same captions, so the change the labels make can be read off
(FIRE's "A (B + C)"). Videos are compared by `Clip.video_id`, so a prediction on a whole-video
clip matches an original moment stored as a segment clip of that video. A caption's original
moment is its original clip's span, or the whole clip [0, duration] when the clip has no span;
an original clip with neither gives no original moment.

Inferred AP (kind "infap"): per run and caption, from a sampled pool's judgments. A sampled
document counts as judged once its pair is resolved (the caption's original positive counts as
relevant whatever raters say, FIRE's convention); sampled documents still waiting for labels count
as unjudged, which leaves the estimate unbiased as long as labels do not arrive in an order that
depends on relevance. Pairs resolved from imported judgments when the pool was built are judged
with certainty (inclusion probability 1): each document is weighted by its own stored inclusion
probability, through the cells of annotation.analysis.sampled_pools.cell_label (formulas there).
The stratified estimator xinfAP is reported for every design; trec_eval's infAP (ir_measures)
only when every stratum has the same rate and no pair came from imports, because it assumes one
uniform sample and is biased on stratified pools.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from django.db import transaction

from annotation.analysis.infap import infap_trec_eval_runs, xinfap_runs
from annotation.analysis.moments import MomentGroup, moment_recall_table, positive_moments_from_labels
from annotation.analysis.query_chart import per_query_summary, query_sort_key
from annotation.analysis.sample_eval import TRECVID_MAX_RESULT_SIZE
from annotation.analysis.sampled_pools import cell_label
from annotation.models import (Caption, Clip, Job, MomentPoolDesign, Pool, PooledPair, PoolRun, Prediction, Report, Run,
                               SampledDocument, SampledPoolDesign)
from annotation.selectors.score_matrix_runs import run_prediction_rows
from annotation.services.jobs import job_create, job_enqueue, task_names
from annotation.services.reports.kind import ReportError
from annotation.services.reports.kinds.infap import KIND as INFAP_KIND
from annotation.services.reports.kinds.moment_metrics import KIND as MOMENT_METRICS_KIND
from annotation.services.reports.store import report_store

MOMENT_METRICS = MOMENT_METRICS_KIND.name
INFAP = INFAP_KIND.name
CHUNK = 20_000


def _report_runs(pool: Pool, run_ids: Sequence[int] | None, kind: str) -> list[Run]:
    """The pool's runs by default; other runs of the dataset may be scored against its labels."""
    if run_ids is None:
        return [pr.run for pr in PoolRun.objects.filter(pool=pool).select_related("run").order_by("pk")]
    found = Run.objects.in_bulk(run_ids)
    runs = [found[pk] for pk in run_ids if pk in found and found[pk].dataset_id == pool.dataset_id]
    missing = sorted(set(run_ids) - {r.pk for r in runs})
    if missing:
        raise ReportError(f"runs {missing} do not exist in dataset '{pool.dataset.name}'")
    wrong = [r.name for r in runs if r.kind != kind]
    if wrong:
        raise ReportError(f"runs {wrong} are not {kind} runs")
    return runs


def _moment_design(pool: Pool) -> MomentPoolDesign:
    design = MomentPoolDesign.objects.filter(pool=pool).first()
    if design is None:
        raise ReportError(f"pool '{pool.name}' is not a moment pool")
    return design


def _sampled_design(pool: Pool) -> SampledPoolDesign:
    design = SampledPoolDesign.objects.filter(pool=pool).first()
    if design is None:
        raise ReportError(f"pool '{pool.name}' is not a sampled pool")
    return design


# --- moment metrics ---------------------------------------------------------------------------

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


@transaction.atomic
def moment_metrics_report_create(*, pool: Pool, run_ids: Sequence[int] | None = None, ks: Sequence[int] = (1, 5, 10),
                                 iou_thresholds: Sequence[float] = (0.5, 0.7), created_by=None,
                                 job: Job | None = None) -> Report:
    design = _moment_design(pool)
    runs = _report_runs(pool, run_ids, Run.Kind.MOMENT)
    ks, iou_thresholds = sorted({int(k) for k in ks}), [float(t) for t in iou_thresholds]
    video_of = dict(Clip.objects.filter(dataset=pool.dataset_id).values_list("pk", "video_id"))
    name_of = {run.pk: run.name for run in runs}
    ranked: dict[str, dict[str, list[tuple[str, float, float]]]] = {run.name: defaultdict(list) for run in runs}
    # Every rank, not only the first max(ks): video R@K counts the first K *distinct* videos, which
    # can lie deeper when a run ranks several moments of one video.
    rows = (Prediction.objects.filter(run__in=runs).order_by("run_id", "caption_id", "rank")
            .values_list("run_id", "caption_id", "clip_id", "start", "end"))
    for run, caption, clip, start, end in rows.iterator(chunk_size=CHUNK):
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


@transaction.atomic
def moment_metrics_report_start(*, pool: Pool, run_ids: list[int] | None, ks: list[int], iou_thresholds: list[float],
                                created_by) -> Job:
    _moment_design(pool)
    _report_runs(pool, run_ids, Run.Kind.MOMENT)
    job = job_create(kind=MOMENT_METRICS, params={"pool_id": pool.pk, "run_ids": run_ids, "ks": ks,
                                                  "iou_thresholds": iou_thresholds}, created_by=created_by)
    return job_enqueue(job=job, task=task_names.MOMENT_METRICS_REPORT)


# --- inferred AP ------------------------------------------------------------------------------

_STILL_OPEN = (PooledPair.State.OPEN, PooledPair.State.ADJUDICATION)
_DECIDED = (PooledPair.State.RESOLVED, PooledPair.State.DISAGREEMENT)


def _sampled_qrels(pool: Pool, design: SampledPoolDesign, caption_ext: dict[int, str]
                   ) -> tuple[dict[str, dict[str, tuple[int | str, int]]], list[dict]]:
    """Stratified qrels {caption external id: {clip pk: (cell, relevance)}} with relevance -1
    for documents not (yet) judged, and per stratum the pooled, sampled, from-imports, judged,
    relevant and waiting counts. The cell is the stratum, split by inclusion probability
    (`cell_label`), so pairs judged for certain are weighted 1 and the drawn ones by their share."""
    strata = [{"stratum": s, "lo": lo, "hi": hi, "rate": rate, "pooled": 0, "sampled": 0, "from_imports": 0, "judged": 0,
               "relevant": 0, "waiting": 0} for s, (lo, hi, rate) in enumerate(design.strata)]
    qrels: dict[str, dict[str, tuple[int | str, int]]] = defaultdict(dict)
    rows = SampledDocument.objects.filter(pool=pool).values_list(
        "caption_id", "clip_id", "stratum", "sampled", "inclusion_probability", "pair__state", "pair__resolved_label",
        "pair__is_original_positive", "pair__vote_count", "pair__resolved_by_admin")
    for caption, clip, stratum, sampled, inclusion, state, label, original, votes, by_admin in rows.iterator(
            chunk_size=CHUNK):
        relevance = -1
        if sampled and original:
            relevance = 1
        elif sampled and state == PooledPair.State.RESOLVED:
            relevance = int(label == PooledPair.Answer.RELEVANT)
        rate = design.strata[stratum][2]
        qrels[caption_ext[caption]][str(clip)] = (cell_label(stratum, rate, inclusion), relevance)
        counts = strata[stratum]
        counts["pooled"] += 1
        counts["sampled"] += sampled
        # Decided with no vote and not by an admin: the verdict came from imported judgments (services/pools.py).
        counts["from_imports"] += bool(sampled and state in _DECIDED and not votes and not by_admin)
        counts["judged"] += relevance >= 0
        counts["relevant"] += relevance >= 1
        counts["waiting"] += bool(sampled and relevance < 0 and state in _STILL_OPEN)
    return dict(qrels), strata


@transaction.atomic
def infap_report_create(*, pool: Pool, run_ids: Sequence[int] | None = None, created_by=None,
                        job: Job | None = None, max_result_size: int | None = TRECVID_MAX_RESULT_SIZE) -> Report:
    """`max_result_size`: NIST's rule (default 1,000, as TRECVID scores); None scores every rank
    without rescaling, as trec_eval does."""
    design = _sampled_design(pool)
    runs = _report_runs(pool, run_ids, Run.Kind.CLIP)
    caption_ext = dict(Caption.objects.filter(dataset=pool.dataset_id).values_list("pk", "external_id"))
    qrels, strata = _sampled_qrels(pool, design, caption_ext)
    name_of = {run.pk: run.name for run in runs}
    ranked: dict[str, dict[str, list[str]]] = {run.name: defaultdict(list) for run in runs}
    for run, caption, clip, _ in run_prediction_rows(runs=runs, depth=pool.depth):
        ranked[name_of[run]][caption_ext[caption]].append(str(clip))

    from_imports = sum(s["from_imports"] for s in strata)
    # Pairs taken from imports with probability 1 beside a sample at rate < 1 make the design stratified.
    uniform = len({rate for _, _, rate in design.strata}) == 1 and (not from_imports or design.strata[0][2] == 1)
    scores = {"xinfAP": xinfap_runs(ranked, qrels, max_result_size=max_result_size)}
    if uniform:
        flat = {q: {d: relevance for d, (_, relevance) in judged.items()} for q, judged in qrels.items()}
        scores["infAP"] = infap_trec_eval_runs(ranked, flat)
    measure = "infAP" if uniform else "xinfAP"
    queries = sorted(qrels, key=query_sort_key)
    judged = sum(s["judged"] for s in strata)
    waiting = sum(s["waiting"] for s in strata)
    result = {
        "measure": measure,
        "measures": list(scores),
        "conventions": (f"xinfAP as NIST's sample_eval.pl: AP rescaled by R_hat/{max_result_size} when the estimated "
                        f"relevant count R_hat exceeds {max_result_size} (TRECVID's max result size)"
                        if max_result_size else "xinfAP without a max result size (every rank scored, no rescaling)")
                       + "; each run in its own rank order up to the pool depth; trec_eval's infAP, where shown, has "
                         "no max result size",
        "uniform_sample": uniform,
        "strata": strata,
        "judgments": {"full_pool_size": design.full_pool_size, "sampled": design.sampled_count,
                      "from_imports": from_imports, "judged": judged, "waiting": waiting, "final": waiting == 0,
                      "saved": design.judgments_saved,
                      "saved_fraction": design.judgments_saved / design.full_pool_size if design.full_pool_size else 0.0},
        "queries": queries,
        "runs": [{"run_id": run.pk, "run": run.name,
                  "mean": {m: scores[m][run.name].mean for m in scores},
                  "per_query": {m: scores[m][run.name].per_query for m in scores}} for run in runs],
        "queries_without_relevant": list(scores[measure][runs[0].name].queries_without_relevant) if runs else [],
    }
    summary = per_query_summary({run.name: scores[measure][run.name].per_query for run in runs})
    result["per_query_summary"] = {q: {"median": s.median, "best": s.best, "best_runs": list(s.best_runs)}
                                   for q, s in summary.items()}
    params = {"pool_id": pool.pk, "run_ids": [run.pk for run in runs], "strata": design.strata, "seed": pool.seed,
              "size_rule": design.size_rule, "max_result_size": max_result_size,
              "judged": "sampled pairs resolved by raters, and pairs resolved from imported judgments (inclusion "
                        "probability 1); a caption's original positive counts as relevant",
              "weights": "Horvitz-Thompson: each judged pair by its own inclusion probability (strata split into cells "
                         "of pairs judged for certain and pairs drawn; annotation/analysis/sampled_pools.py)"}
    return report_store(kind=INFAP, dataset_id=pool.dataset_id, pool=pool, title=f"Inferred AP: {pool.name}",
                        params=params, result=result, job=job, created_by=created_by)


@transaction.atomic
def infap_report_start(*, pool: Pool, run_ids: list[int] | None, created_by,
                       max_result_size: int | None = TRECVID_MAX_RESULT_SIZE) -> Job:
    _sampled_design(pool)
    _report_runs(pool, run_ids, Run.Kind.CLIP)
    if max_result_size is not None and max_result_size < 1:
        raise ReportError("max_result_size must be a positive number of results, or null for none")
    job = job_create(kind=INFAP, params={"pool_id": pool.pk, "run_ids": run_ids, "max_result_size": max_result_size},
                     created_by=created_by)
    return job_enqueue(job=job, task=task_names.INFAP_REPORT)
