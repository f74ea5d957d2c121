"""The files a job leaves in storage: its upload, and what it writes in the exports area.

- **Outputs.** A job writes its files in a folder of its own, jobs/<job id>/ of the exports area
  (half-written ones as `*.part` on a local folder; an unfinished multipart upload, which no
  reader sees, in a bucket). A file there that no Artefact row points to is not part of any
  result: a partial write, or a finished file whose transaction never committed (the worker was
  killed between finishing it and committing). Such files are removed when the job fails or is
  taken back by the reaper, and by the periodic clean-up once the job is over.
- **Uploads.** An import's upload (<random>/<name> in the uploads area) is needed for as long as
  the job may still run: while queued or running, and after a failure an admin may retry. It is
  removed
  - as soon as the import succeeded;
  - as soon as the file was refused (ImportRejected): the same bytes would be refused again, so
    such a job is not retryable and a corrected file must be uploaded;
  - for other failures (lost worker, unexpected error), by the periodic clean-up once the job
    failed more than UPLOAD_RETENTION_DAYS ago; until then an admin can retry it.
  Upload folders no job refers to (a request that failed after storing its file) are removed by
  the clean-up once older than ORPHAN_GRACE.
Everything goes through the storage API, so the clean-up works the same on a bucket.
"""
from __future__ import annotations

import logging
from datetime import datetime, timedelta
from pathlib import PurePosixPath

from django.conf import settings
from django.utils import timezone

from annotation.models import Artefact, Job
from annotation.selectors.jobs import job_upload_name
from annotation.storage import (stored_file_delete, stored_file_exists, stored_file_modified, stored_files_under,
                                stored_folder_delete, stored_folders)

log = logging.getLogger(__name__)

EXPORTS, UPLOADS = "exports", "uploads"
OUTPUTS_FOLDER = "jobs"
# Longer than any request takes between storing an upload (or starting a partial write) and
# committing the job that refers to it.
ORPHAN_GRACE = timedelta(hours=1)
PARTIAL_SUFFIXES = (".part", ".partial")


def job_output_relative(*, job_id: int, name: str) -> PurePosixPath:
    """Where job `job_id` writes a file called `name`, in the exports area."""
    return PurePosixPath(OUTPUTS_FOLDER) / str(int(job_id)) / name


def job_outputs_discard(*, job_id: int) -> int:
    """Removes the files in the job's folder that no Artefact refers to. Returns how many."""
    prefix = f"{OUTPUTS_FOLDER}/{int(job_id)}/"
    names = list(stored_files_under(EXPORTS, prefix))
    if not names:
        return 0
    kept = set(Artefact.objects.filter(path__startswith=prefix).values_list("path", flat=True))
    removed = 0
    for name in names:
        if name not in kept:
            stored_file_delete(EXPORTS, name)
            removed += 1
    if removed == len(names):
        stored_folder_delete(EXPORTS, prefix)
    if removed:
        log.info("job %s: removed %d file(s) no result refers to", job_id, removed)
    return removed


def _upload_folder(name: str) -> str | None:
    """The <random>/ folder an upload name is in (None for a name at the top of the area)."""
    parts = PurePosixPath(name).parts
    return parts[0] if len(parts) == 2 else None


def job_upload_remove(*, job: Job) -> bool:
    """Deletes the job's upload (and its <random>/ folder). True when something was removed."""
    name = job_upload_name(job=job)
    if name is None:
        return False
    folder = _upload_folder(name)
    if folder is not None:
        return stored_folder_delete(UPLOADS, folder) > 0
    if not stored_file_exists(UPLOADS, name):
        return False
    stored_file_delete(UPLOADS, name)
    return True


def _newest(area: str, names: list[str]) -> datetime | None:
    times = []
    for name in names:
        try:
            times.append(stored_file_modified(area, name))
        except (FileNotFoundError, OSError):
            continue
    return max(times) if times else None


def _older_than(moment: datetime | None, age: timedelta) -> bool:
    if moment is None:
        return False
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment, timezone.get_current_timezone())
    return timezone.now() - moment > age


def _clean_uploads(now) -> int:
    retention = timedelta(days=settings.REJUDGE_JOBS["UPLOAD_RETENTION_DAYS"])
    entries: dict[str, list[str]] = {}
    for name in stored_files_under(UPLOADS, ""):
        entries.setdefault(_upload_folder(name) or name, []).append(name)
    if not entries:
        return 0
    owners: dict[str, Job] = {}
    for job in Job.objects.filter(params__has_any_keys=["path", "upload"]).only("id", "status", "params", "finished_at"):
        name = job_upload_name(job=job)
        if name is not None:
            owners[_upload_folder(name) or name] = job
    removed = 0
    for entry, names in entries.items():
        job = owners.get(entry)
        if job is None:
            gone = _older_than(_newest(UPLOADS, names), ORPHAN_GRACE)
        elif job.status == Job.Status.SUCCEEDED:
            gone = True  # its removal after success was interrupted
        elif job.status == Job.Status.FAILED:
            gone = job.finished_at is None or job.finished_at < now - retention
        else:
            gone = False  # queued or running: the job still needs it
        if gone:
            if len(names) == 1 and names[0] == entry:
                stored_file_delete(UPLOADS, entry)
            else:
                stored_folder_delete(UPLOADS, entry)
            removed += 1
    return removed


def _clean_outputs() -> int:
    folders = {int(name): name for name in stored_folders(EXPORTS, OUTPUTS_FOLDER) if name.isdigit()}
    if not folders:
        return 0
    live = set(Job.objects.filter(pk__in=folders, status__in=[Job.Status.QUEUED, Job.Status.RUNNING])
               .values_list("pk", flat=True))
    return sum(job_outputs_discard(job_id=job_id) for job_id in folders if job_id not in live)


def _clean_partials() -> int:
    """Half-written files of writers that do not use a job folder (CLI exports, proxy matrices)
    left by a killed process: nothing writes to a partial file for an hour and then finishes it.
    (A bucket has none: an unfinished multipart upload is not a file; the bucket's lifecycle rule
    AbortIncompleteMultipartUpload removes its parts.)"""
    removed = 0
    for name in stored_files_under(EXPORTS, ""):
        if PurePosixPath(name).suffix in PARTIAL_SUFFIXES and _older_than(_newest(EXPORTS, [name]), ORPHAN_GRACE):
            stored_file_delete(EXPORTS, name)
            removed += 1
    return removed


def job_files_clean() -> dict[str, int]:
    """The periodic clean-up (celery beat, hourly): see the module docstring for what goes."""
    counts = {"uploads": _clean_uploads(timezone.now()), "outputs": _clean_outputs(), "partials": _clean_partials()}
    if any(counts.values()):
        log.info("job files cleaned: %s", counts)
    return counts
