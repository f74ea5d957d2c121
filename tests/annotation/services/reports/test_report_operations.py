"""Pool reports and exports as operations (services/reports/operations.py,
services/exports/operations.py): a start names the kind's or format's operation and keeps the job
kind, stored params and result of before; a job queued under the old task name (compute_report,
export_labels), which stores its kind or format in its params, still runs through the alias."""
from __future__ import annotations

import pytest

from annotation.models import Artefact, Job, Report
from annotation.services.exports.operations import EXPORT_LABELS, FORMAT_OPERATIONS, export_start
from annotation.services.jobs import job_create, job_enqueue, task_names
from annotation.services.operations.registry import LEGACY_TASKS
from annotation.services.reports.kind import ReportError
from annotation.services.reports.operations import COMPUTE_REPORT, KIND_OPERATIONS, report_start
from annotation.services.reports.registry import POOL_REPORT_KINDS, REPORT_KINDS
from tests.factories import make_pool_with_runs, make_user

pytestmark = pytest.mark.django_db


def test_each_pool_report_kind_is_an_operation_declared_from_the_kind():
    assert list(KIND_OPERATIONS) == list(POOL_REPORT_KINDS)
    for kind, operation in KIND_OPERATIONS.items():
        assert operation.name == f"report_{kind}" and operation.params is REPORT_KINDS[kind].params
    assert LEGACY_TASKS[task_names.COMPUTE_REPORT] == COMPUTE_REPORT.name
    assert LEGACY_TASKS[task_names.EXPORT_LABELS] == EXPORT_LABELS.name
    assert all(op.snapshot for op in (*FORMAT_OPERATIONS.values(), EXPORT_LABELS))


def test_a_report_start_runs_the_kinds_operation_with_the_stored_shape_of_before(django_capture_on_commit_callbacks):
    pool, _ = make_pool_with_runs()
    with django_capture_on_commit_callbacks(execute=True):
        job = report_start(pool=pool, kind="metrics", params={"ks": [5, 1]}, created_by=make_user("admin"))
    job.refresh_from_db()
    assert (job.operation, job.kind, job.task_name) == ("report_metrics", "report_metrics", task_names.RUN_OPERATION)
    assert set(job.params) == {"pool_id", "kind", "params"} and job.params["params"]["ks"] == [1, 5]
    assert job.status == Job.Status.SUCCEEDED, job.message
    assert set(job.result) == {"report_id", "kind", "url"}
    assert Report.objects.get(pk=job.result["report_id"]).kind == "metrics"


def test_a_report_of_an_unknown_kind_or_with_a_bad_parameter_makes_no_job():
    pool, _ = make_pool_with_runs()
    with pytest.raises(ReportError, match="unknown report kind 'infap'") as refused:
        report_start(pool=pool, kind="infap", params={}, created_by=None)
    assert refused.value.param == "kind"
    with pytest.raises(ReportError, match="n_boot") as refused:
        report_start(pool=pool, kind="agreement", params={"n_boot": -1}, created_by=None)
    assert refused.value.param == "n_boot"
    assert not Job.objects.exists()


def test_a_report_job_queued_under_compute_report_still_runs(django_capture_on_commit_callbacks):
    pool, _ = make_pool_with_runs()
    with django_capture_on_commit_callbacks(execute=True):
        # As a version before the registry stored it: no operation, the kind in the params.
        job = job_create(kind="report_metrics", params={"pool_id": pool.pk, "kind": "metrics", "params": {"depth": 2}})
        job_enqueue(job=job, task=task_names.COMPUTE_REPORT)
    job.refresh_from_db()
    assert (job.operation, job.task_name) == ("", task_names.COMPUTE_REPORT)
    assert job.status == Job.Status.SUCCEEDED, job.message
    assert Report.objects.get(pk=job.result["report_id"]).params["depth"] == 2


def test_an_export_start_keeps_its_kind_params_and_result(django_capture_on_commit_callbacks):
    pool, _ = make_pool_with_runs()
    with django_capture_on_commit_callbacks(execute=True):
        job = export_start(pool=pool, fmt="fire_json", params={"dataset_tag": ""}, created_by=make_user("admin"))
    job.refresh_from_db()
    assert (job.operation, job.kind) == ("export_fire_json", "export_fire_json")
    assert job.params == {"pool_id": pool.pk, "format": "fire_json",
                          "params": {"dataset_tag": pool.dataset.name, "license": "", "creator": "Rejudge",
                                     "aggregation": "majority"}}
    assert job.status == Job.Status.SUCCEEDED, job.message
    assert set(job.result) == {"export_id", "name", "size", "sha256", "download_url"}


def test_an_export_job_queued_under_export_labels_still_runs(django_capture_on_commit_callbacks):
    pool, _ = make_pool_with_runs()
    with django_capture_on_commit_callbacks(execute=True):
        job = job_create(kind="export_qrels", params={"pool_id": pool.pk, "format": "qrels",
                                                      "params": {"originals": False, "aggregation": "majority"}})
        job_enqueue(job=job, task=task_names.EXPORT_LABELS)
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.message
    assert Artefact.objects.get(pk=job.result["export_id"]).params["originals"] is False
