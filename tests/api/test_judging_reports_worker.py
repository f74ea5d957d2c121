"""A judging simulation run by a real Celery worker process (PostgreSQL + Redis required)."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation.models import Artefact, Job, JobAttempt, Report
from tests.annotation.services.judging.simulation_world import tiny_world
from tests.conftest import wait_for_job
from tests.factories import make_user

pytestmark = [pytest.mark.worker, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_a_simulation_job_runs_on_the_worker_and_stores_its_report_and_files(celery_worker_process):
    _, pool, _ = tiny_world()
    admin = APIClient()
    admin.force_authenticate(make_user("admin"))
    started = admin.post(f"/api/v1/pools/{pool.pk}/judging-simulation/",
                         {"strategies": ["shallow_first", "bandit", "sampled"], "replays": 5,
                          "checkpoints": [0.25, 0.5, 0.75, 1.0]}, format="json")
    assert started.status_code == 202 and started.json()["status"] == "queued"  # not eager
    done = wait_for_job(started.json()["id"], log_path=celery_worker_process["log"])
    assert done.status == Job.Status.SUCCEEDED, done.message
    assert JobAttempt.objects.get(job=done).worker != ""  # claimed by the worker process
    # The engine reported per strategy; the job's final progress is the whole of it.
    assert done.progress_total == 1000 and done.progress_done == 1000
    report = Report.objects.get(pk=done.result["report_id"])
    assert report.job_id == done.pk and [s["strategy"] for s in report.result["per_strategy"]] == [
        "shallow_first", "bandit", "sampled"]
    # shallow_first's curve, by hand (tests/annotation/services/judging/test_simulation_by_hand.py)
    assert report.result["per_strategy"][0]["relevant_found"] == [0.5, 0.5, 0.5, 1.0]
    files = {a.name: a for a in Artefact.objects.filter(report=report)}
    assert set(files) == {"curves.csv", "relevant_found.svg", "metric_error.svg", "kendall_tau.svg", "ci_coverage.svg"}
    assert all(a.size > 0 and len(a.sha256) == 64 and a.path.startswith(f"jobs/{done.pk}/") for a in files.values())
