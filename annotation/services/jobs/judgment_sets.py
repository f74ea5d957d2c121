"""Judgment-set work started from the API or the pages, as background jobs: scoring stored runs
against a set, the agreement of a rater_labels set, a set taken from a pool's labels, and
importing a judgment set from a file.

Each start checks the request first (a mistake gets a 400, not a failed job), then creates the job
and queues it once the transaction commits.
"""
from __future__ import annotations

from django.db import IntegrityError, transaction

from annotation.models import Dataset, Job, Pool, Run
from annotation.models.judgment_sets import JudgmentSet
from annotation.services.evaluation import CONVENTIONS, EvaluationError
from annotation.services.jobs import task_names
from annotation.services.jobs.dispatch import job_enqueue
from annotation.services.jobs.lifecycle import job_create
from annotation.services.judgment_sets.agreement import LEVELS, AgreementOptionsError
from annotation.services.judgment_sets.imports import REPEAT_RULES, JudgmentsImportError
from annotation.services.judgment_sets.scoring import stored_runs_check
from annotation.services.reports.create import report_job_start
from annotation.services.reports.kinds.evaluation import KIND as EVALUATION
from annotation.services.reports.kinds.judgment_set_agreement import KIND as JUDGMENT_SET_AGREEMENT
from annotation.services.storage import job_files as files
from annotation.services.storage.uploads import upload_store


@transaction.atomic
def evaluation_start(*, judgment_set: JudgmentSet, run_ids: list[int], conventions: str | None,
                     measures: list[str] | None, created_by) -> Job:
    runs = {run.pk: run for run in Run.objects.filter(pk__in=run_ids, dataset_id=judgment_set.dataset_id)}
    missing = [pk for pk in run_ids if pk not in runs]
    if not run_ids or missing:
        raise EvaluationError(f"run {missing[0]} is not a run of this dataset" if missing else "name at least one run")
    stored_runs_check(judgment_set=judgment_set, runs=list(runs.values()))
    if conventions and conventions not in CONVENTIONS:
        raise EvaluationError(f"unknown conventions '{conventions}' (choose from {', '.join(CONVENTIONS)})")
    return report_job_start(kind=EVALUATION.name, job_kind="evaluate", params={
        "judgment_set_id": judgment_set.pk, "run_ids": list(run_ids), "conventions": conventions, "measures": measures},
        task=task_names.EVALUATE_JUDGMENT_SET, created_by=created_by)


@transaction.atomic
def judgment_set_agreement_start(*, judgment_set: JudgmentSet, level: str, binarize_at: float | None,
                                 repeats: str | None, created_by) -> Job:
    if judgment_set.source_format != JudgmentSet.Format.RATER_LABELS:
        raise AgreementOptionsError(f"judgment set '{judgment_set.name}' is {judgment_set.source_format}: agreement "
                                    f"needs raw multi-rater labels (a rater_labels set)")
    if level not in LEVELS:
        raise AgreementOptionsError(f"level must be one of {', '.join(LEVELS)}")
    if repeats and repeats not in REPEAT_RULES:
        raise AgreementOptionsError(f"repeats must be one of {', '.join(REPEAT_RULES)}")
    return report_job_start(kind=JUDGMENT_SET_AGREEMENT.name, job_kind="judgment_set_agreement", params={
        "judgment_set_id": judgment_set.pk, "level": level, "binarize_at": binarize_at, "repeats": repeats},
        task=task_names.JUDGMENT_SET_AGREEMENT, created_by=created_by)


@transaction.atomic
def judgment_set_from_pool_start(*, pool: Pool, name: str | None, originals: bool, created_by) -> Job:
    if name and JudgmentSet.objects.filter(dataset_id=pool.dataset_id, name=name).exists():
        raise EvaluationError(f"judgments named '{name}' already exist in '{pool.dataset.name}'")
    job = job_create(kind="judgment_set_from_pool", params={"pool_id": pool.pk, "name": name, "originals": originals},
                     created_by=created_by)
    return job_enqueue(job=job, task=task_names.JUDGMENT_SET_FROM_POOL)


def judgments_import_start(*, dataset: Dataset, uploaded_file, fmt: str | None, name: str | None,
                           only_dataset: str | None, created_by, options: dict | None = None,
                           seeds_pools: bool | None = None, idempotency_key: str | None = None) -> tuple[Job, bool]:
    """Stores the upload and queues its import. Returns (job, created): a request sent again with
    the same idempotency key returns the first job."""
    if idempotency_key:
        existing = Job.objects.filter(created_by=created_by, idempotency_key=idempotency_key).first()
        if existing:
            return existing, False
    if name and JudgmentSet.objects.filter(dataset=dataset, name=name).exists():
        raise JudgmentsImportError(f"judgments named '{name}' already exist in '{dataset.name}'")
    upload = upload_store(uploaded_file=uploaded_file)
    params = {"dataset_id": dataset.pk, "upload": upload, "format": fmt or "", "name": name or "",
              "only_dataset": only_dataset or "", "source_name": uploaded_file.name,
              "options": {k: v for k, v in (options or {}).items() if v}, "seeds_pools": seeds_pools}
    try:
        with transaction.atomic():
            job = job_create(kind="import_judgments", params=params, created_by=created_by)
            job.idempotency_key = idempotency_key or None
            job.save(update_fields=["idempotency_key"])
            job_enqueue(job=job, task=task_names.IMPORT_JUDGMENTS)
    except IntegrityError:
        # The same request raced in twice; the first one's job stands, and this copy's upload
        # belongs to no job.
        files.job_upload_remove(job=Job(params=params))
        return Job.objects.get(created_by=created_by, idempotency_key=idempotency_key), False
    return job, True
