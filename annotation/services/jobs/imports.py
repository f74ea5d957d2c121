"""Uploads that become import jobs (the REST path); the CLI calls the import services directly."""
from __future__ import annotations

from django.db import IntegrityError, transaction

from annotation.models import Dataset, Job, Pool
from annotation.models.judgment_sets import JudgmentSet
from annotation.services.jobs import task_names
from annotation.services.storage import job_files as files
from annotation.services.jobs.dispatch import job_enqueue
from annotation.services.jobs.lifecycle import job_create
from annotation.services.machine_judges.imports import machine_judge_import_check
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


def machine_judgments_import_start(*, uploaded_file, name: str | None, pool: Pool | None = None,
                                   judgment_set: JudgmentSet | None = None, file_format: str | None = None,
                                   model_name: str = "", prompt_version: str = "", created_by,
                                   idempotency_key: str | None = None) -> tuple[Job, bool]:
    """Stores an upload of machine judgments and queues its import as a machine judge of the pool
    or the judgment set. A wrong target or a name already taken is refused here (MachineJudgeError),
    before anything is stored; problems in the file fail the job with their lines and fields."""
    existing = _existing(created_by, idempotency_key)
    if existing:
        return existing, False
    dataset = (pool or judgment_set).dataset if (pool or judgment_set) is not None else None
    name = machine_judge_import_check(dataset=dataset, name=name or uploaded_file.name, pool=pool,
                                      judgment_set=judgment_set)
    upload = upload_store(uploaded_file=uploaded_file)
    params = {"upload": upload, "dataset_id": dataset.pk, "pool_id": pool.pk if pool else None,
              "judgment_set_id": judgment_set.pk if judgment_set else None, "name": name,
              "file_format": file_format or "", "model": model_name, "prompt": prompt_version,
              "source_name": uploaded_file.name}
    return _start(kind="import_machine_judgments", params=params, created_by=created_by,
                  idempotency_key=idempotency_key, task=task_names.IMPORT_MACHINE_JUDGMENTS)
