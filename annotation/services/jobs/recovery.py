"""Jobs whose worker was lost, and admins' retries.

The reaper (`jobs_recover`, run by celery beat every RECOVER_EVERY_SECONDS):

- a **running** job whose attempt has sent no heartbeat for STALE_AFTER_SECONDS lost its worker
  (killed, out of memory, machine gone). Its transaction died with it, so nothing it wrote is
  kept; the files it left are removed. It is queued and sent again while its submission has
  attempts left (MAX_ATTEMPTS), and failed with a message saying so otherwise; never left
  running. Should the worker in fact be alive, its heartbeat thread sees the attempt taken back
  and its work rolls back (only one execution's work ever commits).
- a **queued** job whose message was sent long ago (RESEND_AFTER_SECONDS, doubling each time)
  is sent again: a Redis restarted without persistence forgets its queues. A duplicate message
  is harmless: the claim lets only one run the job.

`job_retry` puts a failed job back in the queue on an admin's request (the job page, or
POST /api/v1/jobs/{id}/retry/), with a fresh budget of automatic retries.
"""
from __future__ import annotations

import logging
from datetime import timedelta, timezone as dt_timezone
from pathlib import Path

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q
from django.db.models.functions import Now
from django.utils import timezone

from annotation.models import Job, JobAttempt
from annotation.selectors.jobs import job_upload_name
from annotation.services.jobs.dispatch import job_send
from annotation.services.jobs.lifecycle import cap_message, job_settings, progress_key
from annotation.services.jobs.task_names import JOB_TASKS
from annotation.services.storage import job_files as files
from annotation.storage import stored_file_exists

log = logging.getLogger(__name__)


class JobRetryRefused(ValueError):
    """An admin asked to retry a job that cannot be retried; the message says why."""


def _stale_running():
    cutoff = Now() - timedelta(seconds=job_settings()["STALE_AFTER_SECONDS"])
    running = JobAttempt.objects.filter(job=OuterRef("pk"), outcome=JobAttempt.Outcome.RUNNING)
    # A claimed job has a running attempt (same commit): its heartbeat decides. Jobs started
    # before attempts were recorded have none: their start time decides.
    return (Job.objects.filter(status=Job.Status.RUNNING)
            .exclude(Exists(running.filter(heartbeat_at__gte=cutoff)))
            .filter(Exists(running) | Q(started_at__lt=cutoff) | Q(started_at__isnull=True)))


def _when(moment) -> str:
    return timezone.localtime(moment, dt_timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "its start"


def _reap(job: Job) -> str | None:
    """Takes one stale job back: queued again or failed. Returns which, or None if it turned
    out not to be stale (a heartbeat arrived, or it finished) by the time of the update."""
    cfg = job_settings()
    lost = JobAttempt.objects.filter(job=job, outcome=JobAttempt.Outcome.RUNNING).order_by("-number").first()
    number = lost.number if lost else job.attempts
    worker = f" on {lost.worker}" if lost and lost.worker else ""
    silent = f"the worker running attempt {number}{worker} went silent (no heartbeat since " \
             f"{_when(lost.heartbeat_at if lost else job.started_at)})"
    used = job.attempts - job.attempts_at_submit
    if used < cfg["MAX_ATTEMPTS"]:
        verdict = "requeued"
        fields = {"status": Job.Status.QUEUED,
                  "message": cap_message(f"Retrying: {silent}; nothing it wrote was kept. "
                                         f"Attempt {job.attempts + 1} is queued.")}
    else:
        verdict = "failed"
        fields = {"status": Job.Status.FAILED, "finished_at": Now(),
                  "message": cap_message(f"Failed: {silent}, and the job has used its {cfg['MAX_ATTEMPTS']} "
                                         "attempt(s); nothing it wrote was kept. A worker killed for lack of memory "
                                         "is the usual cause. An admin can retry it from the job page.")}
    with transaction.atomic():
        # Still stale, still owned by the same execution: re-checked in the UPDATE itself, so a
        # heartbeat or a finish that lands meanwhile wins.
        taken = (_stale_running().filter(pk=job.pk, execution_token=job.execution_token)
                 .update(execution_token=None, **fields))
        if not taken:
            return None
        JobAttempt.objects.filter(job=job, outcome=JobAttempt.Outcome.RUNNING).update(
            outcome=JobAttempt.Outcome.LOST, finished_at=Now(), message=cap_message(silent))
    cache.delete(progress_key(job.pk))
    files.job_outputs_discard(job_id=job.pk)
    log.warning("job %s (%s): %s; %s", job.pk, job.kind, silent, verdict)
    if verdict == "requeued":
        job_send(job_id=job.pk)
    return verdict


def _resend_forgotten(now) -> int:
    """Queued jobs whose message may be lost, sent again with a doubling back-off."""
    base = timedelta(seconds=job_settings()["RESEND_AFTER_SECONDS"])
    candidates = (Job.objects.filter(status=Job.Status.QUEUED).exclude(task_name="")
                  .filter(Q(dispatched_at__lt=now - base) | Q(dispatched_at__isnull=True, created_at__lt=now - base))
                  .only("id", "dispatched_at", "dispatches", "created_at"))
    sent = 0
    for job in candidates:
        wait = base * 2 ** min(max(job.dispatches - 1, 0), 10)
        if (job.dispatched_at or job.created_at) <= now - wait:
            log.warning("job %s still queued %s after it was sent; sending it again", job.pk,
                        now - (job.dispatched_at or job.created_at))
            sent += job_send(job_id=job.pk)
    return sent


def _close_dangling_attempts() -> int:
    """Attempts still marked running although their job is over (the worker died between
    committing the job and closing its attempt)."""
    closed = 0
    for attempt in JobAttempt.objects.filter(outcome=JobAttempt.Outcome.RUNNING).exclude(
            job__status=Job.Status.RUNNING).select_related("job"):
        job = attempt.job
        if job.status == Job.Status.QUEUED:
            continue  # taking a job back closes its attempts in the same commit: not ours to judge
        ended = job.status if attempt.number == job.attempts else JobAttempt.Outcome.LOST
        closed += JobAttempt.objects.filter(pk=attempt.pk, outcome=JobAttempt.Outcome.RUNNING).update(
            outcome=ended, finished_at=job.finished_at or Now())
    return closed


def jobs_recover() -> dict[str, int]:
    """The reaper: see the module docstring. Returns what it did, for the log and the tests."""
    counts = {"requeued": 0, "failed": 0, "resent": 0, "closed": 0}
    for job in _stale_running().only("id", "kind", "attempts", "attempts_at_submit", "execution_token", "started_at"):
        verdict = _reap(job)
        if verdict:
            counts[verdict] += 1
    counts["resent"] = _resend_forgotten(timezone.now())
    counts["closed"] = _close_dangling_attempts()
    return counts


def job_retry_refusal(*, job: Job) -> str | None:
    """Why an admin may not retry this job now, or None when they may."""
    if job.status != Job.Status.FAILED:
        return f"only a failed job can be retried; this one is {job.status}"
    if job.task_name not in JOB_TASKS:
        return "this job was created before jobs recorded their task; start it again instead"
    if job.errors:
        return "its file was refused (see the problems listed); upload a corrected file instead"
    params = job.params or {}
    upload = job_upload_name(job=job)
    gone = (not stored_file_exists("uploads", upload)) if upload else bool(params.get("path")) and not Path(params["path"]).exists()
    if gone:
        days = settings.REJUDGE_JOBS["UPLOAD_RETENTION_DAYS"]
        return (f"its uploaded file is gone (uploads of failed jobs are kept {days} days); "
                "upload the file again instead")
    return None


def job_retry(*, job: Job, requested_by) -> Job:
    """Queues a failed job again (the same job, its attempts continuing) with a fresh budget of
    automatic retries. Raises JobRetryRefused naming the reason when it cannot be retried."""
    refusal = job_retry_refusal(job=job)
    if refusal:
        raise JobRetryRefused(f"job {job.pk} cannot be retried: {refusal}")
    who = getattr(requested_by, "username", "") or "an admin"
    with transaction.atomic():
        requeued = Job.objects.filter(pk=job.pk, status=Job.Status.FAILED).update(
            status=Job.Status.QUEUED, attempts_at_submit=F("attempts"), errors=[], result=None, finished_at=None,
            progress_done=0, progress_total=None, dispatches=0,
            message=cap_message(f"Retry requested by {who} at {_when(timezone.now())}."))
        if not requeued:
            raise JobRetryRefused(f"job {job.pk} cannot be retried: it is no longer failed (retried meanwhile?)")
        transaction.on_commit(lambda: job_send(job_id=job.pk))
    cache.delete(progress_key(job.pk))
    job.refresh_from_db()
    return job
