"""Jobs submitted through Redis to a real Celery worker process (PostgreSQL + Redis required)."""
from __future__ import annotations

import io

import pytest

from annotation.models import Job, Run
from annotation.services.jobs import job_create, job_enqueue, task_names
from tests.conftest import wait_for_job
from tests.factories import make_dataset, make_user

pytestmark = [pytest.mark.worker, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_ping_job_goes_through_redis_to_the_worker(celery_worker_process):
    from django.db import transaction

    with transaction.atomic():
        job = job_create(kind="ping", params={"hello": "worker"})
        job_enqueue(job=job, task=task_names.PING)
    done = wait_for_job(job.pk, log_path=celery_worker_process["log"])
    assert done.status == Job.Status.SUCCEEDED
    assert done.result == {"pong": True, "params": {"hello": "worker"}}


def test_run_upload_is_imported_by_the_worker(celery_worker_process):
    from rest_framework.test import APIClient

    admin = APIClient()
    admin.force_authenticate(make_user("admin"))
    dataset = make_dataset()
    f = io.BytesIO(b"q1 Q0 v1 1 0.9 w\nq1 Q0 v2 2 0.8 w\nq2 Q0 v3 1 0.7 w\n")
    f.name = "worker.trec"
    response = admin.post(f"/api/v1/datasets/{dataset.pk}/runs/import/", {"file": f}, format="multipart")
    assert response.status_code == 202
    assert response.json()["status"] == "queued"  # not eager: the worker does the import
    done = wait_for_job(response.json()["id"], log_path=celery_worker_process["log"])
    assert done.status == Job.Status.SUCCEEDED, done.message
    assert Run.objects.get(pk=done.result["run_id"]).prediction_count == 3
    body = admin.get(response["Location"]).json()
    assert body["status"] == "succeeded" and body["progress"]["fraction"] == 1.0
