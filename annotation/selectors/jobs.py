"""Reads about jobs: their upload, and whether an admin may retry them."""
from __future__ import annotations

from pathlib import Path

from django.conf import settings

from annotation.models import Job
from annotation.services.storage import stored_file_exists


def job_upload_name(*, job: Job) -> str | None:
    """The job's upload, as a name in the uploads storage area, if it has one. Jobs record it as
    params["upload"]; those queued before that recorded an absolute path, which counts when it is
    under UPLOAD_ROOT. A path anywhere else (a file the admin owns) is never the platform's to delete."""
    params = job.params or {}
    if params.get("upload"):
        return str(params["upload"])
    raw = params.get("path")
    if not raw:
        return None
    root = Path(settings.UPLOAD_ROOT).resolve()
    path = Path(raw).resolve()
    return path.relative_to(root).as_posix() if root in path.parents else None


def job_retry_refusal(*, job: Job) -> str | None:
    """Why an admin may not retry this job now, or None when they may."""
    from annotation.services.jobs.task_names import JOB_TASKS

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
