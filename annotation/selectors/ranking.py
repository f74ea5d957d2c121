"""Reads for ranking studies and semantic proxies: inputs of the proxy functions, progress,
what a rater is shown, the rated tasks a report needs, and runs as similarity matrices."""
from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
from django.db.models import Count, Exists, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Coalesce

from annotation.analysis import ranking_study
from annotation.models import (Artefact, Caption, Clip, Dataset, Prediction, RankingStudy, RankingSubmission, RankingTask,
                               Report, Run)

PROXY_REPORT_KINDS = ("human_proxy", "proxy_ndcg", "proxy_analysis")


@dataclass(frozen=True)
class ProxyInputs:
    """A dataset laid out for annotation.analysis.proxies: rows = clips, columns = captions,
    both in id order; `caption_owner[j]` is the row of caption j's original clip (-1 for none)."""

    clip_ids: list[int]
    caption_ids: list[int]
    clip_captions: list[list[str]]
    captions: list[str]
    caption_owner: np.ndarray


def proxy_inputs(*, dataset: Dataset, clip_ids: list[int] | None = None) -> ProxyInputs:
    """All clips (or only `clip_ids`, in that order) against all captions of the dataset."""
    if clip_ids is None:
        clip_ids = list(Clip.objects.filter(dataset=dataset).order_by("pk").values_list("pk", flat=True))
    row_of = {pk: i for i, pk in enumerate(clip_ids)}
    caption_ids, captions, owner = [], [], []
    clip_captions: list[list[str]] = [[] for _ in clip_ids]
    rows = Caption.objects.filter(dataset=dataset).order_by("pk").values_list("pk", "text", "original_clip_id")
    for pk, text, original in rows:
        caption_ids.append(pk)
        captions.append(text)
        row = row_of.get(original, -1)
        owner.append(row)
        if row >= 0:
            clip_captions[row].append(text)
    return ProxyInputs(list(clip_ids), caption_ids, clip_captions, captions, np.asarray(owner, dtype=np.int64))


def clips_with_captions(*, dataset: Dataset) -> list[int]:
    """Clips that have at least one caption written for them (the ones a study can sample), in id order."""
    return list(Clip.objects.filter(dataset=dataset, original_captions__isnull=False).distinct()
                .order_by("pk").values_list("pk", flat=True))


# --- ranking studies -------------------------------------------------------------------------

def ranking_study_list(*, dataset_id: int | None = None):
    studies = RankingStudy.objects.select_related("dataset")
    return studies.filter(dataset_id=dataset_id) if dataset_id else studies


def rater_ranking_studies(*, rater):
    """The rater's studies, each annotated with `submitted` (their orderings) and `left` (tasks
    still short of orderings that they have not ordered)."""
    mine = RankingSubmission.objects.filter(task=OuterRef("pk"), rater=rater)
    left = (RankingTask.objects.filter(study=OuterRef("pk"), completed_at__isnull=True).filter(~Exists(mine))
            .order_by().values("study").annotate(n=Count("pk")).values("n"))
    return (RankingStudy.objects.filter(memberships__rater=rater).select_related("dataset")
            .annotate(submitted=Count("tasks__submissions", filter=Q(tasks__submissions__rater=rater)),
                      left=Coalesce(Subquery(left), 0))
            .order_by("name", "pk"))


def ranking_study_progress(*, study: RankingStudy) -> dict:
    """Tasks done and left, overall and per proxy, counted orderings, live leases, members."""
    tasks = RankingTask.objects.filter(study=study)
    complete = Count("id", filter=Q(completed_at__isnull=False))
    per_proxy = {row["proxy"]: {"tasks": row["n"], "complete": row["complete"], "submissions": row["subs"] or 0}
                 for row in tasks.values("proxy").order_by("proxy").annotate(n=Count("id"), complete=complete,
                                                                             subs=Sum("submission_count"))}
    totals = tasks.aggregate(n=Count("id"), complete=complete, subs=Sum("submission_count"), leases=Sum("active_leases"))
    n = totals["n"]
    return {
        "tasks": n,
        "complete": totals["complete"],
        "complete_fraction": totals["complete"] / n if n else None,
        "submissions": totals["subs"] or 0,
        "submissions_needed": n * study.raters_per_task,
        "surplus_submissions": RankingSubmission.objects.filter(task__study=study, counted=False).count(),
        "active_leases": totals["leases"] or 0,
        "members": study.memberships.count(),
        "per_proxy": per_proxy,
    }


def ranking_study_reports(*, study: RankingStudy):
    return Report.objects.filter(kind="human_proxy", dataset=study.dataset_id, params__study_id=study.pk)


def ranking_task_display(*, task: RankingTask, rater) -> list[dict]:
    """The five captions as a rater sees them: id and text only, in an order shuffled with a seed
    of (study seed, task, rater), so a reloaded page shows the same order while different raters
    see different ones (position effects do not line up across raters and fake consistency)."""
    rows = sorted(task.captions.select_related("caption"), key=lambda c: c.caption_id)
    random.Random(f"{task.study.seed}:{task.pk}:{rater.pk}").shuffle(rows)
    return [{"id": row.caption_id, "text": row.caption.text} for row in rows]


def ranking_rated_tasks(*, study: RankingStudy, proxy: str) -> list[ranking_study.RankingTask]:
    """The complete tasks of one proxy as the analysis reads them: the five caption ids in the
    proxy's order, their proxy scores, and the counted orderings (oldest first)."""
    tasks = (RankingTask.objects.filter(study=study, proxy=proxy, completed_at__isnull=False)
             .order_by("pk").prefetch_related("captions", "submissions"))
    rated = []
    for task in tasks:
        captions = list(task.captions.all())  # ordered by candidate_rank
        orderings = [s.order for s in sorted(task.submissions.all(), key=lambda s: (s.created_at, s.pk)) if s.counted]
        rated.append(ranking_study.RankingTask(caption_ids=[c.caption_id for c in captions],
                                               proxy_scores=[c.score for c in captions], orderings=orderings))
    return rated


# --- proxy matrices and reports --------------------------------------------------------------

def proxy_matrix_list(*, dataset: Dataset):
    return Artefact.objects.filter(dataset=dataset, kind="proxy_matrix")


def proxy_report_list(*, dataset: Dataset | None = None):
    reports = Report.objects.filter(kind__in=PROXY_REPORT_KINDS).select_related("dataset")
    return reports.filter(dataset=dataset) if dataset else reports


@dataclass(frozen=True)
class RunSimilarity:
    """A run as a clips x captions similarity matrix; unranked cells are -inf."""

    matrix: np.ndarray
    score_source: str  # "score", or "negative_rank" when the run has predictions without a score
    predictions: int
    captions_ranked: int
    clips_ranked: int


def run_similarity(*, run: Run, clip_ids: list[int], caption_ids: list[int]) -> RunSimilarity:
    """Rows and columns follow `clip_ids` and `caption_ids` (a proxy matrix's layout).

    The run's scores are the similarities when every prediction has one; otherwise -rank for all
    (ranks order each caption's clips but are not comparable across captions, so video-to-text
    then only approximates the model). A clip predicted several times for one caption (moment
    runs: several spans) keeps its best value."""
    row = {pk: i for i, pk in enumerate(clip_ids)}
    col = {pk: j for j, pk in enumerate(caption_ids)}
    predictions = Prediction.objects.filter(run=run)
    use_scores = not predictions.filter(score__isnull=True).exists()
    values = predictions.values_list("clip_id", "caption_id", "score" if use_scores else "rank")
    rows, cols, vals = [], [], []
    for clip_id, caption_id, value in values.iterator(chunk_size=20000):
        if clip_id not in row or caption_id not in col:
            raise ValueError(f"run '{run.name}' ranks clip {clip_id} / caption {caption_id}, which the proxy matrix lacks")
        rows.append(row[clip_id])
        cols.append(col[caption_id])
        vals.append(value if use_scores else -value)
    matrix = np.full((len(clip_ids), len(caption_ids)), -np.inf)
    if vals:
        np.maximum.at(matrix, (np.asarray(rows), np.asarray(cols)), np.asarray(vals, dtype=np.float64))
    return RunSimilarity(matrix, "score" if use_scores else "negative_rank", len(vals),
                         len(set(cols)), len(set(rows)))


def proxy_overview() -> list[dict]:
    """Per dataset: its proxy matrices, ranking studies with their progress, and proxy reports."""
    return [{"dataset": dataset, "matrices": list(proxy_matrix_list(dataset=dataset)),
             "studies": [{"study": s, "progress": ranking_study_progress(study=s)}
                         for s in ranking_study_list(dataset_id=dataset.pk)],
             "reports": list(proxy_report_list(dataset=dataset))}
            for dataset in Dataset.objects.order_by("name")]


def proxy_report_tables(*, report: Report) -> dict:
    """A proxy report's result as table rows for the pages."""
    result = report.result or {}
    if report.kind == "human_proxy":
        return {"proxies": [(proxy, result.get("proxies", {}).get(proxy, {})) for proxy in report.params.get("proxies", [])]}
    if report.kind == "proxy_analysis":
        curves = result.get("relevant_captions_per_clip", {})
        labels = list(curves)
        rows = [(t, [curves[label][k] for label in labels]) for k, t in enumerate(result.get("thresholds", []))]
        return {"labels": labels, "curve_rows": rows, "pearson": result.get("pearson", [])}
    return {}
