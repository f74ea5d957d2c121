"""The judgment-set jobs as operations of the registry (services/judgment_sets/operations.py): each
started job keeps the kind and stored parameters it always had, a blank form field means the
default, an import whose named format cannot take its options is a 400 naming the field before
anything is stored, and a job queued under an old task name still runs."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Job, Run
from annotation.models.judgment_sets import JudgmentSet
from annotation.services.jobs import task_names
from annotation.services.operations.registry import LEGACY_TASKS
from annotation.services.operations.run import operation_job_run
from tests.annotation.services.reports.test_report_metrics import example_pool

pytestmark = pytest.mark.django_db


def test_each_old_task_name_runs_its_operation():
    assert {LEGACY_TASKS[name] for name in (task_names.EVALUATE_JUDGMENT_SET, task_names.JUDGMENT_SET_AGREEMENT,
                                            task_names.JUDGMENT_SET_FROM_POOL, task_names.IMPORT_JUDGMENTS)} == {
        "evaluate_judgment_set", "judgment_set_agreement", "judgment_set_from_pool", "import_judgments"}


def test_a_started_job_keeps_its_kind_and_stored_params_and_a_blank_field_is_the_default(as_role, tmp_path):
    pool = example_pool(tmp_path)
    judgment_set = JudgmentSet.objects.create(dataset=pool.dataset, name="bench", source_format="qrels",
                                              checksum="q" * 64)
    run = Run.objects.filter(dataset=pool.dataset).first()
    admin = as_role("admin")
    response = admin.post(f"/api/v1/judgment-sets/{judgment_set.pk}/evaluate/",
                          {"runs": [run.pk], "conventions": "", "measures": []}, format="json")
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.data["id"])
    assert (job.kind, job.operation) == ("evaluate", "evaluate_judgment_set")
    assert job.params == {"judgment_set_id": judgment_set.pk, "run_ids": [run.pk], "conventions": None,
                          "measures": None}
    response = admin.post(f"/api/v1/pools/{pool.pk}/judgment-sets/", {"name": ""}, format="json")
    assert response.status_code == 202, response.content
    assert Job.objects.get(pk=response.data["id"]).params == {"pool_id": pool.pk, "name": None, "originals": True}


@pytest.mark.parametrize(("fields", "field", "says"), [
    ({"format": "rater_labels", "seeds_pools": "true"}, "seeds_pools", "cannot seed pools"),
    ({"format": "qrels", "only_dataset": "MSVD"}, "only_dataset", "only FIRE JSON files have dataset tags"),
    ({"format": "qrels", "repeats": "first"}, "repeats", "only rater_labels files take repeats"),
    ({"format": "rater_labels", "columns": "nonsense"}, "columns", ""),
    ({"format": "no-such-format"}, "format", "no-such-format"),
])
def test_an_import_whose_named_format_cannot_take_its_options_is_refused_naming_the_field(as_role, tmp_path,
                                                                                          fields, field, says):
    pool = example_pool(tmp_path)
    response = as_role("admin").post(f"/api/v1/datasets/{pool.dataset_id}/judgments/import/",
                                     {"file": SimpleUploadedFile("x.txt", b"q1 0 v1 1\n"), **fields},
                                     format="multipart")
    assert response.status_code == 400, response.content
    assert field in response.data and says in str(response.data[field])
    assert not Job.objects.exists()


def test_an_import_posted_twice_with_one_key_is_one_job(as_role, tmp_path):
    pool = example_pool(tmp_path)
    admin = as_role("admin")

    def post():
        return admin.post(f"/api/v1/datasets/{pool.dataset_id}/judgments/import/",
                          {"file": SimpleUploadedFile("x.qrels", b"q1 0 v1 1\n"), "format": "qrels", "name": ""},
                          format="multipart", HTTP_IDEMPOTENCY_KEY="once")

    first, second = post(), post()
    assert (first.status_code, second.status_code) == (202, 200)
    assert first.data["id"] == second.data["id"]
    job = Job.objects.get()
    assert (job.kind, job.operation) == ("import_judgments", "import_judgments")
    assert {k: v for k, v in job.params.items() if k != "upload"} == {
        "dataset_id": pool.dataset_id, "format": "qrels", "name": "", "only_dataset": "", "options": {},
        "seeds_pools": None, "source_name": "x.qrels"}


def test_a_job_queued_under_the_old_task_name_still_runs(tmp_path, django_user_model):
    pool = example_pool(tmp_path)
    job = Job.objects.create(kind="judgment_set_from_pool", params={"pool_id": pool.pk, "name": None,
                                                                    "originals": True},
                             task_name=task_names.JUDGMENT_SET_FROM_POOL)
    operation_job_run(job_id=job.pk, task_name=task_names.JUDGMENT_SET_FROM_POOL)
    job.refresh_from_db()
    assert job.status == "succeeded", (job.message, job.errors)
    assert JudgmentSet.objects.get(pk=job.result["judgment_set_id"]).source_format == "pool"
