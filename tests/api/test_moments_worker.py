"""A sampled pool built and scored by a real Celery worker process (PostgreSQL + Redis required)."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation.models import Job, PooledPair, Report
from tests.annotation.services.pools.test_sampled_pools import clip_run, rankings
from tests.conftest import wait_for_job
from tests.factories import make_dataset, make_user

pytestmark = [pytest.mark.worker, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_sampled_pool_and_its_infap_report_come_from_the_worker(celery_worker_process):
    admin = APIClient()
    admin.force_authenticate(make_user("admin"))
    dataset = make_dataset(clips=30, captions=3)
    runs = [clip_run(dataset, name, rankings(shift)) for name, shift in (("A", 0), ("B", 1))]
    response = admin.post("/api/v1/sampled-pools/", {"dataset": dataset.pk, "name": "deep", "runs": [r.pk for r in runs],
                                                      "strata": [[1, 5, 1], [6, 20, 0.3]], "seed": 4}, format="json")
    assert response.status_code == 202 and response.json()["status"] == "queued"
    built = wait_for_job(response.json()["id"], log_path=celery_worker_process["log"])
    assert built.status == Job.Status.SUCCEEDED, built.message
    pool_id = built.result["pool_id"]
    assert PooledPair.objects.filter(pool_id=pool_id).count() == built.result["sampled"]

    response = admin.post(f"/api/v1/pools/{pool_id}/infap/", {}, format="json")
    scored = wait_for_job(response.json()["id"], log_path=celery_worker_process["log"])
    assert scored.status == Job.Status.SUCCEEDED, scored.message
    report = Report.objects.get(pk=scored.result["report_id"])
    assert report.kind == "infap" and [r["run"] for r in report.result["runs"]] == ["A", "B"]
