"""The one runner: runs the operation a job names (annotation/tasks/operations.py calls it).

A job started through the registry stores its operation's name; a job queued before carries only
the Celery task name it was sent under, which the registry maps to the operation that replaced
that task (registry.LEGACY_TASKS), so such a job still runs when a worker of this version picks
it up or the reaper sends it again.
"""
from __future__ import annotations

import logging
from contextlib import nullcontext

from annotation.models import Job
from annotation.services.jobs import job_execute, task_names
from annotation.services.operations.operation import Operation
from annotation.services.operations.registry import LEGACY_TASKS, OPERATIONS

log = logging.getLogger(__name__)


class OperationUnknown(LookupError):
    """A job names an operation this version does not register."""


def job_operation(*, name: str, task_name: str) -> Operation:
    if name:
        if name not in OPERATIONS:
            raise OperationUnknown(f"operation '{name}' is not registered (annotation/services/operations/registry.py)")
        return OPERATIONS[name]
    if task_name in LEGACY_TASKS:
        return OPERATIONS[LEGACY_TASKS[task_name]]
    raise OperationUnknown(f"the job names no operation and its task '{task_name}' runs none")


def operation_job_run(*, job_id: int, task_name: str = task_names.RUN_OPERATION) -> Job | None:
    """Runs the job's operation through job_execute (claim, heartbeat, work and finish in one
    transaction). A job naming no known operation fails with the reason."""
    row = Job.objects.filter(pk=job_id).values("operation", "params", "task_name").first()
    if row is None:
        log.warning("job %s does not exist: nothing to run", job_id)
        return None
    try:
        operation = job_operation(name=row["operation"], task_name=row["task_name"] or task_name)
    except OperationUnknown as exc:
        reason = exc

        def refuse(job, progress):
            raise reason

        return job_execute(job_id=job_id, work=refuse)
    outside, work = operation.phases() if operation.phases else (None, operation.run)
    held = operation.around(row["params"]) if operation.around else nullcontext()
    with held:
        return job_execute(job_id=job_id, work=work, snapshot=operation.snapshot, outside=outside)
