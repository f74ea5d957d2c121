"""Pool builds and incremental additions started from the API, as background jobs."""
from __future__ import annotations

from django.db import transaction

from annotation.models import Dataset, Job, Pool, PoolRun, Run
from annotation.services.jobs import task_names
from annotation.services.jobs.dispatch import job_enqueue
from annotation.services.jobs.lifecycle import job_create
from annotation.services.pools.build import PoolError


@transaction.atomic
def pool_build_start(*, dataset: Dataset, name: str, run_ids: list[int], options: dict, created_by) -> Job:
    """Checks the request up front (so mistakes get a 400, not a failed job) and queues the build."""
    runs = list(Run.objects.filter(pk__in=run_ids, dataset=dataset))
    missing = sorted(set(run_ids) - {r.pk for r in runs})
    if missing:
        raise PoolError(f"runs {missing} do not exist in dataset '{dataset.name}'")
    if Pool.objects.filter(dataset=dataset, name=name).exists():
        raise PoolError(f"a pool named '{name}' already exists for '{dataset.name}'")
    if any(r.kind == Run.Kind.MOMENT for r in runs):
        raise PoolError("moment runs need a moment pool")
    job = job_create(kind="build_pool", params={"dataset_id": dataset.pk, "name": name, "run_ids": run_ids, **options},
                     created_by=created_by)
    return job_enqueue(job=job, task=task_names.BUILD_POOL)


@transaction.atomic
def pool_add_run_start(*, pool: Pool, run: Run, created_by) -> Job:
    if hasattr(pool, "moment_design") or hasattr(pool, "sampled_design"):
        # Their pairs come from span merging or stratified sampling; adding a run's plain top-k
        # would queue pairs outside the design (a 1,000-deep run would queue all its ranks).
        raise PoolError(f"pool '{pool.name}' is a moment or sampled pool; build a new one to add runs")
    if run.dataset_id != pool.dataset_id:
        raise PoolError(f"run '{run.name}' belongs to another dataset")
    if PoolRun.objects.filter(pool=pool, run=run).exists():
        raise PoolError(f"run '{run.name}' is already in pool '{pool.name}'")
    job = job_create(kind="pool_add_run", params={"pool_id": pool.pk, "run_id": run.pk}, created_by=created_by)
    return job_enqueue(job=job, task=task_names.POOL_ADD_RUN)


@transaction.atomic
def judging_reorder_start(*, pool: Pool, design: bool, created_by) -> Job:
    """A large pool's recomputation after a judging settings change, as a job (services/judging
    pool_judging_refresh; the new settings already apply to every label from now on)."""
    job = job_create(kind="judging_reorder", params={"pool_id": pool.pk, "design": design}, created_by=created_by)
    return job_enqueue(job=job, task=task_names.JUDGING_REORDER)
