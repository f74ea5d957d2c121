"""Celery jobs: thin wrappers that load the job's parameters, call a service, store the result."""
from __future__ import annotations

from celery import shared_task

from annotation.models import Dataset
from annotation.services.datasets.imports import dataset_import
from annotation.services.jobs import job_execute, task_names
from annotation.services.datasets.runs import run_import
from annotation.services.storage.uploads import upload_local_path


@shared_task(name=task_names.IMPORT_DATASET)
def import_dataset(job_id: int) -> None:
    def work(job, progress):
        p = job.params
        with upload_local_path(params=p) as path:
            dataset = dataset_import(path=path, name=p["name"], fmt=p.get("format") or None,
                                     media_template=p.get("media_template") or None,
                                     description=p.get("description", ""), source_name=p.get("source_name"),
                                     progress=progress)
        return {"dataset_id": dataset.pk, "name": dataset.name, "clips": dataset.clips.count(),
                "captions": dataset.captions.count()}

    job_execute(job_id=job_id, work=work)


@shared_task(name=task_names.IMPORT_RUN)
def import_run(job_id: int) -> None:
    def work(job, progress):
        p = job.params
        with upload_local_path(params=p) as path:
            outcome = run_import(dataset=Dataset.objects.get(pk=p["dataset_id"]), path=path, name=p.get("name") or None,
                                 fmt=p.get("format") or None, uploader=job.created_by,
                                 source_name=p.get("source_name"), max_depth=p.get("max_depth"), progress=progress)
        run = outcome.run
        return {"run_id": run.pk, "name": run.name, "created": outcome.created, "kind": run.kind, "depth": run.depth,
                "predictions": run.prediction_count, "captions": run.caption_count, "format": run.source_format}

    job_execute(job_id=job_id, work=work)
