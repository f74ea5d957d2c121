"""Reports and exports computed by a real Celery worker process (PostgreSQL + Redis required)."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation.models import Artefact, Job, Report
from tests.annotation.services.reports.test_report_metrics import example_pool
from tests.conftest import wait_for_job
from tests.factories import make_user

pytestmark = [pytest.mark.worker, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_report_and_export_jobs_run_on_the_worker(celery_worker_process, tmp_path):
    pool = example_pool(tmp_path)
    admin = APIClient()
    admin.force_authenticate(make_user("admin"))
    started = admin.post(f"/api/v1/pools/{pool.pk}/reports/", {"kind": "metrics"}, format="json")
    assert started.status_code == 202 and started.json()["status"] == "queued"  # not eager
    done = wait_for_job(started.json()["id"], log_path=celery_worker_process["log"])
    assert done.status == Job.Status.SUCCEEDED, done.message
    report = Report.objects.get(pk=done.result["report_id"])
    assert report.result["per_run"]["A"]["metrics"]["correct@1"]["text"] == "75.0 (25.0 + 50.0)"

    started = admin.post(f"/api/v1/pools/{pool.pk}/exports/", {"format": "fire_json"}, format="json")
    done = wait_for_job(started.json()["id"], log_path=celery_worker_process["log"])
    assert done.status == Job.Status.SUCCEEDED, done.message
    artefact = Artefact.objects.get(pk=done.result["export_id"])
    assert artefact.params["counts"]["annotations"] == 12 and artefact.size > 0
