"""Celery jobs for the proxies area: proxy matrices, ranking studies and their reports."""
from __future__ import annotations

from celery import shared_task

from annotation.models import Artefact, Dataset, RankingStudy, Run
from annotation.services import ranking as ranking_service
from annotation.services.proxies import matrices as proxy_service
from annotation.services.jobs import job_execute, task_names


@shared_task(name=task_names.COMPUTE_PROXY_MATRICES)
def compute_proxy_matrices(job_id: int) -> None:
    def work(job, progress):
        p = job.params
        artefacts = proxy_service.proxy_matrices_compute(
            dataset=Dataset.objects.get(pk=p["dataset_id"]), proxies=p["proxies"], mode=p["mode"], synsets=p["synsets"],
            min_fraction=p["min_fraction"], job=job, progress=progress)
        return {"artefacts": [{"id": a.pk, "proxy": a.params["proxy"], "name": a.name, "size": a.size} for a in artefacts]}

    job_execute(job_id=job_id, work=work)


@shared_task(name=task_names.BUILD_RANKING_STUDY)
def build_ranking_study(job_id: int) -> None:
    def work(job, progress):
        p = dict(job.params)
        dataset = Dataset.objects.get(pk=p.pop("dataset_id"))
        study = ranking_service.ranking_study_create(dataset=dataset, created_by=job.created_by, job=job,
                                                     progress=progress, **p)
        return {"study_id": study.pk, "name": study.name, "tasks": study.tasks.count()}

    job_execute(job_id=job_id, work=work)


@shared_task(name=task_names.RANKING_STUDY_REPORT)
def ranking_study_report(job_id: int) -> None:
    def work(job, progress):
        study = RankingStudy.objects.get(pk=job.params["study_id"])
        report = ranking_service.ranking_report_create(study=study, created_by=job.created_by, job=job)
        return {"report_id": report.pk}

    job_execute(job_id=job_id, work=work)


@shared_task(name=task_names.PROXY_NDCG_REPORT)
def proxy_ndcg_report(job_id: int) -> None:
    def work(job, progress):
        p = job.params
        report = proxy_service.proxy_ndcg_report_create(
            run=Run.objects.get(pk=p["run_id"]), artefact=Artefact.objects.get(pk=p["artefact_id"]), gain=p["gain"],
            empty=p["empty"], created_by=job.created_by, job=job)
        return {"report_id": report.pk, "mean": report.result["mean"]}

    job_execute(job_id=job_id, work=work)


@shared_task(name=task_names.PROXY_ANALYSIS_REPORT)
def proxy_analysis_report(job_id: int) -> None:
    def work(job, progress):
        p = job.params
        by_pk = Artefact.objects.in_bulk(p["artefact_ids"])
        artefacts = [by_pk[pk] for pk in p["artefact_ids"] if pk in by_pk]
        report = proxy_service.proxy_analysis_report_create(
            dataset=Dataset.objects.get(pk=p["dataset_id"]), artefacts=artefacts, thresholds=p["thresholds"],
            created_by=job.created_by, job=job, progress=progress)
        return {"report_id": report.pk}

    job_execute(job_id=job_id, work=work)


@shared_task(name=task_names.RELEASE_EXPIRED_RANKING_LEASES)
def release_expired_ranking_leases() -> int:
    """Periodic (celery beat, every minute): overdue ranking leases give their tasks back to the queue."""
    return ranking_service.ranking_leases_expire()
