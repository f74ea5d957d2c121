"""Celery jobs for pools and the queue."""
from __future__ import annotations

from celery import shared_task

from annotation.models import Dataset, Pool, Run
from annotation.services.jobs import job_execute, task_names
from annotation.services.judging import pool_judging_refresh
from annotation.services.pools.build import known_pairs_add, pool_add_run, pool_create
from annotation.services.queue.leases import leases_expire


@shared_task(name=task_names.BUILD_POOL)
def build_pool(job_id: int) -> None:
    def work(job, progress):
        p = job.params
        dataset = Dataset.objects.get(pk=p["dataset_id"])
        runs = list(Run.objects.filter(pk__in=p["run_ids"], dataset=dataset))
        pool = pool_create(dataset=dataset, name=p["name"], runs=runs, depth=p.get("depth", 10),
                           include_original_positives=p.get("include_original_positives", False),
                           redundancy=p.get("redundancy", 0.1), seed=p.get("seed", 0), gold_rate=p.get("gold_rate", 0.0),
                           training_pass_mark=p.get("training_pass_mark", 0.8), lease_seconds=p.get("lease_seconds", 300),
                           broken_reports_limit=p.get("broken_reports_limit", 3), judging=p.get("judging"),
                           progress=progress)
        # Checked when the build was asked for (the build form's copy or CSV), so they fit this dataset.
        if p.get("known_pairs"):
            known_pairs_add(pool=pool, items=p["known_pairs"])
        return {"pool_id": pool.pk, "name": pool.name, "pairs": pool.pairs.filter(role="pool").count(),
                "double_labelled": pool.pairs.filter(role="pool", required_labels__gte=2).count(),
                "training_pairs": pool.pairs.filter(role="training").count(),
                "gold_pairs": pool.pairs.filter(role="gold").count()}

    job_execute(job_id=job_id, work=work)


@shared_task(name=task_names.POOL_ADD_RUN)
def pool_add_run_job(job_id: int) -> None:
    def work(job, progress):
        pool = Pool.objects.get(pk=job.params["pool_id"])
        run = Run.objects.get(pk=job.params["run_id"])
        added = pool_add_run(pool=pool, run=run)
        return {"pool_id": pool.pk, "run": run.name, "pairs_added": added}

    job_execute(job_id=job_id, work=work)


@shared_task(name=task_names.JUDGING_REORDER)
def judging_reorder(job_id: int) -> None:
    """A large pool's new judging settings: every query's order and stop state recomputed."""
    def work(job, progress):
        pool = Pool.objects.get(pk=job.params["pool_id"])
        return {"pool_id": pool.pk, **pool_judging_refresh(pool=pool, design=job.params.get("design", False),
                                                           progress=progress)}

    job_execute(job_id=job_id, work=work)


@shared_task(name=task_names.RELEASE_EXPIRED_LEASES)
def release_expired_leases() -> int:
    """Periodic (celery beat, every minute): overdue leases give their pairs back to the queue."""
    return leases_expire()
