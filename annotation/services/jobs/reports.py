"""Exports and judgment imports started from the API or the pages, as background jobs (reports
start in annotation/services/reports/create.py).

Each start checks the request first (so a mistake gets a 400, not a failed job), then creates the
job and queues it once the transaction commits.
"""
from __future__ import annotations

from django.db import IntegrityError, transaction

from annotation.models import Dataset, Job, Pool
from annotation.models.judgment_sets import JudgmentSet
from annotation.services.exports.labels import export_params_clean
from annotation.services.jobs import task_names
from annotation.services.storage import job_files as files
from annotation.services.jobs.dispatch import job_enqueue
from annotation.services.jobs.lifecycle import job_create
from annotation.services.judgment_sets.imports import JudgmentsImportError
from annotation.services.storage.uploads import upload_store


@transaction.atomic
def export_start(*, pool: Pool, fmt: str, params: dict | None, created_by) -> Job:
    clean = export_params_clean(fmt=fmt, params=params, pool=pool)
    job = job_create(kind=f"export_{fmt}", params={"pool_id": pool.pk, "format": fmt, "params": clean},
                     created_by=created_by)
    return job_enqueue(job=job, task=task_names.EXPORT_LABELS)


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
