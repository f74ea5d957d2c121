"""A release made by a real Celery worker process (PostgreSQL + Redis), downloaded and verified."""
from __future__ import annotations

import hashlib

import pytest
from rest_framework.test import APIClient

from annotation.models import Job, Release
from tests.annotation.services.reports.test_report_metrics import example_pool
from tests.api.test_releases_api import _body, _verified
from tests.conftest import wait_for_job
from tests.factories import make_user

pytestmark = [pytest.mark.worker, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_a_release_job_runs_on_the_worker(celery_worker_process, tmp_path):
    pool = example_pool(tmp_path)
    admin = APIClient()
    admin.force_authenticate(make_user("admin"))
    started = admin.post("/api/v1/releases/", {"name": "example-fire", "pools": [pool.pk], "allow_unresolved": True}, format="json")
    assert started.status_code == 202 and started.json()["status"] == "queued"  # not eager
    done = wait_for_job(started.json()["id"], timeout=600, log_path=celery_worker_process["log"])
    assert done.status == Job.Status.SUCCEEDED, done.message
    release = Release.objects.get(pk=done.result["release_id"])
    assert release.slug == "example-fire@v1" and done.result["sha256"] == release.sha256
    data = _body(admin.get(done.result["archive_url"]))
    assert hashlib.sha256(data).hexdigest() == release.sha256
    assert _verified(data, "example-fire-v1")["qrels.txt"].count(b"\n") == 16
