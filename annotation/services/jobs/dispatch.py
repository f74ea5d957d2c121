"""The one place jobs are handed to Celery.

Services name the task to run (task_names.py) and never import annotation.tasks; the name is
stored on the job, so the reaper and an admin's retry can send it again. Sending goes through
the Celery app's task registry, so eager mode (the embedded default, and most tests) runs the
task in-process exactly as a worker would.
"""
from __future__ import annotations

import logging

from celery import current_app
from celery.exceptions import NotRegistered
from django.db import transaction
from django.db.models import F
from django.db.models.functions import Now
from kombu.exceptions import OperationalError as BrokerError

from annotation.models import Job
from annotation.services.jobs.task_names import JOB_TASKS

log = logging.getLogger(__name__)


def job_enqueue(*, job: Job, task: str) -> Job:
    """Records which task runs the job and sends it once the transaction that created it has
    committed (a worker must find the row). `task` is a name from task_names.py."""
    name = getattr(task, "name", task)  # a Celery task object still works: its registered name
    if name not in JOB_TASKS:
        raise ValueError(f"'{name}' is not a job task; see annotation/services/jobs/task_names.py")
    job.task_name = name
    job.save(update_fields=["task_name"])
    transaction.on_commit(lambda: job_send(job_id=job.pk))
    return job


def _registered_task(name: str):
    try:
        return current_app.tasks[name]
    except NotRegistered:
        # Outside a worker the task modules are discovered lazily: nothing else imports them,
        # since services must not. Import them once, then look again.
        current_app.loader.import_default_modules()
        return current_app.tasks[name]


def job_send(*, job_id: int) -> bool:
    """Hands the job's message to the broker now. A broker that cannot be reached is logged, not
    raised: the job stays queued and the reaper sends it again. True when sent."""
    task_name = Job.objects.filter(pk=job_id).values_list("task_name", flat=True).first()
    if not task_name:
        log.error("job %s has no task to send", job_id)
        return False
    # Recorded before sending: in eager mode the send runs the whole job, whose row must not be
    # overwritten afterwards.
    Job.objects.filter(pk=job_id).update(dispatched_at=Now(), dispatches=F("dispatches") + 1)
    try:
        _registered_task(task_name).apply_async(args=(job_id,))
    except BrokerError:
        log.exception("job %s could not be sent to the broker; the reaper will send it again", job_id)
        return False
    return True
