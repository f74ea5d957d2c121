"""Uploads that become import jobs (the REST path); the CLI calls the import services directly."""
from __future__ import annotations

from django.db import IntegrityError, transaction

from annotation.models import Dataset, Job
from annotation.services.jobs import task_names
from annotation.services.storage import job_files as files
from annotation.services.jobs.dispatch import job_enqueue
from annotation.services.jobs.lifecycle import job_create
from annotation.services.storage.uploads import upload_store


def _existing(created_by, idempotency_key: str | None) -> Job | None:
    if not idempotency_key:
        return None
    return Job.objects.filter(created_by=created_by, idempotency_key=idempotency_key).first()


def _start(*, kind: str, params: dict, created_by, idempotency_key: str | None, task: str) -> tuple[Job, bool]:
    try:
        with transaction.atomic():
            job = job_create(kind=kind, params=params, created_by=created_by)
            job.idempotency_key = idempotency_key or None
            job.save(update_fields=["idempotency_key"])
            job_enqueue(job=job, task=task)
    except IntegrityError:
        # Two copies of the same request raced; the first one's job stands, and this copy's
        # upload belongs to no job.
        files.job_upload_remove(job=Job(params=params))
        return _existing(created_by, idempotency_key), False
    return job, True


def dataset_import_start(*, uploaded_file, name: str, fmt: str | None, media_template: str, description: str,
                         created_by, idempotency_key: str | None = None) -> tuple[Job, bool]:
    """Stores the upload and queues its import. Returns (job, created)."""
    existing = _existing(created_by, idempotency_key)
    if existing:
        return existing, False
    upload = upload_store(uploaded_file=uploaded_file)
    params = {"upload": upload, "name": name, "format": fmt or "", "media_template": media_template,
              "description": description, "source_name": uploaded_file.name}
    return _start(kind="import_dataset", params=params, created_by=created_by, idempotency_key=idempotency_key,
                  task=task_names.IMPORT_DATASET)


def run_import_start(*, dataset: Dataset, uploaded_file, name: str | None, fmt: str | None, max_depth: int | None,
                     created_by, idempotency_key: str | None = None) -> tuple[Job, bool]:
    existing = _existing(created_by, idempotency_key)
    if existing:
        return existing, False
    upload = upload_store(uploaded_file=uploaded_file)
    params = {"upload": upload, "dataset_id": dataset.pk, "name": name or "", "format": fmt or "",
              "max_depth": max_depth, "source_name": uploaded_file.name}
    return _start(kind="import_run", params=params, created_by=created_by, idempotency_key=idempotency_key,
                  task=task_names.IMPORT_RUN)
