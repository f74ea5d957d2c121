"""Builders for job tests."""
from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from annotation.models import Job, JobAttempt
from annotation.services.jobs import task_names
from annotation.services.jobs.lifecycle import job_claim, job_create
from annotation.services.storage.uploads import upload_store


def queued_job(*, params: dict | None = None, kind: str = "ping", task: str = task_names.PING) -> Job:
    """A job as a start service leaves it (its message not yet sent)."""
    job = job_create(kind=kind, params=params or {})
    job.task_name = task
    job.save(update_fields=["task_name"])
    return job


def running_job(job: Job | None = None, *, silent_for: timedelta = timedelta(minutes=10)) -> Job:
    """A job claimed by a worker whose last heartbeat was `silent_for` ago."""
    job = job or queued_job()
    assert job_claim(job_id=job.pk) is not None
    JobAttempt.objects.filter(job=job).update(heartbeat_at=timezone.now() - silent_for)
    return Job.objects.get(pk=job.pk)


def stored_upload(name: str = "run.trec", content: bytes = b"q1 Q0 v1 1 0.9 t\n") -> Path:
    """The stored upload's path in UPLOAD_ROOT (the local storage these tests run on)."""
    return Path(settings.UPLOAD_ROOT) / upload_store(uploaded_file=SimpleUploadedFile(name, content))


def files_under(root) -> list[str]:
    root = Path(root)
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
