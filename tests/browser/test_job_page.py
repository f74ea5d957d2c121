"""The admin's job page: a job whose worker was lost shows its attempts and can be retried."""
from __future__ import annotations

import pytest
from django.utils import timezone

from annotation.models import Job, JobAttempt
from tests.annotation.services.jobs.helpers import queued_job, running_job
from tests.browser.conftest import assert_controls_labelled, log_in, snap
from tests.browser.scenarios import PASSWORD, admin_user

pytestmark = pytest.mark.browser


def _failed(**fields) -> Job:
    job = running_job(queued_job(params={"hello": "page"}))
    Job.objects.filter(pk=job.pk).update(status="failed", finished_at=timezone.now(), execution_token=None,
                                         message="Failed: the worker running attempt 1 went silent", **fields)
    JobAttempt.objects.filter(job=job).update(outcome="lost", message="the worker running attempt 1 went silent")
    return job


def test_admin_retries_a_job_whose_worker_was_lost(page, server):
    admin = admin_user()
    job = _failed()
    refused = _failed(errors=[{"file": "a.trec", "line": 2, "field": "rank", "message": "rank 1 twice"}])
    log_in(page, server, admin.username, PASSWORD)

    page.goto(f"{server}/admin-ui/jobs/{refused.pk}/")
    page.wait_for_selector(".job-progress[data-status=failed]")
    assert "Not retryable: its file was refused" in page.text_content(".job-actions")
    assert page.locator(".job-actions button").count() == 0

    page.goto(f"{server}/admin-ui/jobs/{job.pk}/")
    page.wait_for_selector(".job-progress[data-status=failed]")
    assert "went silent" in page.text_content(".job-message")
    assert "Attempt 1: lost" in page.text_content(".job-attempts")
    assert_controls_labelled(page)
    snap(page, "admin-job-failed")
    page.click("text=Retry this job")
    page.wait_for_selector(".job-progress[data-status=succeeded]")
    assert "Attempt 2: succeeded" in page.text_content(".job-attempts")
    assert page.locator(".job-actions button").count() == 0
    snap(page, "admin-job-retried")
    assert Job.objects.get(pk=job.pk).status == "succeeded"
