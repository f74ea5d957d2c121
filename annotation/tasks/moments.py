"""Celery jobs for the moments area: moment pools, sampled pools, and their reports."""
from __future__ import annotations

from celery import shared_task

from annotation.analysis.sample_eval import TRECVID_MAX_RESULT_SIZE
from annotation.models import Dataset, Pool, Run
from annotation.services.pools import moments as moment_pools
from annotation.services.pools import sampled as sampled_pools
from annotation.services.reports.kinds.infap import infap_report_create
from annotation.services.reports.kinds.moment_metrics import moment_metrics_report_create
from annotation.services.jobs import job_execute, task_names


def _runs_in_request_order(dataset: Dataset, run_ids: list[int]) -> list[Run]:
    runs = Run.objects.in_bulk(run_ids)
    return [runs[pk] for pk in run_ids if pk in runs and runs[pk].dataset_id == dataset.pk]


@shared_task(name=task_names.BUILD_MOMENT_POOL)
def build_moment_pool(job_id: int) -> None:
    def work(job, progress):
        p = job.params
        dataset = Dataset.objects.get(pk=p["dataset_id"])
        pool = moment_pools.moment_pool_create(
            dataset=dataset, name=p["name"], runs=_runs_in_request_order(dataset, p["run_ids"]), depth=p.get("depth", 10),
            iou_threshold=p.get("iou_threshold", 0.7), redundancy=p.get("redundancy", 0.1), seed=p.get("seed", 0),
            progress=progress)
        return {"pool_id": pool.pk, "name": pool.name, "spans": pool.pairs.filter(role="pool").count(),
                "double_labelled": pool.pairs.filter(role="pool", required_labels__gte=2).count()}

    job_execute(job_id=job_id, work=work)


@shared_task(name=task_names.BUILD_SAMPLED_POOL)
def build_sampled_pool(job_id: int) -> None:
    def work(job, progress):
        p = job.params
        dataset = Dataset.objects.get(pk=p["dataset_id"])
        pool = sampled_pools.sampled_pool_create(
            dataset=dataset, name=p["name"], runs=_runs_in_request_order(dataset, p["run_ids"]), strata=p["strata"],
            seed=p.get("seed", 0), redundancy=p.get("redundancy", 0.1), progress=progress)
        design = pool.sampled_design
        return {"pool_id": pool.pk, "name": pool.name, "full_pool_size": design.full_pool_size,
                "sampled": design.sampled_count, "judgments_saved": design.judgments_saved}

    job_execute(job_id=job_id, work=work)


@shared_task(name=task_names.MOMENT_METRICS_REPORT)
def moment_metrics_report(job_id: int) -> None:
    def work(job, progress):
        p = job.params
        report = moment_metrics_report_create(
            pool=Pool.objects.get(pk=p["pool_id"]), run_ids=p.get("run_ids"), ks=p.get("ks", (1, 5, 10)),
            iou_thresholds=p.get("iou_thresholds", (0.5, 0.7)), created_by=job.created_by, job=job)
        return {"report_id": report.pk, "kind": report.kind}

    job_execute(job_id=job_id, work=work)


@shared_task(name=task_names.INFAP_REPORT)
def infap_report(job_id: int) -> None:
    def work(job, progress):
        p = job.params
        report = infap_report_create(pool=Pool.objects.get(pk=p["pool_id"]), run_ids=p.get("run_ids"),
                                                    max_result_size=p.get("max_result_size", TRECVID_MAX_RESULT_SIZE),
                                                    created_by=job.created_by, job=job)
        return {"report_id": report.pk, "kind": report.kind}

    job_execute(job_id=job_id, work=work)
