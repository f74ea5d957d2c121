"""Jobs over stored judgment sets: scoring stored runs, agreement, a set from a pool's labels, importing one."""
from __future__ import annotations

from celery import shared_task
from django.urls import reverse

from annotation.models import Dataset, Pool, Run
from annotation.models.judgment_sets import JudgmentSet
from annotation.services.jobs import job_execute, task_names
from annotation.services.judgment_sets.from_pool import judgment_set_from_pool
from annotation.services.judgment_sets.imports import judgments_import
from annotation.services.storage.uploads import upload_local_path
from annotation.services.judgment_sets.scoring import (agreement_report_store, evaluation_report_store,
                                                       judgment_set_agreement, judgment_set_evaluate)


@shared_task(name=task_names.EVALUATE_JUDGMENT_SET)
def evaluate_judgment_set(job_id: int) -> None:
    def work(job, progress):
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
        return {"report_id": report.pk, "kind": report.kind, "url": reverse("api:report-detail", args=[report.pk])}

    job_execute(job_id=job_id, work=work)


@shared_task(name=task_names.JUDGMENT_SET_AGREEMENT)
def judgment_set_agreement_job(job_id: int) -> None:
    def work(job, progress):
        p = job.params
        judgment_set = JudgmentSet.objects.get(pk=p["judgment_set_id"])
        result = judgment_set_agreement(judgment_set=judgment_set, level=p["level"], binarize_at=p.get("binarize_at"),
                                        repeats=p.get("repeats"))
        report = agreement_report_store(result=result, judgment_set=judgment_set, created_by=job.created_by, job=job,
                                        params={"level": p["level"], "binarize_at": p.get("binarize_at"),
                                                "repeats": result["repeats"]})
        return {"report_id": report.pk, "kind": report.kind, "url": reverse("api:report-detail", args=[report.pk])}

    job_execute(job_id=job_id, work=work)


@shared_task(name=task_names.JUDGMENT_SET_FROM_POOL)
def judgment_set_from_pool_job(job_id: int) -> None:
    def work(job, progress):
        p = job.params
        outcome = judgment_set_from_pool(pool=Pool.objects.get(pk=p["pool_id"]), name=p.get("name") or None,
                                         originals=p.get("originals", True), created_by=job.created_by)
        judgment_set = outcome.judgment_set
        return {"judgment_set_id": judgment_set.pk, "name": judgment_set.name, "created": outcome.created,
                "counts": judgment_set.counts}

    job_execute(job_id=job_id, work=work)


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
