"""The one Celery task that runs any operation by its job (services/operations/run.py), and the
aliases that keep the task names of jobs queued before the registry working.

A job row stores its operation's name; `run_operation` runs it. A job queued by an older version
carries the task name it was sent under (e.g. annotation.tasks.build_pool), and the reaper and an
admin's retry send it again under that name: each such name stays registered here, running the
job through the same runner, until no stored job names it.
"""
from __future__ import annotations

from celery import shared_task

from annotation.services.jobs import task_names
from annotation.services.operations.registry import LEGACY_TASKS
from annotation.services.operations.run import operation_job_run


@shared_task(name=task_names.RUN_OPERATION)
def run_operation(job_id: int) -> None:
    operation_job_run(job_id=job_id)


def _legacy_alias(name: str):
    def run_legacy(job_id: int) -> None:
        operation_job_run(job_id=job_id, task_name=name)

    run_legacy.__name__ = run_legacy.__qualname__ = f"legacy_{name.rsplit('.', 1)[-1]}"
    return shared_task(name=name)(run_legacy)


LEGACY_ALIASES = {name: _legacy_alias(name) for name in LEGACY_TASKS}
