"""The judgment-set area's background operations (services/operations/): scoring stored runs
against a set, the agreement of a rater_labels set, a set taken from a pool's labels, and importing
a set from an uploaded file. Each is declared once here: its parameters (the two report jobs read
theirs from their report kind, reports/kinds/evaluation.py and judgment_set_agreement.py), the check
that refuses a request before a job exists (a mistake is a 400, not a failed job), and the run that
calls the area's service."""
from __future__ import annotations

from dataclasses import replace

from django.urls import reverse

from annotation.analysis.params import Param
from annotation.analysis.repeats import REPEAT_RULES
from annotation.formats.errors import ImportRejected
from annotation.formats.rater_labels import FILE_FORMATS
from annotation.models import Dataset, Job, Pool, Run
from annotation.models.judgment_sets import JudgmentSet
from annotation.services.deletes import delete_operation
from annotation.services.evaluation.errors import EvaluationError
from annotation.services.jobs import task_names
from annotation.services.judgment_sets.agreement import AgreementOptionsError
from annotation.services.judgment_sets.from_pool import judgment_set_from_pool
from annotation.services.judgment_sets.imports import (JUDGMENT_FORMATS, JudgmentsImportError, import_options_clean,
                                                       judgments_import, seeds_pools_clean)
from annotation.services.judgment_sets.scoring import (agreement_report_store, evaluation_report_store,
                                                       judgment_set_agreement, judgment_set_evaluate,
                                                       stored_runs_check)
from annotation.services.operations.operation import Operation, refusal_naming
from annotation.services.operations.start import operation_start
from annotation.services.reports.kinds.evaluation import KIND as EVALUATION
from annotation.services.reports.kinds.judgment_set_agreement import KIND as JUDGMENT_SET_AGREEMENT
from annotation.services.storage.uploads import upload_local_path, upload_store


def _report_result(report) -> dict:
    return {"report_id": report.pk, "kind": report.kind, "url": reverse("api:report-detail", args=[report.pk])}


def _counted_set(outcome) -> dict:
    judgment_set = outcome.judgment_set
    return {"judgment_set_id": judgment_set.pk, "name": judgment_set.name, "created": outcome.created,
            "counts": judgment_set.counts}


# --- score stored runs against a set -----------------------------------------------------------

def _evaluation_check(*, target: JudgmentSet, params: dict) -> dict:
    run_ids = params["run_ids"]
    runs = {run.pk: run for run in Run.objects.filter(pk__in=run_ids, dataset_id=target.dataset_id)}
    missing = [pk for pk in run_ids if pk not in runs]
    if missing:
        raise refusal_naming(EvaluationError(f"run {missing[0]} is not a run of this dataset"), "run_ids")
    try:
        stored_runs_check(judgment_set=target, runs=list(runs.values()))
    except EvaluationError as exc:
        raise refusal_naming(exc, "run_ids") from None
    # No measures named is the format's default set, stored as before as null.
    return params | {"measures": params["measures"] or None}


def _evaluation_run(job: Job, progress) -> dict:
    p = job.params
    judgment_set = JudgmentSet.objects.get(pk=p["judgment_set_id"])
    order = {pk: i for i, pk in enumerate(p["run_ids"])}
    runs = sorted(Run.objects.filter(pk__in=p["run_ids"]), key=lambda run: order[run.pk])
    evaluation = judgment_set_evaluate(judgment_set=judgment_set, runs=runs, conventions=p.get("conventions"),
                                       measures=p.get("measures"))
    report = evaluation_report_store(evaluation=evaluation, judgment_set=judgment_set, created_by=job.created_by,
                                     job=job, params={"judgment_set_id": judgment_set.pk,
                                                      "runs": [{"id": r.pk, "name": r.name, "checksum": r.checksum}
                                                               for r in runs],
                                                      "conventions": evaluation.conventions.name,
                                                      "measures": p.get("measures")})
    return _report_result(report)


EVALUATE = Operation(
    name="evaluate_judgment_set", title="Score stored runs against a judgment set", params=EVALUATION.params,
    check=_evaluation_check, run=_evaluation_run, target=JudgmentSet, target_field="judgment_set_id",
    job_kind="evaluate", error=EvaluationError, legacy_task=task_names.EVALUATE_JUDGMENT_SET)


# --- agreement of a rater_labels set -----------------------------------------------------------

def _agreement_check(*, target: JudgmentSet, params: dict) -> None:
    if target.source_format != JudgmentSet.Format.RATER_LABELS:
        raise AgreementOptionsError(f"judgment set '{target.name}' is {target.source_format}: agreement needs raw "
                                    f"multi-rater labels (a rater_labels set)")


def _agreement_run(job: Job, progress) -> dict:
    p = job.params
    judgment_set = JudgmentSet.objects.get(pk=p["judgment_set_id"])
    result = judgment_set_agreement(judgment_set=judgment_set, level=p["level"], binarize_at=p.get("binarize_at"),
                                    repeats=p.get("repeats"))
    report = agreement_report_store(result=result, judgment_set=judgment_set, created_by=job.created_by, job=job,
                                    params={"level": p["level"], "binarize_at": p.get("binarize_at"),
                                            "repeats": result["repeats"]})
    return _report_result(report)


AGREEMENT = Operation(
    name="judgment_set_agreement", title="Agreement of a judgment set", params=JUDGMENT_SET_AGREEMENT.params,
    check=_agreement_check, run=_agreement_run, target=JudgmentSet, target_field="judgment_set_id",
    error=AgreementOptionsError, legacy_task=task_names.JUDGMENT_SET_AGREEMENT)


# --- a set from a pool's labels ----------------------------------------------------------------

#: A set's name, as a pool's set and an import take it.
SET_NAME = Param(str, None, "the set's name, unique in its dataset (default: the pool's name and 'labels')",
                 max_length=200)

FROM_POOL_PARAMS = {
    "name": SET_NAME,
    "originals": Param(bool, True, "every caption's original clip counts as relevant (FIRE's convention)"),
}


def _name_free(dataset: Dataset, name: str | None, error: type[Exception]) -> None:
    if name and JudgmentSet.objects.filter(dataset=dataset, name=name).exists():
        raise refusal_naming(error(f"judgments named '{name}' already exist in '{dataset.name}'"), "name")


def _from_pool_check(*, target: Pool, params: dict) -> dict:
    _name_free(target.dataset, params["name"], EvaluationError)
    return params | {"name": params["name"] or None}  # no name: the run names it after the pool


def _from_pool_run(job: Job, progress) -> dict:
    p = job.params
    return _counted_set(judgment_set_from_pool(pool=Pool.objects.get(pk=p["pool_id"]), name=p.get("name") or None,
                                               originals=p.get("originals", True), created_by=job.created_by))


FROM_POOL = Operation(
    name="judgment_set_from_pool", title="A judgment set from a pool's labels", params=FROM_POOL_PARAMS,
    check=_from_pool_check, run=_from_pool_run, target=Pool, target_field="pool_id", error=EvaluationError,
    legacy_task=task_names.JUDGMENT_SET_FROM_POOL)


# --- import a set from a file ------------------------------------------------------------------

#: How a rater_labels file is read (stored with the job under "options").
READING_OPTIONS = ("columns", "repeats", "file_format")

IMPORT_PARAMS = {
    "format": Param(str, None, "the file's format (default: fire_json for a JSON object, sample_eval for lines of "
                    "5 fields, else qrels)", choices=JUDGMENT_FORMATS, what="judgments format"),
    "name": replace(SET_NAME, description="the set's name, unique in its dataset (default: the file's name)"),
    "only_dataset": Param(str, None, "fire_json: keep only records of this 'dataset' tag (e.g. MSVD)", max_length=50),
    "columns": Param(str, None, "rater_labels: which column is which, e.g. unit=pair_id,rater=worker,value=relevance",
                     max_length=300),
    "repeats": Param(str, None, "rater_labels: which of one rater's repeated labels of a unit count (default last)",
                     choices=REPEAT_RULES, what="repeat rule"),
    "file_format": Param(str, None, "rater_labels: csv or jsonl (default: from the file name or its first "
                         "character)", choices=FILE_FORMATS),
    "seeds_pools": Param(bool, None, "pools built afterwards take the set's verdicts (default: true for qrels, "
                         "sample_eval and FIRE sets; raw labels and moments cannot)", nullable=True),
}


def _import_check(*, target: Dataset, params: dict) -> None:
    _name_free(target, params["name"], JudgmentsImportError)
    fmt = params["format"]
    if not fmt:
        return  # guessed from the file when the job reads it, which then checks the rest
    options = {k: params[k] for k in (*READING_OPTIONS, "only_dataset")}
    try:
        import_options_clean(fmt, options, "the upload")
        seeds_pools_clean(fmt, params["seeds_pools"], "the upload")
    except ImportRejected as exc:
        issue = exc.issues[0]
        raise refusal_naming(JudgmentsImportError(issue.message), issue.field) from None


def _import_pack(target: Dataset, params: dict) -> dict:
    # The job's params as the import has always stored them (blank for "not given").
    return {"dataset_id": target.pk, "format": params["format"] or "", "name": params["name"] or "",
            "only_dataset": params["only_dataset"] or "",
            "options": {k: params[k] for k in READING_OPTIONS if params[k]}, "seeds_pools": params["seeds_pools"]}


def _import_run(job: Job, progress) -> dict:
    p = job.params
    with upload_local_path(params=p) as path:
        outcome = judgments_import(dataset=Dataset.objects.get(pk=p["dataset_id"]), path=path,
                                   fmt=p.get("format") or None, name=p.get("name") or None,
                                   source_name=p.get("source_name"), only_dataset=p.get("only_dataset") or None,
                                   options=p.get("options"), seeds_pools=p.get("seeds_pools"),
                                   created_by=job.created_by, progress=progress)
    return _counted_set(outcome)


IMPORT = Operation(
    name="import_judgments", title="Import a judgment set", params=IMPORT_PARAMS, check=_import_check,
    pack=_import_pack, run=_import_run, target=Dataset, target_field="dataset_id", error=JudgmentsImportError,
    legacy_task=task_names.IMPORT_JUDGMENTS)


def judgments_import_start(*, dataset: Dataset, uploaded_file, params: dict | None = None, created_by,
                           idempotency_key: str | None = None) -> tuple[Job, bool]:
    """Stores the upload once the parameters passed and queues its import. Returns (job, created):
    a request sent again with the same idempotency key returns the first job."""
    def upload() -> dict:
        return {"upload": upload_store(uploaded_file=uploaded_file), "source_name": uploaded_file.name}

    return operation_start(IMPORT, target=dataset, params=params, inputs=upload, created_by=created_by,
                           idempotency_key=idempotency_key)


#: Set-based, in the job's transaction; its file is removed after it commits (services/deletes.py).
DELETE = delete_operation(JudgmentSet, "judgment_set_id", name="delete_judgment_set")

OPERATIONS = (EVALUATE, AGREEMENT, FROM_POOL, IMPORT, DELETE)
