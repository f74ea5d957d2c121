"""Periodic (celery beat) upkeep of the jobs themselves."""
from __future__ import annotations

from celery import shared_task

from annotation.services.jobs import task_names
from annotation.services.storage.job_files import job_files_clean
from annotation.services.jobs.recovery import jobs_recover


@shared_task(name=task_names.RECOVER_JOBS)
def recover_jobs() -> dict:
    """Every RECOVER_EVERY_SECONDS: jobs whose worker went silent are retried or failed; queued
    jobs whose message may be lost are sent again."""
    return jobs_recover()


@shared_task(name=task_names.CLEAN_JOB_FILES)
def clean_job_files() -> dict:
    """Hourly: uploads no job needs any more, and files no result refers to."""
    return job_files_clean()
