"""Lifecycle of background jobs: created by a request, run by a Celery worker, read by the API.

Running a job (job_execute):

1. **Claim.** One UPDATE turns the job from queued to running and gives it a fresh execution
   token, and a JobAttempt row records who runs it. A message delivered twice (late acks and a
   redelivery, or the reaper re-sending) finds the job running or finished and does nothing.
2. **Heartbeat.** On a real worker a thread renews the attempt's heartbeat every
   HEARTBEAT_SECONDS on its own connection; the reaper (recovery.py) takes back a job whose
   heartbeat went stale, and the thread that finds its attempt taken back stops the work at its
   next progress report.
3. **Work and finish in one transaction.** The work's writes and the job's `succeeded` commit
   together, and only if the token still owns the job; otherwise everything rolls back. A
   worker killed at any point therefore leaves no partial rows: its transaction dies with it.
   A job may name work that must outlive its failure (`outside`: a machine judge's paid answers,
   each committed as it arrives): it runs after the claim, before that transaction.

Progress is written to the cache, not the job row, because the work it describes runs inside
that long transaction, whose writes nobody else can see until it ends.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from celery import current_task
from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError, connection, transaction
from django.db.models import F
from django.db.models.functions import Coalesce, Now

from annotation.formats.errors import ImportRejected
from annotation.models import Job, JobAttempt
from annotation.services.storage import job_files as files

log = logging.getLogger(__name__)
PROGRESS_TTL = 24 * 3600


class JobSuperseded(Exception):
    """This execution lost its claim on the job (the reaper took it back); its work must not commit."""


def job_settings() -> dict:
    return settings.REJUDGE_JOBS


def progress_key(job_id: int) -> str:
    return f"job-progress:{job_id}"


def job_create(*, kind: str, params: dict, created_by=None, operation: str = "",
               idempotency_key: str | None = None) -> Job:
    """The job row, queued. `operation`: the registered operation it runs (operations/start.py)."""
    return Job.objects.create(kind=kind, params=params, created_by=created_by, operation=operation,
                              idempotency_key=idempotency_key)


# --- What a failed job may store -----------------------------------------------------------------

def cap_text(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, saying how much was left out."""
    text = str(text)
    if len(text) <= limit:
        return text
    keep = max(0, limit - 40)  # room for the note
    return f"{text[:keep]}… [{len(text) - keep} more characters]"


def cap_errors(errors: list[dict]) -> list[dict]:
    """At most ERRORS_MAX problems, each text field cut to ERROR_TEXT_MAX_CHARS, and no more than
    ERRORS_MAX_BYTES of JSON in all: a refused file must not turn into megabytes on the job row."""
    cfg = job_settings()
    out: list[dict] = []
    size = 2
    for issue in errors[: cfg["ERRORS_MAX"]]:
        capped = {k: cap_text(v, cfg["ERROR_TEXT_MAX_CHARS"]) if isinstance(v, str) else v for k, v in issue.items()}
        size += len(json.dumps(capped, ensure_ascii=False).encode()) + 1
        if size > cfg["ERRORS_MAX_BYTES"]:
            break
        out.append(capped)
    return out


def cap_message(text: str) -> str:
    return cap_text(text, job_settings()["MESSAGE_MAX_CHARS"])


# --- Progress ----------------------------------------------------------------------------------

def job_progress_reporter(*, job_id: int, min_interval: float = 0.5,
                          abort: threading.Event | None = None) -> Callable[[int, int | None], None]:
    """The `progress(done, total)` callback a job's work calls. When `abort` is set (the claim
    was lost), the next call raises JobSuperseded, which stops the work and rolls it back."""
    last = [0.0]

    def report(done: int, total: int | None = None, message: str = "") -> None:
        if abort is not None and abort.is_set():
            raise JobSuperseded(f"job {job_id} was taken back from this worker")
        now = time.monotonic()
        if now - last[0] < min_interval and (total is None or done < total):
            return
        last[0] = now
        cache.set(progress_key(job_id), {"done": int(done), "total": None if total is None else int(total),
                                         "message": message}, PROGRESS_TTL)

    return report


def job_live_progress(*, job: Job) -> dict:
    """The freshest progress known: the cache while running, the row once finished."""
    if not job.is_finished:
        live = cache.get(progress_key(job.pk))
        if live:
            return live
    return {"done": job.progress_done, "total": job.progress_total, "message": job.message}


# --- Claim and heartbeat -------------------------------------------------------------------------

def _worker_name() -> str:
    task = current_task
    host = getattr(task.request, "hostname", None) if task else None
    return f"{host or socket.gethostname()} pid {os.getpid()}"


def job_claim(*, job_id: int) -> tuple[Job, JobAttempt] | None:
    """Takes a queued job for this execution, or returns None when it is not queued (running
    elsewhere, or finished). Concurrent claims serialize on the row: exactly one wins."""
    token = uuid.uuid4()
    with transaction.atomic():
        claimed = Job.objects.filter(pk=job_id, status=Job.Status.QUEUED).update(
            status=Job.Status.RUNNING, execution_token=token, attempts=F("attempts") + 1,
            started_at=Coalesce(F("started_at"), Now()))
        if not claimed:
            return None
        job = Job.objects.get(pk=job_id)
        attempt = JobAttempt.objects.create(job=job, number=job.attempts, token=token, worker=_worker_name()[:255],
                                            started_at=Now(), heartbeat_at=Now())
    return job, attempt


class JobHeartbeat:
    """Renews an attempt's heartbeat from a thread (with its own database connection, outside the
    work's transaction). Sets `lost` when the attempt is no longer running: the reaper took it back."""

    def __init__(self, *, token: uuid.UUID, interval: float) -> None:
        self.token = token
        self.interval = interval
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"job-heartbeat-{token}", daemon=True)

    def start(self) -> JobHeartbeat:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval + 30)

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                try:
                    alive = JobAttempt.objects.filter(token=self.token, outcome=JobAttempt.Outcome.RUNNING).update(
                        heartbeat_at=Now())
                except DatabaseError:
                    # The database was unreachable for a moment: try again at the next beat (a
                    # fresh connection); a long outage makes the job stale, which is right.
                    log.warning("job heartbeat %s could not be written", self.token, exc_info=True)
                    connection.close()
                    continue
                if not alive:
                    self.lost.set()
                    return
        finally:
            connection.close()


def _on_a_worker() -> bool:
    """True inside a task run by a worker process; False when eager (in the web process or a
    test), where nothing could take the job back and a second connection would only contend
    with the request's own transaction (SQLite has one writer)."""
    task = current_task
    return bool(task) and not task.request.is_eager


# --- Execution ---------------------------------------------------------------------------------

@dataclass
class _Outcome:
    status: str  # a JobAttempt.Outcome
    message: str = ""
    rejected: bool = False


def _finish(*, job_id: int, token: uuid.UUID, fields: dict) -> bool:
    """Ends the job if this execution still owns it. False when it does not (taken back)."""
    return bool(Job.objects.filter(pk=job_id, status=Job.Status.RUNNING, execution_token=token).update(
        **fields, execution_token=None, finished_at=Now()))


def _read_one_snapshot() -> None:
    # Must be the transaction's first statement; lets a long export read one consistent state.
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")


def _success_fields(job: Job) -> dict:
    live = cache.get(progress_key(job.pk)) or {}
    total = live.get("total")
    return {"status": Job.Status.SUCCEEDED, "message": "done" if job.attempts == 1 else f"done (attempt {job.attempts})",
            "progress_total": total, "progress_done": total if total is not None else live.get("done", 0)}


def _run(job: Job, token: uuid.UUID, work: Callable, progress: Callable, snapshot: bool,
         outside: Callable | None = None) -> _Outcome:
    outermost = not connection.in_atomic_block
    try:
        if outside is not None:
            outside(job, progress)
        with transaction.atomic():
            if snapshot and outermost:
                _read_one_snapshot()
            result = work(job, progress)
            if not _finish(job_id=job.pk, token=token, fields=_success_fields(job) | {"result": result}):
                raise JobSuperseded(f"job {job.pk} was taken back before it could finish")
        return _Outcome(JobAttempt.Outcome.SUCCEEDED, "done")
    except JobSuperseded as exc:
        return _Outcome(JobAttempt.Outcome.SUPERSEDED, str(exc))
    except ImportRejected as exc:
        fields = {"status": Job.Status.FAILED, "errors": cap_errors(exc.as_list()), "message": cap_message(str(exc))}
        rejected = True
    except Exception as exc:  # noqa: BLE001 - the job must end failed, with a reason, whatever happened
        log.exception("job %s (%s) failed", job.pk, job.kind)
        fields = {"status": Job.Status.FAILED, "message": cap_message(f"{type(exc).__name__}: {exc}")}
        rejected = False
    if not _finish(job_id=job.pk, token=token, fields=fields):
        return _Outcome(JobAttempt.Outcome.SUPERSEDED, f"it failed after it was taken back: {fields['message']}")
    return _Outcome(JobAttempt.Outcome.FAILED, fields["message"], rejected=rejected)


def _after(job: Job, attempt: JobAttempt, outcome: _Outcome) -> None:
    JobAttempt.objects.filter(pk=attempt.pk, outcome=JobAttempt.Outcome.RUNNING).update(
        outcome=outcome.status, finished_at=Now(), message=cap_message(outcome.message))
    if outcome.status == JobAttempt.Outcome.SUPERSEDED:
        # Another execution owns the job now (its progress, its files): leave them alone.
        log.warning("job %s attempt %s: %s; its work was rolled back", job.pk, attempt.number, outcome.message)
        return
    cache.delete(progress_key(job.pk))
    if outcome.status == JobAttempt.Outcome.FAILED:
        files.job_outputs_discard(job_id=job.pk)
    if outcome.status == JobAttempt.Outcome.SUCCEEDED or outcome.rejected:
        # After the commit: a rollback of an enclosing transaction must find the upload still there.
        transaction.on_commit(lambda: files.job_upload_remove(job=job))


def job_execute(*, job_id: int, work: Callable[[Job, Callable], dict], snapshot: bool = False,
                outside: Callable[[Job, Callable], None] | None = None) -> Job | None:
    """Runs `work(job, progress)` for a queued job and records the outcome (see the module
    docstring). ImportRejected fails the job with its `errors` (file, line, field); any other
    exception fails it with its text. `snapshot` reads the whole work from one REPEATABLE READ
    snapshot on PostgreSQL. `outside(job, progress)`, when given, runs first, outside the work's
    transaction (its writes commit as it makes them and stay if the job fails); it fails the job
    as the work would. Returns the job as it now stands (None if it does not exist)."""
    claim = job_claim(job_id=job_id)
    if claim is None:
        log.info("job %s is not queued (running elsewhere or finished): this delivery does nothing", job_id)
        return Job.objects.filter(pk=job_id).first()
    job, attempt = claim
    heartbeat = None
    if _on_a_worker():
        heartbeat = JobHeartbeat(token=attempt.token, interval=job_settings()["HEARTBEAT_SECONDS"]).start()
    progress = job_progress_reporter(job_id=job.pk, abort=heartbeat.lost if heartbeat else None)
    try:
        outcome = _run(job, attempt.token, work, progress, snapshot, outside)
    finally:
        if heartbeat:
            heartbeat.stop()
    _after(job, attempt, outcome)
    job.refresh_from_db()
    return job
