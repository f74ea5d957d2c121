"""Jobs survive a lost worker (issue 12, finding 3), on real worker and beat processes.

The finding: a run import, a pool build or an export whose worker was killed with SIGKILL stayed
`running` for good, its message unacknowledged in Redis, a partial file on disk. Here each job is
stopped mid-way (its first write to a table waits behind a lock the test holds, so the kill lands
inside the job's transaction every time), the worker is SIGKILLed and started again, and the job
must end done-after-retry or failed, with no partial rows or files. Waits are bounded by generous
timeouts; nothing asserts how fast.
"""
from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.db.models import F
from rest_framework.test import APIClient

from annotation.models import Artefact, Job, JobAttempt, Pool, PooledPair, Prediction, Run
from annotation.services.jobs import job_send
from annotation.storage import stored_file_exists
from tests.factories import make_dataset, make_user
from tests.worker_processes import backends_waiting_for_a_lock, job_workers_for, table_locked

pytestmark = [pytest.mark.worker, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

JOB_TIMEOUT = 240  # seconds: stale-after + a worker start + the job, on a loaded machine, many times over
CAPTIONS, CLIPS = 4, 6


@pytest.fixture
def admin():
    client = APIClient()
    client.force_authenticate(make_user("admin"))
    return client


def _trec(tag: str, offset: int, depth: int = 3) -> bytes:
    lines = [f"q{q} Q0 v{(q + offset + r) % CLIPS + 1} {r + 1} {1 - r / 10:.2f} {tag}"
             for q in range(1, CAPTIONS + 1) for r in range(depth)]
    return ("\n".join(lines) + "\n").encode()


def _upload(name: str, content: bytes) -> io.BytesIO:
    f = io.BytesIO(content)
    f.name = name
    return f


def _runs_of(dataset, admin) -> list[int]:
    ids = []
    for tag, offset in (("A", 0), ("B", 1)):
        response = admin.post(f"/api/v1/datasets/{dataset.pk}/runs/import/", {"file": _upload(f"{tag}.trec", _trec(tag, offset))},
                              format="multipart")
        ids.append(response.json()["id"])
    return ids


def _finished(job_id: int):
    job = Job.objects.get(pk=job_id)
    return job if job.is_finished else None


def _kill_mid_job(workers, table: str, start) -> int:
    """Starts a job with `start()` while `table` is locked, waits until the worker is stuck inside
    it, SIGKILLs the worker, and starts a fresh one. Returns the job id."""
    workers.start_worker("worker1")
    with table_locked(table):
        job_id = start()
        workers.wait_until(backends_waiting_for_a_lock, timeout=JOB_TIMEOUT, what=f"the job to reach a write to {table}")
        job = Job.objects.get(pk=job_id)
        assert job.status == Job.Status.RUNNING and job.attempts == 1
        # While its work waits, the worker's heartbeat thread keeps the attempt alive.
        workers.wait_until(lambda: JobAttempt.objects.filter(job_id=job_id, heartbeat_at__gt=F("started_at")).exists(),
                           timeout=JOB_TIMEOUT, what="a heartbeat")
        workers.kill("worker1")
    workers.start_worker("worker2")
    return job_id


def _files_under(root) -> list[str]:
    root = Path(root)
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_run_import_whose_worker_is_killed_is_retried_and_done(settings, tmp_path, admin):
    with job_workers_for(settings, tmp_path / "workers", max_attempts=2) as workers:
        workers.start_beat()
        dataset = make_dataset(clips=CLIPS, captions=CAPTIONS)

        def start():
            response = admin.post(f"/api/v1/datasets/{dataset.pk}/runs/import/",
                                  {"file": _upload("A.trec", _trec("A", 0))}, format="multipart")
            assert response.status_code == 202
            return response.json()["id"]

        job_id = _kill_mid_job(workers, "annotation_run", start)
        # The web process stores the upload by name in the uploads area; the worker fetches it.
        upload = Job.objects.get(pk=job_id).params["upload"]
        assert stored_file_exists("uploads", upload)
        job = workers.wait_until(lambda: _finished(job_id), timeout=JOB_TIMEOUT, what=f"job {job_id} to end")

    assert job.status == Job.Status.SUCCEEDED, job.message
    assert job.attempts == 2
    first, second = JobAttempt.objects.filter(job=job).order_by("number")
    assert first.outcome == JobAttempt.Outcome.LOST and "went silent" in first.message
    assert second.outcome == JobAttempt.Outcome.SUCCEEDED
    # All or nothing: one run, each prediction once (the killed attempt's rows were rolled back).
    run = Run.objects.get(dataset=dataset)
    assert run.pk == job.result["run_id"] and run.prediction_count == CAPTIONS * 3
    assert Prediction.objects.filter(run__dataset=dataset).count() == CAPTIONS * 3
    assert not stored_file_exists("uploads", upload)  # removed once the import succeeded
    body = admin.get(f"/api/v1/jobs/{job_id}/").json()
    assert [a["outcome"] for a in body["attempt_history"]] == ["lost", "succeeded"]


def test_pool_build_whose_worker_is_killed_fails_cleanly_then_an_admin_retries_it(settings, tmp_path, admin):
    with job_workers_for(settings, tmp_path / "workers", max_attempts=1) as workers:
        workers.start_beat()
        workers.start_worker("loader")
        dataset = make_dataset(clips=CLIPS, captions=CAPTIONS)
        run_ids = _runs_of(dataset, admin)
        for run_job in run_ids:
            assert workers.wait_until(lambda: _finished(run_job), timeout=JOB_TIMEOUT, what="the runs' import").status == "succeeded"
        workers.stop("loader")
        run_pks = [Job.objects.get(pk=j).result["run_id"] for j in run_ids]

        def start():
            response = admin.post("/api/v1/pools/build/", {"dataset": dataset.pk, "name": "killed", "runs": run_pks,
                                                           "depth": 3, "redundancy": 0}, format="json")
            assert response.status_code == 202, response.json()
            return response.json()["id"]

        job_id = _kill_mid_job(workers, "annotation_pooledpair", start)
        failed = workers.wait_until(lambda: _finished(job_id), timeout=JOB_TIMEOUT, what=f"job {job_id} to end")
        assert failed.status == Job.Status.FAILED
        assert "went silent" in failed.message and "retry" in failed.message
        assert not Pool.objects.filter(name="killed").exists()  # the pool row was rolled back with its pairs
        assert PooledPair.objects.count() == 0

        response = admin.post(f"/api/v1/jobs/{job_id}/retry/")
        assert response.status_code == 202, response.json()
        job = workers.wait_until(lambda: _finished(job_id), timeout=JOB_TIMEOUT, what=f"job {job_id} to end after the retry")

    assert job.status == Job.Status.SUCCEEDED, job.message
    assert [a.outcome for a in JobAttempt.objects.filter(job=job).order_by("number")] == ["lost", "succeeded"]
    pool = Pool.objects.get(name="killed")
    # Run A ranks v(q+1..q+3), run B v(q+2..q+4) for each caption: 4 distinct clips per caption.
    assert PooledPair.objects.filter(pool=pool, role="pool").count() == CAPTIONS * 4


def test_export_whose_worker_is_killed_leaves_no_file_and_is_redone(settings, tmp_path, admin):
    with job_workers_for(settings, tmp_path / "workers", max_attempts=2) as workers:
        workers.start_beat()
        workers.start_worker("loader")
        dataset = make_dataset(clips=CLIPS, captions=CAPTIONS)
        run_ids = _runs_of(dataset, admin)
        for run_job in run_ids:
            workers.wait_until(lambda: _finished(run_job), timeout=JOB_TIMEOUT, what="the runs' import")
        run_pks = [Job.objects.get(pk=j).result["run_id"] for j in run_ids]
        build = admin.post("/api/v1/pools/build/", {"dataset": dataset.pk, "name": "to export", "runs": run_pks, "depth": 3,
                                                    "redundancy": 0}, format="json").json()
        built = workers.wait_until(lambda: _finished(build["id"]), timeout=JOB_TIMEOUT, what="the pool build")
        workers.stop("loader")

        def start():
            response = admin.post(f"/api/v1/pools/{built.result['pool_id']}/exports/", {"format": "csv"}, format="json")
            assert response.status_code == 202, response.json()
            return response.json()["id"]

        # The file is written and renamed, then the worker dies before its Artefact row commits.
        job_id = _kill_mid_job(workers, "annotation_artefact", start)
        job = workers.wait_until(lambda: _finished(job_id), timeout=JOB_TIMEOUT, what=f"job {job_id} to end")

    assert job.status == Job.Status.SUCCEEDED, job.message
    assert job.attempts == 2
    artefact = Artefact.objects.get(job=job)
    # Only the finished export is on disk: no .part, nothing from the killed attempt.
    assert _files_under(settings.EXPORT_ROOT) == [artefact.path]
    lines = (Path(settings.EXPORT_ROOT) / artefact.path).read_text().splitlines()
    assert len(lines) == 1 + CAPTIONS * 4  # a header, then one row per unlabelled pair


def test_a_job_delivered_twice_runs_once(settings, tmp_path, admin):
    with job_workers_for(settings, tmp_path / "workers") as workers:
        workers.start_worker("worker1")
        workers.start_worker("worker2")
        dataset = make_dataset(clips=CLIPS, captions=CAPTIONS)
        with table_locked("annotation_run"):
            response = admin.post(f"/api/v1/datasets/{dataset.pk}/runs/import/", {"file": _upload("A.trec", _trec("A", 0))},
                                  format="multipart")
            job_id = response.json()["id"]
            workers.wait_until(backends_waiting_for_a_lock, timeout=JOB_TIMEOUT, what="the job to start")
            # A second message for the running job (a redelivery, or the reaper re-sending): the
            # idle worker takes it and must leave the job alone.
            job_send(job_id=job_id)
            skipped = f"job {job_id} is not queued"
            workers.wait_until(lambda: skipped in workers.log("worker1") + workers.log("worker2"), timeout=JOB_TIMEOUT,
                               what="the duplicate delivery")
        job = workers.wait_until(lambda: _finished(job_id), timeout=JOB_TIMEOUT, what=f"job {job_id} to end")
        finished_at = job.finished_at

        # A message redelivered after the job finished does nothing either.
        job_send(job_id=job_id)
        workers.wait_until(lambda: (workers.log("worker1") + workers.log("worker2")).count(skipped) == 2,
                           timeout=JOB_TIMEOUT, what="the late redelivery")

    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.attempts == 1 and job.finished_at == finished_at
    assert JobAttempt.objects.filter(job=job).count() == 1
    assert Run.objects.filter(dataset=dataset).count() == 1
    assert Prediction.objects.filter(run__dataset=dataset).count() == CAPTIONS * 3


def test_the_reaper_on_its_own_queue_works_while_every_job_worker_is_busy(settings, tmp_path, admin):
    """A worker killed while the other one is stuck in a long job: beat's upkeep queue has a worker
    of its own (REJUDGE_MAINTENANCE_QUEUE), so the lost job is dealt with without waiting."""
    with job_workers_for(settings, tmp_path / "workers", max_attempts=1, upkeep_queue=True) as workers:
        workers.start_beat()
        workers.start_worker("upkeep", queue=workers.upkeep_queue)
        dataset = make_dataset(clips=CLIPS, captions=CAPTIONS)

        def start(tag: str, offset: int) -> int:
            response = admin.post(f"/api/v1/datasets/{dataset.pk}/runs/import/",
                                  {"file": _upload(f"{tag}.trec", _trec(tag, offset))}, format="multipart")
            return response.json()["id"]

        with table_locked("annotation_run"):
            workers.start_worker("busy")
            long_job = start("A", 0)
            workers.wait_until(lambda: backends_waiting_for_a_lock() >= 1, timeout=JOB_TIMEOUT, what="the long job")
            workers.start_worker("doomed")
            lost_job = start("B", 1)
            workers.wait_until(lambda: backends_waiting_for_a_lock() >= 2, timeout=JOB_TIMEOUT, what="the second job")
            workers.kill("doomed")
            lost = workers.wait_until(lambda: _finished(lost_job), timeout=JOB_TIMEOUT, what="the reaper")
            assert Job.objects.get(pk=long_job).status == Job.Status.RUNNING  # still held: its worker is busy
        done = workers.wait_until(lambda: _finished(long_job), timeout=JOB_TIMEOUT, what="the long job to end")

    assert lost.status == Job.Status.FAILED and "went silent" in lost.message
    assert done.status == Job.Status.SUCCEEDED
    assert list(Run.objects.filter(dataset=dataset).values_list("name", flat=True)) == ["A"]
