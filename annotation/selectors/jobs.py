"""Reads about jobs: their upload, and whether an admin may retry them."""
from __future__ import annotations

from pathlib import Path

from django.conf import settings

from annotation.models import Job


def job_upload_path(*, job: Job) -> Path | None:
    """The uploaded file the job imports, if it has one under UPLOAD_ROOT. A path anywhere else
    (a CLI import of a file the admin owns) is never the platform's to delete."""
    raw = (job.params or {}).get("path")
    if not raw:
        return None
    root = Path(settings.UPLOAD_ROOT).resolve()
    path = Path(raw).resolve()
    return path if root in path.parents else None


def job_retry_refusal(*, job: Job) -> str | None:
    """Why an admin may not retry this job now, or None when they may."""
    from annotation.services.jobs.task_names import JOB_TASKS

    if job.status != Job.Status.FAILED:
        return f"only a failed job can be retried; this one is {job.status}"
    if job.task_name not in JOB_TASKS:
        return "this job was created before jobs recorded their task; start it again instead"
    if job.errors:
        return "its file was refused (see the problems listed); upload a corrected file instead"
    path = (job.params or {}).get("path")
    if path and not Path(path).exists():
        days = settings.REJUDGE_JOBS["UPLOAD_RETENTION_DAYS"]
        return (f"its uploaded file is gone (uploads of failed jobs are kept {days} days); "
                "upload the file again instead")
    return None
