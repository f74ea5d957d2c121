"""Reads about jobs: their upload. (Whether an admin may retry a job: services/jobs/recovery.py.)"""
from __future__ import annotations

from pathlib import Path

from django.conf import settings

from annotation.models import Job


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
