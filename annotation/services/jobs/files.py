"""The files a job leaves on disk: its upload, and what it writes under EXPORT_ROOT.

- **Outputs.** A job writes its files in a folder of its own, EXPORT_ROOT/jobs/<job id>/ (half-
  written ones as `*.part`). A file there that no Artefact row points to is not part of any
  result: a partial write, or a finished file whose transaction never committed (the worker was
  killed between renaming it and committing). Such files are removed when the job fails or is
  taken back by the reaper, and by the periodic clean-up once the job is over.
- **Uploads.** An import's upload (UPLOAD_ROOT/<random>/<name>) is needed for as long as the job
  may still run: while queued or running, and after a failure an admin may retry. It is removed
  - as soon as the import succeeded;
  - as soon as the file was refused (ImportRejected): the same bytes would be refused again, so
    such a job is not retryable and a corrected file must be uploaded;
  - for other failures (lost worker, unexpected error), by the periodic clean-up once the job
    failed more than UPLOAD_RETENTION_DAYS ago; until then an admin can retry it.
  Upload folders no job refers to (a request that failed after storing its file) are removed by
  the clean-up once older than ORPHAN_GRACE.
"""
from __future__ import annotations

import logging
import shutil
import time
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from annotation.models import Artefact, Job
from annotation.selectors.jobs import job_upload_path

log = logging.getLogger(__name__)

OUTPUTS_FOLDER = "jobs"
# Longer than any request takes between storing an upload (or starting a partial write) and
# committing the job that refers to it.
ORPHAN_GRACE = timedelta(hours=1)
PARTIAL_SUFFIXES = (".part", ".partial")


def job_output_relative(*, job_id: int, name: str) -> Path:
    """Where job `job_id` writes a file called `name`, relative to EXPORT_ROOT."""
    return Path(OUTPUTS_FOLDER) / str(int(job_id)) / name


def _outputs_dir(job_id: int) -> Path:
    return Path(settings.EXPORT_ROOT) / OUTPUTS_FOLDER / str(int(job_id))


def job_outputs_discard(*, job_id: int) -> int:
    """Removes the files in the job's folder that no Artefact refers to. Returns how many."""
    folder = _outputs_dir(job_id)
    if not folder.is_dir():
        return 0
    root = Path(settings.EXPORT_ROOT)
    kept = set(Artefact.objects.filter(path__startswith=f"{OUTPUTS_FOLDER}/{int(job_id)}/").values_list("path", flat=True))
    removed = 0
    for path in folder.rglob("*"):
        if path.is_file() and path.relative_to(root).as_posix() not in kept:
            path.unlink(missing_ok=True)
            removed += 1
    if not any(folder.iterdir()):
        folder.rmdir()
    if removed:
        log.info("job %s: removed %d file(s) no result refers to", job_id, removed)
    return removed


def job_upload_remove(*, job: Job) -> bool:
    """Deletes the job's upload folder (UPLOAD_ROOT/<random>/). True when something was removed."""
    path = job_upload_path(job=job)
    if path is None:
        return False
    root = Path(settings.UPLOAD_ROOT).resolve()
    folder = path.parent if path.parent.parent == root else None
    if folder is not None and folder.is_dir():
        shutil.rmtree(folder, ignore_errors=True)
        return True
    if path.exists():
        path.unlink(missing_ok=True)
        return True
    return False


def _older_than(path: Path, age: timedelta) -> bool:
    try:
        return time.time() - path.stat().st_mtime > age.total_seconds()
    except FileNotFoundError:
        return False


def _clean_uploads(now) -> int:
    root = Path(settings.UPLOAD_ROOT).resolve()
    if not root.is_dir():
        return 0
    retention = timedelta(days=settings.REJUDGE_JOBS["UPLOAD_RETENTION_DAYS"])
    owners: dict[Path, Job] = {}
    for job in Job.objects.filter(params__has_key="path").only("id", "status", "params", "finished_at"):
        path = job_upload_path(job=job)
        if path is not None:
            owners[path.parent if path.parent.parent == root else path] = job
    removed = 0
    for entry in root.iterdir():
        job = owners.get(entry.resolve())
        if job is None:
            gone = _older_than(entry, ORPHAN_GRACE)
        elif job.status == Job.Status.SUCCEEDED:
            gone = True  # its removal after success was interrupted
        elif job.status == Job.Status.FAILED:
            gone = job.finished_at is None or job.finished_at < now - retention
        else:
            gone = False  # queued or running: the job still needs it
        if gone:
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
            removed += 1
    return removed


def _clean_outputs() -> int:
    base = Path(settings.EXPORT_ROOT) / OUTPUTS_FOLDER
    if not base.is_dir():
        return 0
    folders = {int(p.name): p for p in base.iterdir() if p.is_dir() and p.name.isdigit()}
    live = set(Job.objects.filter(pk__in=folders, status__in=[Job.Status.QUEUED, Job.Status.RUNNING])
               .values_list("pk", flat=True))
    return sum(job_outputs_discard(job_id=job_id) for job_id in folders if job_id not in live)


def _clean_partials() -> int:
    """Half-written files of writers that do not use a job folder (CLI exports, proxy matrices)
    left by a killed process: nothing writes to a partial file for an hour and then finishes it."""
    root = Path(settings.EXPORT_ROOT)
    if not root.is_dir():
        return 0
    removed = 0
    for path in root.rglob("*"):
        if path.suffix in PARTIAL_SUFFIXES and path.is_file() and _older_than(path, ORPHAN_GRACE):
            path.unlink(missing_ok=True)
            removed += 1
    return removed


def job_files_clean() -> dict[str, int]:
    """The periodic clean-up (celery beat, hourly): see the module docstring for what goes."""
    counts = {"uploads": _clean_uploads(timezone.now()), "outputs": _clean_outputs(), "partials": _clean_partials()}
    if any(counts.values()):
        log.info("job files cleaned: %s", counts)
    return counts
