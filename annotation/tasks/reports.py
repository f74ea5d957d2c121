"""Celery jobs for the reports area: computing reports, writing exports."""
from __future__ import annotations

from celery import shared_task
from django.urls import reverse

from annotation.models import Pool
from annotation.services.exports.labels import export_create
from annotation.services.jobs import job_execute, task_names
from annotation.services.reports.create import report_create


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
