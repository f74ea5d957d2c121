"""The periodic clean-up of uploads and job files (services/storage/job_files.py)."""
from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from annotation.models import Artefact, Dataset, Job
from annotation.services.storage.job_files import job_files_clean, job_outputs_discard
from tests.annotation.services.jobs.helpers import files_under, queued_job, stored_upload

pytestmark = pytest.mark.django_db


def _age(path: Path, hours: float) -> None:
    moment = time.time() - hours * 3600
    os.utime(path, (moment, moment))


def _job_with_upload(status: str, *, failed_days_ago: float = 0) -> tuple[Job, Path]:
    upload = stored_upload()
    job = queued_job(params={"path": str(upload)})
    finished = timezone.now() - timedelta(days=failed_days_ago) if status in ("failed", "succeeded") else None
    Job.objects.filter(pk=job.pk).update(status=status, finished_at=finished)
    return job, upload


def test_uploads_stay_while_a_job_may_need_them_and_go_after():
    retention = settings.REJUDGE_JOBS["UPLOAD_RETENTION_DAYS"]
    _, queued = _job_with_upload("queued")
    _, running = _job_with_upload("running")
    _, failed_recently = _job_with_upload("failed", failed_days_ago=retention - 1)
    _, failed_long_ago = _job_with_upload("failed", failed_days_ago=retention + 1)
    _, succeeded = _job_with_upload("succeeded")  # its removal after success was interrupted
    orphan_old, orphan_new = stored_upload(), stored_upload()  # stored by requests whose job never committed
    _age(orphan_old, hours=2)  # an upload's age is its file's (a bucket has no folders to date)

    assert job_files_clean()["uploads"] == 3
    kept = {p for p in (queued, running, failed_recently, failed_long_ago, succeeded, orphan_old, orphan_new) if p.exists()}
    assert kept == {queued, running, failed_recently, orphan_new}


def test_files_no_result_refers_to_go_once_their_job_is_over():
    dataset = Dataset.objects.create(name="d")
    done, live = queued_job(), queued_job()
    Job.objects.filter(pk=done.pk).update(status="succeeded")
    Job.objects.filter(pk=live.pk).update(status="running")
    root = Path(settings.EXPORT_ROOT)
    for relative in (f"jobs/{done.pk}/export.csv", f"jobs/{done.pk}/export-killed.csv", f"jobs/{live.pk}/export.csv.part",
                     "jobs/999999/left.csv", "pools/pool-1/cli.csv.part", "pools/pool-1/cli-fresh.csv.part",
                     "pools/pool-1/cli.csv"):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text("x")
    Artefact.objects.create(dataset=dataset, kind="labels_csv", name="export.csv", path=f"jobs/{done.pk}/export.csv",
                            job_id=done.pk)
    _age(root / "pools/pool-1/cli.csv.part", hours=2)

    counts = job_files_clean()
    assert (counts["outputs"], counts["partials"]) == (2, 1)
    assert files_under(root) == sorted([f"jobs/{done.pk}/export.csv", f"jobs/{live.pk}/export.csv.part",
                                        "pools/pool-1/cli-fresh.csv.part", "pools/pool-1/cli.csv"])


def test_discarding_a_jobs_files_keeps_those_a_result_refers_to():
    dataset = Dataset.objects.create(name="d")
    job = queued_job()
    folder = Path(settings.EXPORT_ROOT) / "jobs" / str(job.pk)
    folder.mkdir(parents=True)
    for name in ("kept.json", "orphan.json", "orphan.json.part"):
        (folder / name).write_text("{}")
    Artefact.objects.create(dataset=dataset, kind="fire_json", name="kept.json", path=f"jobs/{job.pk}/kept.json", job=job)
    assert job_outputs_discard(job_id=job.pk) == 2
    assert [p.name for p in folder.iterdir()] == ["kept.json"]
