"""The proxies area's operations keep what jobs stored before the registry: a started job has its
old kind and parameters, and a job queued by an older version under its old task name (no
operation) still runs, with the result it had."""
from __future__ import annotations

import pytest

from annotation.models import Job, Report
from annotation.services.jobs import job_create, job_enqueue, task_names
from annotation.services.proxies.matrices import proxy_matrices_compute
from annotation.services.proxies.operations import proxy_matrices_start
from tests.annotation.services.proxies.test_proxy_matrices import TINY_RUN, make_run, tiny  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


def _queued_as_before(capture, kind: str, task: str, params: dict) -> Job:
    with capture(execute=True):
        job = job_create(kind=kind, params=params)
        job_enqueue(job=job, task=task)
    job.refresh_from_db()
    assert (job.operation, job.task_name) == ("", task)
    assert job.status == Job.Status.SUCCEEDED, job.message
    return job


def test_a_started_matrices_job_stores_what_it_stored_before(tiny):  # noqa: F811
    job = proxy_matrices_start(dataset=tiny, proxies=["bow"], mode="paper", synsets=None, min_fraction=0.25,
                               created_by=None)
    assert (job.kind, job.operation, job.task_name) == ("proxy_matrices", "proxy_matrices", task_names.RUN_OPERATION)
    assert job.params == {"dataset_id": tiny.pk, "proxies": ["bow"], "mode": "paper", "synsets": None,
                          "min_fraction": 0.25}


def test_jobs_queued_under_the_old_task_names_still_run(tiny, django_capture_on_commit_callbacks):  # noqa: F811
    capture = django_capture_on_commit_callbacks
    matrices = _queued_as_before(capture, "proxy_matrices", task_names.COMPUTE_PROXY_MATRICES, {
        "dataset_id": tiny.pk, "proxies": ["bow"], "mode": "modern", "synsets": None, "min_fraction": 0.25})
    (made,) = matrices.result["artefacts"]
    assert made["proxy"] == "bow" and set(made) == {"id", "proxy", "name", "size"}

    run = make_run(tiny, TINY_RUN)
    ndcg = _queued_as_before(capture, "proxy_ndcg", task_names.PROXY_NDCG_REPORT, {
        "run_id": run.pk, "artefact_id": made["id"], "gain": "linear", "empty": "skip"})
    assert set(ndcg.result) == {"report_id", "mean"}
    assert Report.objects.get(pk=ndcg.result["report_id"]).result["mean"] == ndcg.result["mean"]

    (paper,) = proxy_matrices_compute(dataset=tiny, proxies=["bow"], mode="paper")
    analysis = _queued_as_before(capture, "proxy_analysis", task_names.PROXY_ANALYSIS_REPORT, {
        "dataset_id": tiny.pk, "artefact_ids": [paper.pk, made["id"]], "thresholds": None})
    report = Report.objects.get(pk=analysis.result["report_id"])
    assert report.kind == "proxy_analysis" and list(report.params["matrices"]) == ["bow/paper", "bow/modern"]
