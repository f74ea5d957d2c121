"""Jobs reach Celery from one place, by registered task name; services never import the tasks."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
from celery import current_app
from django.conf import settings

from annotation.models import Job
from annotation.services.jobs import task_names
from annotation.services.jobs.dispatch import job_enqueue, job_send
from tests.annotation.services.jobs.helpers import queued_job

SERVICES = Path(__file__).resolve().parents[4] / "annotation" / "services"


def test_every_task_name_is_a_registered_task_and_the_reaper_is_scheduled():
    current_app.loader.import_default_modules()
    periodic = {task_names.RELEASE_EXPIRED_LEASES, task_names.RELEASE_EXPIRED_RANKING_LEASES, task_names.RECOVER_JOBS,
                task_names.CLEAN_JOB_FILES}
    assert task_names.JOB_TASKS | periodic <= set(current_app.tasks)
    schedule = {entry["task"]: entry["schedule"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert schedule[task_names.RECOVER_JOBS] == settings.REJUDGE_JOBS["RECOVER_EVERY_SECONDS"]
    assert task_names.CLEAN_JOB_FILES in schedule


def _imported_modules(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def test_no_service_imports_the_tasks():
    offenders = {path.relative_to(SERVICES).as_posix() for path in SERVICES.rglob("*.py")
                 if any(m == "annotation.tasks" or m.startswith("annotation.tasks.") for m in _imported_modules(path))}
    assert offenders == set()


@pytest.mark.django_db
def test_a_job_names_a_known_task():
    job = queued_job()
    with pytest.raises(ValueError, match="'annotation.tasks.nope' is not a job task"):
        job_enqueue(job=job, task="annotation.tasks.nope")


@pytest.mark.django_db
def test_an_unreachable_broker_leaves_the_job_queued_for_the_reaper():
    from config.celery import app

    saved = {key: app.conf[key] for key in ("task_always_eager", "broker_url", "task_publish_retry_policy")}
    app.conf.update(task_always_eager=False, broker_url="redis://127.0.0.1:1/0",
                    task_publish_retry_policy={"max_retries": 0})
    app._after_fork()
    job = queued_job()
    try:
        assert job_send(job_id=job.pk) is False  # logged, not raised: the request that started it succeeds
    finally:
        app.conf.update(**saved)
        app._after_fork()
    job.refresh_from_db()
    assert job.status == Job.Status.QUEUED and job.dispatches == 1 and job.dispatched_at is not None
