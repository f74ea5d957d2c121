"""Machine judgments uploaded over REST are imported by a real Celery worker process, and a
judgment set's machine judge is measured there too (PostgreSQL + Redis required)."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotation.models import Job, MachineJudge, MachineJudgment, Report
from tests.annotation.services.machine_judges.world import MACHINE, SET_MACHINE, small_pool, small_set
from tests.conftest import wait_for_job
from tests.factories import make_user

pytestmark = [pytest.mark.worker, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _jsonl(labels, extra: str = "") -> SimpleUploadedFile:
    lines = [f'{{"query": "{q}", "item": "{i}", "label": "{v}", "score": 0.5, "model": "vlm-7b"}}'
             for (q, i), v in labels.items()]
    # A name without a known ending: the format is told, as a client may do.
    return SimpleUploadedFile("verdicts.txt", ("\n".join(lines) + "\n" + extra).encode(), content_type="text/plain")


def test_upload_is_imported_by_the_worker_and_a_bad_one_fails_with_lines_and_fields(celery_worker_process):
    pool, _ = small_pool()
    admin = APIClient()
    admin.force_authenticate(make_user("admin"))
    url = f"/api/v1/pools/{pool.pk}/machine-judges/"
    started = admin.post(url, {"file": _jsonl(MACHINE), "name": "vlm", "file_format": "jsonl"}, format="multipart",
                         HTTP_IDEMPOTENCY_KEY="worker-mj-1")
    assert started.status_code == 202 and started.json()["status"] == "queued"  # not eager: the worker imports
    done = wait_for_job(started.json()["id"], log_path=celery_worker_process["log"])
    assert done.status == Job.Status.SUCCEEDED, (done.message, done.errors)
    judge = MachineJudge.objects.get(pk=done.result["judge_id"])
    assert judge.model_name == "vlm-7b" and judge.judgments.count() == len(MACHINE)
    body = admin.get(started["Location"]).json()
    assert body["status"] == "succeeded" and body["progress"]["fraction"] == 1.0
    again = admin.post(url, {"file": _jsonl(MACHINE), "name": "vlm", "file_format": "jsonl"}, format="multipart",
                       HTTP_IDEMPOTENCY_KEY="worker-mj-1")
    assert again.status_code == 200 and again.json()["id"] == started.json()["id"]

    bad = admin.post(url, {"file": _jsonl(MACHINE, extra='{"query": "q1", "item": "v9", "label": "relevant"}\n'
                                                        '{"query": "q2", "item": "v6", "label": "maybe"}\n'),
                           "name": "bad", "file_format": "jsonl"}, format="multipart")
    assert bad.status_code == 202
    failed = wait_for_job(bad.json()["id"], log_path=celery_worker_process["log"])
    assert failed.status == Job.Status.FAILED
    shown = admin.get(bad["Location"]).json()
    assert {(e["file"], e["line"], e["field"]) for e in shown["errors"]} == {("verdicts.txt", 6, "item"),
                                                                             ("verdicts.txt", 7, "label")}
    assert "verdicts.txt, line 6, field 'item'" in shown["errors"][0]["text"]
    assert not MachineJudge.objects.filter(name="bad").exists()
    assert MachineJudgment.objects.count() == len(MACHINE)


def test_a_judgment_set_judge_is_measured_on_the_worker(celery_worker_process):
    pool, _ = small_pool()
    judgment_set = small_set(pool.dataset)
    admin = APIClient()
    admin.force_authenticate(make_user("admin"))
    started = admin.post(f"/api/v1/judgment-sets/{judgment_set.pk}/machine-judges/",
                         {"file": _jsonl(SET_MACHINE), "name": "vlm", "file_format": "jsonl"}, format="multipart")
    done = wait_for_job(started.json()["id"], log_path=celery_worker_process["log"])
    assert done.status == Job.Status.SUCCEEDED, (done.message, done.errors)
    started = admin.post(f"/api/v1/judgment-sets/{judgment_set.pk}/machine-judge-report/", {"n_boot": 50, "depth": 3},
                         format="json")
    assert started.status_code == 202 and started.json()["status"] == "queued"
    done = wait_for_job(started.json()["id"], log_path=celery_worker_process["log"])
    assert done.status == Job.Status.SUCCEEDED, done.message
    report = Report.objects.get(pk=done.result["report_id"])
    assert report.result["kappa"]["kappa"] == pytest.approx(1 / 6)  # worked in test_machine_judge_set_report.py
