"""Lifecycle of background jobs: created by a request, run by a Celery worker, read by the API.

Progress is written to the cache, not the job row, because the work it describes usually runs
inside one long transaction (an atomic import) whose writes nobody else can see until it ends.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from annotation.formats.errors import ImportRejected
from annotation.models import Job

log = logging.getLogger(__name__)
PROGRESS_TTL = 24 * 3600


def _progress_key(job_id: int) -> str:
    return f"job-progress:{job_id}"


def job_create(*, kind: str, params: dict, created_by=None) -> Job:
    return Job.objects.create(kind=kind, params=params, created_by=created_by)


def job_enqueue(*, job: Job, task) -> Job:
    """Sends the job to the worker once the transaction that created it has committed."""
    transaction.on_commit(lambda: task.delay(job.pk))
    return job


def job_progress_reporter(*, job_id: int, min_interval: float = 0.5) -> Callable[[int, int | None], None]:
    last = [0.0]

    def report(done: int, total: int | None = None, message: str = "") -> None:
        now = time.monotonic()
        if now - last[0] < min_interval and (total is None or done < total):
            return
        last[0] = now
        cache.set(_progress_key(job_id), {"done": int(done), "total": None if total is None else int(total),
                                          "message": message}, PROGRESS_TTL)

    return report


def job_live_progress(*, job: Job) -> dict:
    """The freshest progress known: the cache while running, the row once finished."""
    if not job.is_finished:
        live = cache.get(_progress_key(job.pk))
        if live:
            return live
    return {"done": job.progress_done, "total": job.progress_total, "message": job.message}


def job_execute(*, job_id: int, work: Callable[[Job, Callable], dict]) -> Job:
    """Runs `work(job, progress)` and records the outcome; ImportRejected becomes a failed job
    whose `errors` list names file, line and field. Other exceptions fail the job with their text."""
    job = Job.objects.get(pk=job_id)
    if job.is_finished:
        return job  # a redelivered message (acks_late) must not run the work twice
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, started_at=timezone.now())
    progress = job_progress_reporter(job_id=job.pk)
    fields: dict = {"finished_at": None}
    try:
        result = work(job, progress)
    except ImportRejected as exc:
        fields = {"status": Job.Status.FAILED, "errors": exc.as_list(), "message": str(exc)}
    except Exception as exc:  # noqa: BLE001 - the job must end failed, with a reason, whatever happened
        log.exception("job %s (%s) failed", job.pk, job.kind)
        fields = {"status": Job.Status.FAILED, "message": f"{type(exc).__name__}: {exc}"}
    else:
        live = cache.get(_progress_key(job.pk)) or {}
        total = live.get("total")
        fields = {"status": Job.Status.SUCCEEDED, "result": result, "message": "done",
                  "progress_total": total, "progress_done": total if total is not None else live.get("done", 0)}
    fields["finished_at"] = timezone.now()
    Job.objects.filter(pk=job.pk).update(**fields)
    cache.delete(_progress_key(job.pk))
    job.refresh_from_db()
    return job
