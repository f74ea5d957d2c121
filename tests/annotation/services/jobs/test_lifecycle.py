"""Running a job: one claim, work and finish in one transaction, capped errors, upload removal."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from annotation.formats.errors import FileIssue, ImportRejected
from annotation.models import Artefact, Dataset, Job, JobAttempt
from annotation.services.exports.labels import export_create
from annotation.services.storage.job_files import job_output_relative
from annotation.services.jobs.lifecycle import (JobHeartbeat, JobSuperseded, job_claim, job_execute,
                                                job_progress_reporter)
from annotation.services.jobs.recovery import jobs_recover
from tests.annotation.services.jobs.helpers import files_under, queued_job, stored_upload

pytestmark = pytest.mark.django_db


def _boom(job, progress):
    raise AssertionError("this work must not run")


def test_a_job_runs_once_and_a_redelivered_message_does_nothing():
    job = queued_job()
    calls = []

    def work(job, progress):
        calls.append(job.pk)
        return {"ok": True}

    done = job_execute(job_id=job.pk, work=work)
    assert (done.status, done.result, done.attempts, done.message) == ("succeeded", {"ok": True}, 1, "done")
    assert done.execution_token is None
    again = job_execute(job_id=job.pk, work=work)
    assert calls == [job.pk]
    assert again.finished_at == done.finished_at and again.attempts == 1
    (attempt,) = JobAttempt.objects.filter(job=job)
    assert (attempt.number, attempt.outcome) == (1, "succeeded") and attempt.finished_at is not None


def test_a_job_that_another_execution_holds_is_left_alone():
    job = queued_job()
    assert job_claim(job_id=job.pk) is not None
    assert job_claim(job_id=job.pk) is None  # a second claim loses
    still = job_execute(job_id=job.pk, work=_boom)
    assert still.status == Job.Status.RUNNING and still.attempts == 1
    assert JobAttempt.objects.filter(job=job).count() == 1


def test_a_failing_job_keeps_nothing_its_work_wrote():
    job = queued_job()

    def work(job, progress):
        Dataset.objects.create(name="half-written")
        raise RuntimeError("disk on fire")

    done = job_execute(job_id=job.pk, work=work)
    assert (done.status, done.message) == ("failed", "RuntimeError: disk on fire")
    assert not Dataset.objects.filter(name="half-written").exists()
    (attempt,) = JobAttempt.objects.filter(job=job)
    assert (attempt.outcome, attempt.message) == ("failed", "RuntimeError: disk on fire")


def test_a_huge_error_message_is_stored_cut_short():
    job = queued_job()

    def work(job, progress):
        raise ValueError("x" * 5_000_000)

    done = job_execute(job_id=job.pk, work=work)
    # 2,000 characters at most: 1,960 of the text ("ValueError: " and 1,948 x), then what was left out
    # (5,000,012 - 1,960 = 4,998,052 characters).
    assert done.message == "ValueError: " + "x" * 1948 + "… [4998052 more characters]"
    assert len(done.message) <= 2000


def test_a_refused_file_stores_at_most_100_problems():
    job = queued_job()
    issues = [FileIssue("big.trec", line, "rank", "rank 0 is not positive") for line in range(1, 10_001)]

    def work(job, progress):
        raise ImportRejected(issues, truncated=True)

    done = job_execute(job_id=job.pk, work=work)
    assert done.status == "failed"
    assert [e["line"] for e in done.errors] == list(range(1, 101))
    assert done.errors[0] == {"file": "big.trec", "line": 1, "field": "rank", "message": "rank 0 is not positive",
                              "text": "big.trec, line 1, field 'rank': rank 0 is not positive"}


def test_a_refused_file_with_huge_problems_stores_no_more_than_64_kib():
    job = queued_job()
    issues = [FileIssue("big.csv", line, "text", "caption too long: " + "y" * 20_000) for line in range(1, 301)]

    def work(job, progress):
        raise ImportRejected(issues)

    done = job_execute(job_id=job.pk, work=work)
    stored = json.dumps(Job.objects.get(pk=job.pk).errors, ensure_ascii=False).encode()
    assert len(stored) <= 64 * 1024
    assert 0 < len(done.errors) < 100
    assert [e["line"] for e in done.errors] == list(range(1, len(done.errors) + 1))  # the first ones, in order
    assert all(len(e["message"]) <= 500 and len(e["text"]) <= 500 for e in done.errors)
    assert done.errors[0]["message"].startswith("caption too long: yyy") and done.errors[0]["message"].endswith("more characters]")
    assert len(done.message) <= 2000


def test_the_upload_goes_once_imported_or_refused_but_stays_for_a_retry_after_other_failures(
        django_capture_on_commit_callbacks):
    imported, refused, crashed = stored_upload(), stored_upload(), stored_upload()

    def refuse(job, progress):
        raise ImportRejected([FileIssue("run.trec", 1, "rank", "bad")])

    def crash(job, progress):
        raise MemoryError()

    with django_capture_on_commit_callbacks(execute=True):
        job_execute(job_id=queued_job(params={"path": str(imported)}).pk, work=lambda job, progress: {})
        job_execute(job_id=queued_job(params={"path": str(refused)}).pk, work=refuse)
        job_execute(job_id=queued_job(params={"path": str(crashed)}).pk, work=crash)
    assert not imported.parent.exists() and not refused.parent.exists()
    assert crashed.exists()
    assert files_under(settings.UPLOAD_ROOT) == [crashed.relative_to(settings.UPLOAD_ROOT).as_posix()]


def test_a_path_outside_the_upload_folder_is_never_deleted(tmp_path, django_capture_on_commit_callbacks):
    own = tmp_path / "mine.trec"
    own.write_text("q1 Q0 v1 1 0.9 t\n")
    with django_capture_on_commit_callbacks(execute=True):
        job_execute(job_id=queued_job(params={"path": str(own)}).pk, work=lambda job, progress: {})
    assert own.exists()


def test_an_export_whose_job_fails_after_writing_it_leaves_no_file(tmp_path):
    from tests.annotation.services.reports.test_report_metrics import example_pool

    pool = example_pool(tmp_path)
    job = queued_job(kind="export_csv")

    def work(job, progress):
        export_create(pool=pool, fmt="csv", job=job, progress=progress)
        raise RuntimeError("failed after the export was written")

    assert job_execute(job_id=job.pk, work=work).status == "failed"
    assert not Artefact.objects.filter(job=job).exists()
    assert files_under(settings.EXPORT_ROOT) == []


def test_a_job_export_is_written_in_the_jobs_folder(tmp_path):
    from tests.annotation.services.reports.test_report_metrics import example_pool

    pool = example_pool(tmp_path)
    job = queued_job(kind="export_csv")
    done = job_execute(job_id=job.pk, work=lambda job, progress: {
        "id": export_create(pool=pool, fmt="csv", job=job, progress=progress).pk})
    artefact = Artefact.objects.get(pk=done.result["id"])
    assert Path(artefact.path).parent == job_output_relative(job_id=job.pk, name="x").parent
    assert files_under(settings.EXPORT_ROOT) == [artefact.path]


def test_proxy_matrices_of_a_job_that_fails_leave_no_file():
    from annotation.services.proxies.matrices import proxy_matrices_compute
    from tests.factories import make_dataset

    dataset = make_dataset(clips=3, captions=3)
    job = queued_job(kind="proxy_matrices")

    def work(job, progress):
        stored = proxy_matrices_compute(dataset=dataset, proxies=["bow"], job=job, progress=progress)
        assert files_under(settings.EXPORT_ROOT) == [stored[0].path]
        raise RuntimeError("the next proxy failed")

    assert job_execute(job_id=job.pk, work=work).status == "failed"
    assert not Artefact.objects.filter(job=job).exists()
    assert files_under(settings.EXPORT_ROOT) == []


# --- with a second connection: PostgreSQL -----------------------------------------------------------

def _in_a_thread(fn):
    """Runs fn on another thread (its own database connection) and returns its result."""
    out = []

    def run():
        try:
            out.append(fn())
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=120)
    return out[0]


@pytest.mark.django_db(transaction=True)
def test_work_that_finishes_after_its_job_was_taken_back_is_rolled_back(require_postgres, settings):
    """The reaper takes the job back while its work still runs (the worker looked dead); the
    work's writes must not commit, and the reaper's verdict stands."""
    settings.REJUDGE_JOBS = settings.REJUDGE_JOBS | {"STALE_AFTER_SECONDS": 0, "MAX_ATTEMPTS": 1}
    job = queued_job()

    def work(job, progress):
        Dataset.objects.create(name="written by a superseded execution")
        assert _in_a_thread(jobs_recover)["failed"] == 1
        return {"ok": True}

    after = job_execute(job_id=job.pk, work=work)
    assert after.status == "failed" and "went silent" in after.message and after.result is None
    assert not Dataset.objects.filter(name="written by a superseded execution").exists()
    assert list(JobAttempt.objects.filter(job=job).values_list("outcome", flat=True)) == ["lost"]


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_renews_and_notices_when_its_attempt_is_taken_back(require_postgres):
    job = queued_job()
    _, attempt = job_claim(job_id=job.pk)
    first = JobAttempt.objects.get(pk=attempt.pk).heartbeat_at
    heartbeat = JobHeartbeat(token=attempt.token, interval=0.05).start()
    try:
        deadline = time.monotonic() + 60
        while JobAttempt.objects.get(pk=attempt.pk).heartbeat_at <= first and time.monotonic() < deadline:
            time.sleep(0.05)
        assert JobAttempt.objects.get(pk=attempt.pk).heartbeat_at > first
        assert not heartbeat.lost.is_set()
        JobAttempt.objects.filter(pk=attempt.pk).update(outcome=JobAttempt.Outcome.LOST)
        assert heartbeat.lost.wait(timeout=60)
    finally:
        heartbeat.stop()
    progress = job_progress_reporter(job_id=job.pk, abort=heartbeat.lost)
    with pytest.raises(JobSuperseded):
        progress(5, 10)
