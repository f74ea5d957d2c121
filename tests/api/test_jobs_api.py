"""The jobs API: status with attempts, and POST jobs/{id}/retry/ (admins only)."""
from __future__ import annotations

import io

import pytest
from django.utils import timezone

from annotation.models import Job, JobAttempt
from tests.annotation.services.jobs.helpers import queued_job, running_job

pytestmark = pytest.mark.django_db


def _failed_job(**params) -> Job:
    job = running_job(queued_job(params=params))
    Job.objects.filter(pk=job.pk).update(status="failed", finished_at=timezone.now(), execution_token=None,
                                         message="Failed: the worker running attempt 1 went silent")
    JobAttempt.objects.filter(job=job).update(outcome="lost", message="the worker running attempt 1 went silent")
    return Job.objects.get(pk=job.pk)


@pytest.mark.parametrize("role", ["rater", "researcher", None])
def test_only_admins_may_retry_a_job(as_role, role):
    job = _failed_job()
    response = as_role(role).post(f"/api/v1/jobs/{job.pk}/retry/")
    assert response.status_code == 403
    assert Job.objects.get(pk=job.pk).status == "failed" and Job.objects.get(pk=job.pk).attempts == 1


def test_an_admin_retries_a_failed_job_and_sees_its_attempts(as_role, run_jobs):
    admin = as_role("admin")
    job = _failed_job(hello="again")
    before = admin.get(f"/api/v1/jobs/{job.pk}/").json()
    assert (before["retryable"], before["retry_refusal"], before["retry_url"]) == (True, None, f"/api/v1/jobs/{job.pk}/retry/")
    with run_jobs():
        response = admin.post(f"/api/v1/jobs/{job.pk}/retry/")
    assert response.status_code == 202 and response["Location"] == f"/api/v1/jobs/{job.pk}/"
    after = admin.get(f"/api/v1/jobs/{job.pk}/").json()
    assert (after["status"], after["attempts"], after["result"]) == ("succeeded", 2, {"pong": True, "params": {"hello": "again"}})
    assert [(a["number"], a["outcome"]) for a in after["attempt_history"]] == [(1, "lost"), (2, "succeeded")]
    assert after["retryable"] is False and after["retry_refusal"] is None


def test_a_running_job_cannot_be_retried(as_role):
    job = running_job()
    response = as_role("admin").post(f"/api/v1/jobs/{job.pk}/retry/")
    assert response.status_code == 409
    assert response.json()["detail"] == f"job {job.pk} cannot be retried: only a failed job can be retried; this one is running"


def test_a_refused_upload_is_removed_and_its_job_cannot_be_retried(as_role, run_jobs, settings):
    from tests.factories import make_dataset

    admin = as_role("admin")
    dataset = make_dataset()
    bad = io.BytesIO(b"q1 Q0 v1 1 0.9 t\nq1 Q0 v2 1 0.8 t\n")
    bad.name = "bad.trec"
    with run_jobs():
        job = admin.post(f"/api/v1/datasets/{dataset.pk}/runs/import/", {"file": bad}, format="multipart").json()
    body = admin.get(job["status_url"]).json()
    assert body["status"] == "failed" and body["errors"][0]["field"] == "rank"
    assert list(settings.UPLOAD_ROOT.iterdir()) == []  # the same bytes would be refused again: not kept
    assert body["retryable"] is False and body["retry_refusal"].startswith("its file was refused")
    response = admin.post(f"/api/v1/jobs/{job['id']}/retry/")
    assert response.status_code == 409 and "upload a corrected file" in response.json()["detail"]


def test_unknown_job_is_404(as_role):
    assert as_role("admin").post("/api/v1/jobs/999999/retry/").status_code == 404
