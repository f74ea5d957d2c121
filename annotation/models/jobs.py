"""Background work (imports, pool builds, reports, exports) as the API and pages see it.

A job is run by one execution at a time: a worker *claims* it (queued -> running, with a fresh
`execution_token`) and records a `JobAttempt` whose heartbeat it keeps renewing. Only the
execution holding the token may finish the job, so a message delivered twice (late acks,
redelivery, the reaper re-sending) never runs the work twice. See annotation/services/jobs/.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models


class Job(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    kind = models.CharField(max_length=40)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    params = models.JSONField(default=dict, blank=True)
    progress_done = models.BigIntegerField(default=0)
    progress_total = models.BigIntegerField(null=True, blank=True)
    message = models.TextField(blank=True)
    result = models.JSONField(null=True, blank=True)
    errors = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    # A client-chosen key: the same request sent again returns this job instead of starting another.
    idempotency_key = models.CharField(max_length=100, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The registered Celery task that runs it: what the reaper and an admin's retry send again.
    task_name = models.CharField(max_length=200, blank=True, default="")
    # The registered operation it runs (annotation/services/operations/registry.py), whose
    # declared parameters `params` holds; "" for a job queued before operations were registered,
    # which its task name still runs.
    operation = models.CharField(max_length=60, blank=True, default="")
    # Executions started, over the job's whole life (the number of the latest JobAttempt).
    attempts = models.PositiveIntegerField(default=0)
    # `attempts` when the job was last submitted (0, or the count at an admin's retry): the
    # automatic retry budget after a lost worker counts the attempts since then.
    attempts_at_submit = models.PositiveIntegerField(default=0)
    # The claim of the execution that owns the job while it runs; null when nobody does.
    execution_token = models.UUIDField(null=True, blank=True)
    # When the job's message was last handed to the broker, and how often: the reaper re-sends
    # a job left queued (a message lost with a restarted Redis) with a growing back-off.
    dispatched_at = models.DateTimeField(null=True, blank=True)
    dispatches = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["created_by", "idempotency_key"], name="job_unique_idempotency_key"),
        ]
        indexes = [models.Index(fields=["status"], name="job_status_idx")]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED)

    @property
    def progress_fraction(self) -> float | None:
        if not self.progress_total:
            return None
        return min(1.0, self.progress_done / self.progress_total)


class JobAttempt(models.Model):
    """One execution of a job by a worker: who ran it, its heartbeat, and how it ended.

    The heartbeat lives here rather than on the job row so that the work's own transaction (which
    finishes the job row, and for exports reads one REPEATABLE READ snapshot) never meets a
    concurrent update of that row."""

    class Outcome(models.TextChoices):
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        LOST = "lost"  # the worker went silent; the reaper took the job back
        SUPERSEDED = "superseded"  # it finished after losing its claim; its work was rolled back

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="attempt_records")
    number = models.PositiveIntegerField()
    token = models.UUIDField(unique=True)
    worker = models.CharField(max_length=255, blank=True)
    started_at = models.DateTimeField()
    heartbeat_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=12, choices=Outcome.choices, default=Outcome.RUNNING)
    message = models.TextField(blank=True)

    class Meta:
        ordering = ["job", "number"]
        constraints = [models.UniqueConstraint(fields=["job", "number"], name="job_attempt_unique_number")]
        indexes = [models.Index(fields=["outcome", "heartbeat_at"], name="job_attempt_liveness_idx")]

    def __str__(self) -> str:
        return f"job {self.job_id} attempt {self.number} ({self.outcome})"
