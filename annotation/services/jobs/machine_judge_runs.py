"""Starting a run of a registered machine judge (JudgeEndpoint) over a pool or a judgment set, as a
background job (annotation/services/machine_judges/runner/run.py does the work)."""
from __future__ import annotations

from django.db import transaction

from annotation.models import Job, JudgeEndpoint, Pool
from annotation.models.reports import JudgmentSet
from annotation.services.jobs import task_names
from annotation.services.jobs.dispatch import job_enqueue
from annotation.services.jobs.lifecycle import job_create
from annotation.services.machine_judges.runner.run import JudgeRunError

JOB_KIND = "machine_judge_run"


@transaction.atomic
def machine_judge_run_start(*, endpoint: JudgeEndpoint, pool: Pool | None = None,
                            judgment_set: JudgmentSet | None = None, created_by=None) -> Job:
    if (pool is None) == (judgment_set is None):
        raise JudgeRunError("name a pool or a judgment set (one of them)")
    params = {"endpoint_id": endpoint.pk, "endpoint": endpoint.name,
              "pool_id": pool.pk if pool is not None else None,
              "judgment_set_id": judgment_set.pk if judgment_set is not None else None}
    job = job_create(kind=JOB_KIND, params=params, created_by=created_by)
    return job_enqueue(job=job, task=task_names.RUN_MACHINE_JUDGE)
