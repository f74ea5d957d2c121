"""The one service that starts any operation as a background job.

`operation_start` checks the parameters against the operation's declarations (a wrong type, a
value out of bounds or an unknown name is refused naming the parameter), runs its `check`,
creates the job row (its operation, its packed parameters, the caller's idempotency key) and
queues it for the one runner once the transaction commits. A request sent again with the same
idempotency key gets the first job back (`created` False), as the upload endpoints promise.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from contextlib import nullcontext

from django.db import IntegrityError, transaction

from annotation.analysis.params import ParamInvalid, params_clean
from annotation.models import Job
from annotation.services.jobs import task_names
from annotation.services.jobs.dispatch import job_enqueue
from annotation.services.jobs.lifecycle import job_create, job_execute
from annotation.services.operations.operation import Operation, refusal_naming
from annotation.services.storage import job_files as files


class OperationRefused(ValueError):
    """A start refused for a reason no declared parameter names (kept for callers without an
    area error of their own)."""


def _refuse(operation: Operation, exc: ParamInvalid) -> Exception:
    return refusal_naming(operation.error(str(exc)), exc.param)


def operation_params_clean(operation: Operation, *, target: Any = None, params: Mapping | None = None) -> dict:
    """The operation's full parameters: declared values checked, defaults filled in, then its
    check (which may complete them). Raises the operation's `error`, with `param` set when a
    declared parameter is to blame."""
    if operation.target is not None and not isinstance(target, operation.target):
        kinds = operation.target if isinstance(operation.target, tuple) else (operation.target,)
        raise operation.error(f"{operation.title}: needs a {' or a '.join(k.__name__ for k in kinds)}, "
                              f"got {target!r}")
    try:
        clean = params_clean(operation.params, params, target=target, owner=operation.title)
    except ParamInvalid as exc:
        raise _refuse(operation, exc) from None
    if operation.check is not None:
        try:
            checked = operation.check(target=target, params=clean)
        except ParamInvalid as exc:
            raise _refuse(operation, exc) from None
        if checked is not None:
            clean = checked
    return clean


def operation_existing(*, created_by, idempotency_key: str | None) -> Job | None:
    """The job an earlier copy of this request started, if it named the same idempotency key."""
    if not idempotency_key:
        return None
    return Job.objects.filter(created_by=created_by, idempotency_key=idempotency_key).first()


def operation_start(operation: Operation, *, target: Any = None, params: Mapping | None = None, created_by=None,
                    inputs: Callable[[], dict] | None = None, idempotency_key: str | None = None) -> tuple[Job, bool]:
    """Starts `operation` on `target` as a job; returns (job, created).

    `inputs()`, called once the parameters passed, gives what the job needs that nobody chooses
    (an upload stored for an import, its file name); it is stored beside the parameters."""
    existing = operation_existing(created_by=created_by, idempotency_key=idempotency_key)
    if existing is not None:
        return existing, False
    clean = operation_params_clean(operation, target=target, params=params)
    packed = operation.packed(target, clean)
    if inputs is not None:
        packed |= inputs()
    try:
        with transaction.atomic():
            job = job_create(kind=operation.kind_of(packed), params=packed, created_by=created_by,
                             operation=operation.name, idempotency_key=idempotency_key or None)
            job_enqueue(job=job, task=task_names.RUN_OPERATION)
    except IntegrityError:
        if not idempotency_key:
            raise
        # Two copies of the same request raced; the first one's job stands, and this copy's
        # upload (if any) belongs to no job.
        files.job_upload_remove(job=Job(params=packed))
        return Job.objects.get(created_by=created_by, idempotency_key=idempotency_key), False
    return job, True


def operation_job_unqueued(operation: Operation, *, target: Any = None, params: Mapping | None = None,
                           created_by=None) -> Job:
    """The job row of a start that runs in this process (run.operation_run_here), checked as a
    start is but sent to no worker; its task is the one runner's, where an admin's retry sends it."""
    clean = operation_params_clean(operation, target=target, params=params)
    packed = operation.packed(target, clean)
    job = job_create(kind=operation.kind_of(packed), params=packed, created_by=created_by, operation=operation.name)
    job.task_name = task_names.RUN_OPERATION
    job.save(update_fields=["task_name"])
    return job


def operation_job(operation: Operation, **kwargs) -> Job:
    """operation_start for callers without an idempotency key: the job alone."""
    return operation_start(operation, **kwargs)[0]


def _also_reporting(work, progress):
    """`work` whose progress also goes to `progress` (a console's)."""
    if work is None or progress is None:
        return work

    def call(job, report):
        def both(done, total=None, message=""):
            report(done, total, message)
            progress(done, total, message)
        return work(job, both)

    return call


def operation_run_here(operation: Operation, *, target: Any = None, params: Mapping | None = None, created_by=None,
                       progress=None) -> Job | None:
    """Runs `operation` in this process (a command's), as a job all the same: checked as a start
    is, its row on the job pages, its progress also sent to `progress`, and an admin's retry sends
    it to a worker (its task is the one runner's)."""
    job = operation_job_unqueued(operation, target=target, params=params, created_by=created_by)
    outside, work = operation.phases() if operation.phases else (None, operation.run)
    held = operation.around(job.params) if operation.around else nullcontext()
    with held:
        return job_execute(job_id=job.pk, work=_also_reporting(work, progress), snapshot=operation.snapshot,
                           outside=_also_reporting(outside, progress))
