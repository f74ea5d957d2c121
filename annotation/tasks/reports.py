"""Celery jobs for the reports area: computing reports, writing exports, importing judgments."""
from __future__ import annotations

from celery import shared_task
from django.urls import reverse

from annotation.models import Dataset, Pool
from annotation.services.exports.labels import export_create
from annotation.services.jobs import job_execute, task_names
from annotation.services.judgment_sets.imports import judgments_import
from annotation.services.reports.create import report_create
from annotation.services.storage.uploads import upload_local_path


@shared_task(name=task_names.COMPUTE_REPORT)
def compute_report(job_id: int) -> None:
    def work(job, progress):
        p = job.params
        report = report_create(pool=Pool.objects.get(pk=p["pool_id"]), kind=p["kind"], params=p["params"],
                               created_by=job.created_by, job=job, progress=progress)
        return {"report_id": report.pk, "kind": report.kind, "url": reverse("api:report-detail", args=[report.pk])}

    job_execute(job_id=job_id, work=work)


@shared_task(name=task_names.EXPORT_LABELS)
def export_labels(job_id: int) -> None:
    def work(job, progress):
        p = job.params
        artefact = export_create(pool=Pool.objects.get(pk=p["pool_id"]), fmt=p["format"], params=p["params"], job=job,
                                 progress=progress)
        return {"export_id": artefact.pk, "name": artefact.name, "size": artefact.size, "sha256": artefact.sha256,
                "download_url": reverse("api:export-download", args=[artefact.pk])}

    # One snapshot: the export's streams agree even while raters keep labelling.
    job_execute(job_id=job_id, work=work, snapshot=True)


@shared_task(name=task_names.IMPORT_JUDGMENTS)
def import_judgments(job_id: int) -> None:
    def work(job, progress):
        p = job.params
        with upload_local_path(params=p) as path:
            outcome = judgments_import(dataset=Dataset.objects.get(pk=p["dataset_id"]), path=path,
                                       fmt=p.get("format") or None, name=p.get("name") or None,
                                       source_name=p.get("source_name"), only_dataset=p.get("only_dataset") or None,
                                       options=p.get("options"), seeds_pools=p.get("seeds_pools"),
                                       created_by=job.created_by, progress=progress)
        judgment_set = outcome.judgment_set
        return {"judgment_set_id": judgment_set.pk, "name": judgment_set.name, "created": outcome.created,
                "counts": judgment_set.counts}

    job_execute(job_id=job_id, work=work)
