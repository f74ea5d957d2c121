"""The reaper (jobs whose worker went silent, messages lost with the broker) and admins' retries.

Tests run eagerly: a job the reaper sends again runs at once, in the test's process."""
from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from annotation.models import Job, JobAttempt
from annotation.services.jobs.lifecycle import job_claim, progress_key
from annotation.services.jobs.recovery import JobRetryRefused, job_retry, job_retry_refusal, jobs_recover
from tests.annotation.services.jobs.helpers import queued_job, running_job, stored_upload

pytestmark = pytest.mark.django_db


def _outcomes(job) -> list[str]:
    return list(JobAttempt.objects.filter(job=job).order_by("number").values_list("outcome", flat=True))


def test_a_job_whose_worker_went_silent_runs_again():
    job = running_job(queued_job(params={"n": 1}))
    worker = JobAttempt.objects.get(job=job).worker
    assert jobs_recover()["requeued"] == 1
    job.refresh_from_db()
    assert (job.status, job.attempts, job.message, job.result) == ("succeeded", 2, "done (attempt 2)",
                                                                   {"pong": True, "params": {"n": 1}})
    assert _outcomes(job) == ["lost", "succeeded"]
    lost = JobAttempt.objects.get(job=job, number=1)
    assert lost.message.startswith(f"the worker running attempt 1 on {worker} went silent (no heartbeat since ")
    assert lost.finished_at is not None


def test_a_job_out_of_attempts_fails_saying_why_and_keeps_its_upload_for_a_retry(settings):
    settings.REJUDGE_JOBS = settings.REJUDGE_JOBS | {"MAX_ATTEMPTS": 1}
    upload = stored_upload()
    job = running_job(queued_job(params={"path": str(upload)}))
    leftover = Path(settings.EXPORT_ROOT) / "jobs" / str(job.pk) / "half.csv.part"
    leftover.parent.mkdir(parents=True)
    leftover.write_text("pool_id,pair_id\n1,")
    cache.set(progress_key(job.pk), {"done": 10, "total": 10, "message": ""})

    assert jobs_recover()["failed"] == 1
    job.refresh_from_db()
    assert job.status == "failed" and job.finished_at is not None and job.execution_token is None
    assert job.message.startswith("Failed: the worker running attempt 1 on ")
    assert "has used its 1 attempt(s); nothing it wrote was kept" in job.message and "retry it" in job.message
    assert not leftover.exists() and not leftover.parent.exists()
    assert upload.exists()
    assert cache.get(progress_key(job.pk)) is None
    assert job_retry_refusal(job=job) is None


def test_a_job_with_a_fresh_heartbeat_is_left_alone():
    job = running_job(silent_for=timedelta(seconds=0))
    assert jobs_recover() == {"requeued": 0, "failed": 0, "resent": 0, "closed": 0}
    job.refresh_from_db()
    assert job.status == "running" and _outcomes(job) == ["running"]


def test_a_job_started_before_attempts_were_recorded_is_judged_by_its_start():
    from annotation.services.jobs import task_names

    old = Job.objects.create(kind="ping", task_name=task_names.PING, status="running",
                             started_at=timezone.now() - timedelta(hours=1))
    recent = Job.objects.create(kind="ping", task_name=task_names.PING, status="running", started_at=timezone.now())
    assert jobs_recover()["requeued"] == 1
    old.refresh_from_db()
    recent.refresh_from_db()
    assert old.status == "succeeded" and _outcomes(old) == ["succeeded"]
    assert recent.status == "running"


def test_a_queued_job_whose_message_may_be_lost_is_sent_again_with_a_doubling_back_off():
    base = settings.REJUDGE_JOBS["RESEND_AFTER_SECONDS"]
    now = timezone.now()
    waiting, due, never_sent = queued_job(), queued_job(), queued_job()
    # Sent 3 times: the next send waits 4 x base after the last; only 2 x base have passed.
    Job.objects.filter(pk=waiting.pk).update(dispatches=3, dispatched_at=now - timedelta(seconds=2 * base))
    # Sent once, 1.5 x base ago: due.
    Job.objects.filter(pk=due.pk).update(dispatches=1, dispatched_at=now - timedelta(seconds=1.5 * base))
    # Never sent (the broker was down when it was created), created 2 x base ago: due.
    Job.objects.filter(pk=never_sent.pk).update(created_at=now - timedelta(seconds=2 * base))

    assert jobs_recover()["resent"] == 2
    statuses = {j.pk: (j.status, j.dispatches) for j in Job.objects.filter(pk__in=[waiting.pk, due.pk, never_sent.pk])}
    assert statuses == {waiting.pk: ("queued", 3), due.pk: ("succeeded", 2), never_sent.pk: ("succeeded", 1)}


def test_an_attempt_left_running_after_its_job_finished_is_closed():
    job = queued_job()
    job_claim(job_id=job.pk)
    # The worker committed the job, then died before closing its attempt.
    Job.objects.filter(pk=job.pk).update(status="succeeded", finished_at=timezone.now(), execution_token=None)
    assert jobs_recover()["closed"] == 1
    assert _outcomes(job) == ["succeeded"]


def _failed_by_a_lost_worker(**params) -> Job:
    job = running_job(queued_job(params=params))
    Job.objects.filter(pk=job.pk).update(status="failed", finished_at=timezone.now(), execution_token=None,
                                         message="Failed: the worker went silent")
    JobAttempt.objects.filter(job=job).update(outcome="lost")
    return Job.objects.get(pk=job.pk)


def test_an_admin_retries_a_failed_job(django_capture_on_commit_callbacks):
    from tests.factories import make_user

    job = _failed_by_a_lost_worker()
    with django_capture_on_commit_callbacks(execute=True):
        job_retry(job=job, requested_by=make_user("admin", username="ada"))
    job.refresh_from_db()
    assert (job.status, job.attempts, job.attempts_at_submit) == ("succeeded", 2, 1)
    assert _outcomes(job) == ["lost", "succeeded"]


def test_a_retry_gives_the_job_a_fresh_budget_of_automatic_retries(settings, django_capture_on_commit_callbacks):
    settings.REJUDGE_JOBS = settings.REJUDGE_JOBS | {"MAX_ATTEMPTS": 1}
    job = _failed_by_a_lost_worker()
    job_retry(job=job, requested_by=None)  # no commit callbacks run: the job stays queued
    assert Job.objects.get(pk=job.pk).message.startswith("Retry requested by an admin at ")
    running_job(Job.objects.get(pk=job.pk))  # attempt 2 is lost too
    assert jobs_recover()["failed"] == 1  # 1 attempt since the retry: out of budget again, not of the old one
    assert Job.objects.get(pk=job.pk).attempts == 2


@pytest.mark.parametrize("case, reason", [
    ("running", "only a failed job can be retried; this one is running"),
    ("refused", "its file was refused"),
    ("upload gone", "its uploaded file is gone"),
    ("no task", "created before jobs recorded their task"),
])
def test_jobs_that_cannot_be_retried_say_why(case, reason):
    if case == "running":
        job = running_job()
    elif case == "refused":
        job = _failed_by_a_lost_worker()
        Job.objects.filter(pk=job.pk).update(errors=[{"file": "a.trec", "line": 1, "field": "rank", "message": "bad"}])
    elif case == "upload gone":
        upload = stored_upload()
        job = _failed_by_a_lost_worker(path=str(upload))
        upload.unlink()
    else:
        job = _failed_by_a_lost_worker()
        Job.objects.filter(pk=job.pk).update(task_name="")
    job.refresh_from_db()
    before = job.status
    with pytest.raises(JobRetryRefused, match=reason):
        job_retry(job=job, requested_by=None)
    assert Job.objects.get(pk=job.pk).status == before
