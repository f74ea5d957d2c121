"""Celery jobs for judging strategies: the judging simulation report (issue 15)."""
from __future__ import annotations

from celery import shared_task
from django.urls import reverse

from annotation.models import Pool, Run
from annotation.models.reports import JudgmentSet
from annotation.services.jobs import job_execute, task_names
from annotation.services.judging.simulation import judging_simulation_create


@shared_task(name=task_names.JUDGING_SIMULATION)
def judging_simulation(job_id: int) -> None:
    def work(job, progress):
        p = job.params
        if p.get("pool_id"):
            report = judging_simulation_create(pool=Pool.objects.get(pk=p["pool_id"]), params=p["params"], job=job,
                                               created_by=job.created_by, progress=progress)
        else:
            order = {pk: i for i, pk in enumerate(p["run_ids"])}
            runs = sorted(Run.objects.filter(pk__in=p["run_ids"]), key=lambda run: order[run.pk])
            report = judging_simulation_create(judgment_set=JudgmentSet.objects.get(pk=p["judgment_set_id"]),
                                               runs=runs, depth=p["depth"], with_originals=p["with_originals"],
                                               params=p["params"], job=job, created_by=job.created_by,
                                               progress=progress)
        return {"report_id": report.pk, "kind": report.kind, "url": reverse("api:report-detail", args=[report.pk]),
                "page": reverse("frontend:report-detail", args=[report.pk])}

    job_execute(job_id=job_id, work=work)
