"""The one runner: a job started through the registry runs under the one task by the operation it
names; a job queued before the registry, carrying only its old task name, still runs (the reaper
and an admin's retry send it again under that name); a job naming no known operation fails with
the reason instead of raising in the worker."""
from __future__ import annotations

import pytest

from annotation.models import Job, Pool
from annotation.services.jobs import job_create, job_enqueue, task_names
from annotation.services.pools.operations import pool_build_start
from tests.factories import make_pool_with_runs, make_user

pytestmark = pytest.mark.django_db


def test_a_started_operation_names_itself_and_runs_under_the_one_task(django_capture_on_commit_callbacks):
    pool, runs = make_pool_with_runs()
    with django_capture_on_commit_callbacks(execute=True):
        job = pool_build_start(dataset=pool.dataset, name="second", run_ids=[runs[1].pk, runs[0].pk], options={},
                               created_by=make_user("admin"))
    job.refresh_from_db()
    assert (job.operation, job.task_name, job.kind) == ("build_pool", task_names.RUN_OPERATION, "build_pool")
    assert job.status == Job.Status.SUCCEEDED, job.message
    assert job.params["run_ids"] == [runs[1].pk, runs[0].pk] and job.params["depth"] == 10
    assert Pool.objects.get(pk=job.result["pool_id"]).name == "second"


def test_a_job_queued_under_its_old_task_name_still_runs(django_capture_on_commit_callbacks):
    pool, runs = make_pool_with_runs()
    with django_capture_on_commit_callbacks(execute=True):
        # As a version before the registry stored it: no operation, the old task's name.
        job = job_create(kind="build_pool", params={"dataset_id": pool.dataset_id, "name": "old", "depth": 2,
                                                    "run_ids": [runs[0].pk]})
        job_enqueue(job=job, task=task_names.BUILD_POOL)
    job.refresh_from_db()
    assert (job.operation, job.task_name) == ("", task_names.BUILD_POOL)
    assert job.status == Job.Status.SUCCEEDED, job.message
    assert Pool.objects.get(pk=job.result["pool_id"]).depth == 2


def test_a_job_naming_an_unknown_operation_fails_with_the_reason(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        job = job_create(kind="gone", params={}, operation="no_longer_registered")
        job_enqueue(job=job, task=task_names.RUN_OPERATION)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert "operation 'no_longer_registered' is not registered" in job.message
