"""A ranking study's background operations (services/operations/): building the study (each
proxy's rows for the sampled clips, five captions per clip and proxy, the tasks) and its
human-to-proxy report. Declared once here: the parameters (the proxy pipeline's are the proxy
matrices' own, services/proxies/operations.py; the report has none, as its kind declares), the
check that refuses a request before a job exists (a mistake is a 400, not a failed job), the run."""
from __future__ import annotations

from dataclasses import replace

from annotation.analysis.params import REQUIRED, Param
from annotation.models import Dataset, Job, RankingStudy, RankingTask
from annotation.services.jobs import task_names
from annotation.services.operations.operation import Operation
from annotation.services.operations.start import operation_job
from annotation.services.proxies.matrices import ProxyError
from annotation.services.proxies.operations import MATRIX_PARAMS
from annotation.services.ranking.report import ranking_report_create
from annotation.services.ranking.study import proxies_distinct_check, ranking_study_check, ranking_study_create
from annotation.services.reports.kinds.human_proxy import KIND as HUMAN_PROXY

# --- building a study --------------------------------------------------------------------------

STUDY_PARAMS = {
    "name": Param(str, REQUIRED, "the study's name, unique in its dataset", max_length=200),
    "proxies": replace(MATRIX_PARAMS["proxies"], description="the proxies whose five captions per clip are ranked, "
                       "each once: one task per clip and proxy"),
    "n_clips": Param(int, 100, "clips sampled (seeded) from those with a caption", 1, 10000),
    "seed": Param(int, 0, "seed of the clip sample and of the order tasks are handed out in", 0, 2**62),
    "mode": MATRIX_PARAMS["mode"],
    # A study names its synsets: the mode's choice is a matrix's convenience.
    "synsets": replace(MATRIX_PARAMS["synsets"], default="wordnet", nullable=False,
                       description="SYN's synsets: WordNet synsets chosen by Lesk, or the EPIC-KITCHENS-100 verb/noun "
                                   "classes"),
    "min_fraction": MATRIX_PARAMS["min_fraction"],
    "raters_per_task": Param(int, 3, "orderings each task needs, from distinct raters", 2, 10),
    "lease_seconds": Param(int, 600, "how long a rater holds a task before it goes back to the queue", 30, 24 * 3600),
}


def _study_check(*, target: Dataset, params: dict) -> None:
    ranking_study_check(dataset=target, name=params["name"], proxies=params["proxies"], n_clips=params["n_clips"],
                        mode=params["mode"], synsets=params["synsets"])


def _study_run(job: Job, progress) -> dict:
    p = dict(job.params)
    dataset = Dataset.objects.get(pk=p.pop("dataset_id"))
    study = ranking_study_create(dataset=dataset, created_by=job.created_by, job=job, progress=progress, **p)
    return {"study_id": study.pk, "name": study.name, "tasks": study.tasks.count()}


STUDY_BUILD = Operation(
    name="build_ranking_study", title="Build a ranking study", params=STUDY_PARAMS, check=_study_check,
    run=_study_run, target=Dataset, target_field="dataset_id", error=ProxyError,
    legacy_task=task_names.BUILD_RANKING_STUDY)


def ranking_study_start(*, dataset: Dataset, created_by=None, **params) -> Job:
    """Checks the request up front (mistakes get a 400, not a failed job) and queues the build.
    `params`: the declared ones (STUDY_PARAMS)."""
    if isinstance(params.get("proxies"), list):
        # The declared list keeps each name once, so a repeat is refused before it is dropped.
        proxies_distinct_check(params["proxies"])
    return operation_job(STUDY_BUILD, target=dataset, params=params, created_by=created_by)


# --- the human-to-proxy report -----------------------------------------------------------------

def _report_check(*, target: RankingStudy, params: dict) -> None:
    if not RankingTask.objects.filter(study=target, completed_at__isnull=False).exists():
        raise ProxyError("no task of this study has all its orderings yet")


def _report_run(job: Job, progress) -> dict:
    study = RankingStudy.objects.get(pk=job.params["study_id"])
    return {"report_id": ranking_report_create(study=study, created_by=job.created_by, job=job).pk}


STUDY_REPORT = Operation(
    name="ranking_study_report", title="Human-to-proxy agreement of a ranking study", params=HUMAN_PROXY.params,
    check=_report_check, run=_report_run, target=RankingStudy, target_field="study_id", error=ProxyError,
    legacy_task=task_names.RANKING_STUDY_REPORT)


def ranking_report_start(*, study: RankingStudy, created_by) -> Job:
    return operation_job(STUDY_REPORT, target=study, created_by=created_by)


OPERATIONS = (STUDY_BUILD, STUDY_REPORT)
