"""The proxies area's background operations (services/operations/): computing a dataset's proxy
matrices, a run's graded nDCG against one, and the statistics of several (relevant captions per
clip, correlation between proxies). Each is declared once here: its parameters (the two reports'
are their report kinds' own, services/reports/kinds/), the check that refuses a request before a
job exists (a mistake is a 400, not a failed job), and the run that calls matrices.py."""
from __future__ import annotations

from annotation.analysis.params import REQUIRED, Param
from annotation.models import Artefact, Caption, Dataset, Job, Run
from annotation.services.jobs import task_names
from annotation.services.operations.operation import Operation
from annotation.services.operations.start import operation_job, operation_params_clean
from annotation.services.proxies.matrices import (MATRIX_PROXIES, MODES, SYNSET_SOURCES, ProxyError,
                                                  proxy_analysis_report_create, proxy_matrices_compute,
                                                  proxy_ndcg_check, proxy_ndcg_report_create,
                                                  proxy_random_baseline_table, proxy_synsets_check)
from annotation.services.reports.kinds.proxy_analysis import KIND as PROXY_ANALYSIS_KIND
from annotation.services.reports.kinds.proxy_ndcg import KIND as PROXY_NDCG_KIND

# --- proxy matrices ----------------------------------------------------------------------------

#: How a proxy's rows are computed; a ranking study (services/ranking/operations.py) reads the same.
MATRIX_PARAMS = {
    "proxies": Param(list, REQUIRED, f"the proxies, each once: {', '.join(MATRIX_PROXIES)}", items=str,
                     choices=MATRIX_PROXIES, unique_sorted=False, max_items=len(MATRIX_PROXIES)),
    "mode": Param(str, "modern", "paper: the published scripts and NLTK 3.5 behaviour; modern: the cleaned-up "
                  "pipeline", choices=MODES),
    "synsets": Param(str, None, "SYN's synsets: WordNet synsets chosen by Lesk, or the EPIC-KITCHENS-100 verb/noun "
                     "classes. Default the mode's choice: paper mode uses the EPIC-KITCHENS-100 classes for a dataset "
                     "imported as youcook2-json or epic100-csv, as the paper did, WordNet otherwise.",
                     choices=SYNSET_SOURCES, nullable=True),
    "min_fraction": Param(float, 0.25, "clips with several captions: the share of them a word must appear in", 0, 1),
}


def _matrices_check(*, target: Dataset, params: dict) -> None:
    # `synsets` None stays None: the job resolves the mode's choice and records why.
    proxy_synsets_check(dataset=target, proxies=params["proxies"], mode=params["mode"], synsets=params["synsets"])
    if not Caption.objects.filter(dataset=target).exists():
        raise ProxyError(f"dataset '{target.name}' has no captions")


def _matrices_run(job: Job, progress) -> dict:
    p = job.params
    artefacts = proxy_matrices_compute(dataset=Dataset.objects.get(pk=p["dataset_id"]), proxies=p["proxies"],
                                       mode=p["mode"], synsets=p["synsets"], min_fraction=p["min_fraction"], job=job,
                                       progress=progress)
    return {"artefacts": [{"id": a.pk, "proxy": a.params["proxy"], "name": a.name, "size": a.size} for a in artefacts]}


PROXY_MATRICES = Operation(
    name="proxy_matrices", title="Compute proxy matrices", params=MATRIX_PARAMS, check=_matrices_check,
    run=_matrices_run, target=Dataset, target_field="dataset_id", error=ProxyError,
    legacy_task=task_names.COMPUTE_PROXY_MATRICES)


def proxy_matrices_start(*, dataset: Dataset, proxies: list[str], mode: str, synsets: str | None,
                         min_fraction: float, created_by) -> Job:
    """`synsets` None: the mode's source for this dataset (matrices.synset_source_choose), resolved by the job."""
    return operation_job(PROXY_MATRICES, target=dataset, params={
        "proxies": list(proxies), "mode": mode, "synsets": synsets, "min_fraction": min_fraction},
        created_by=created_by)


# --- graded nDCG of a run ----------------------------------------------------------------------

def _ndcg_check(*, target: Run, params: dict) -> None:
    artefact = Artefact.objects.filter(pk=params["artefact_id"]).first()
    if artefact is None:
        raise ProxyError(f"no proxy matrix {params['artefact_id']} for the run's dataset", param="artefact_id")
    proxy_ndcg_check(run=target, artefact=artefact, gain=params["gain"], empty=params["empty"])


def _ndcg_run(job: Job, progress) -> dict:
    p = job.params
    report = proxy_ndcg_report_create(run=Run.objects.get(pk=p["run_id"]),
                                      artefact=Artefact.objects.get(pk=p["artefact_id"]), gain=p["gain"],
                                      empty=p["empty"], created_by=job.created_by, job=job)
    return {"report_id": report.pk, "mean": report.result["mean"]}


PROXY_NDCG = Operation(
    name="proxy_ndcg", title="Graded nDCG of a run against a proxy matrix", params=PROXY_NDCG_KIND.params,
    check=_ndcg_check, run=_ndcg_run, target=Run, target_field="run_id", error=ProxyError,
    legacy_task=task_names.PROXY_NDCG_REPORT)


def proxy_ndcg_start(*, run: Run, params: dict, created_by, baseline: dict | None = None) -> tuple[Job, dict | None]:
    """Starts the run's nDCG against a proxy matrix; with `baseline` ({"draws", "seed"}) also gives
    the matrix's random-ranking nDCG table (matrices.proxy_random_baseline_table, nothing stored),
    computed at once with the same gain and empty rule. The request is checked before either."""
    clean = operation_params_clean(PROXY_NDCG, target=run, params=params)
    table = None
    if baseline is not None:
        matrix = Artefact.objects.get(pk=clean["artefact_id"])
        table = proxy_random_baseline_table(dataset=run.dataset, artefacts=[matrix], gain=clean["gain"],
                                            empty=clean["empty"], **baseline)
    return operation_job(PROXY_NDCG, target=run, params=clean, created_by=created_by), table


# --- relevant captions per clip and correlation between proxies --------------------------------

def _analysis_check(*, target: Dataset, params: dict) -> None:
    found = set(Artefact.objects.filter(kind="proxy_matrix", dataset=target, pk__in=params["artefact_ids"])
                .values_list("pk", flat=True))
    missing = [pk for pk in params["artefact_ids"] if pk not in found]
    if missing:
        raise ProxyError(f"no proxy matrices {missing} for dataset '{target.name}'", param="artefact_ids")


def _analysis_run(job: Job, progress) -> dict:
    p = job.params
    by_pk = Artefact.objects.in_bulk(p["artefact_ids"])
    report = proxy_analysis_report_create(dataset=Dataset.objects.get(pk=p["dataset_id"]),
                                          artefacts=[by_pk[pk] for pk in p["artefact_ids"] if pk in by_pk],
                                          thresholds=p["thresholds"], created_by=job.created_by, job=job,
                                          progress=progress)
    return {"report_id": report.pk}


PROXY_ANALYSIS = Operation(
    name="proxy_analysis", title="Proxy statistics of a dataset", params=PROXY_ANALYSIS_KIND.params,
    check=_analysis_check, run=_analysis_run, target=Dataset, target_field="dataset_id", error=ProxyError,
    legacy_task=task_names.PROXY_ANALYSIS_REPORT)


OPERATIONS = (PROXY_MATRICES, PROXY_NDCG, PROXY_ANALYSIS)
