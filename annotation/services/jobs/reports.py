"""Exports started from the API or the pages, as background jobs (reports
start in annotation/services/reports/create.py).

Each start checks the request first (so a mistake gets a 400, not a failed job), then creates the
job and queues it once the transaction commits.
"""
from __future__ import annotations

from django.db import transaction

from annotation.models import Job, Pool
from annotation.services.exports.labels import export_params_clean
from annotation.services.jobs import task_names
from annotation.services.jobs.dispatch import job_enqueue
from annotation.services.jobs.lifecycle import job_create


@transaction.atomic
def export_start(*, pool: Pool, fmt: str, params: dict | None, created_by) -> Job:
    clean = export_params_clean(fmt=fmt, params=params, pool=pool)
    job = job_create(kind=f"export_{fmt}", params={"pool_id": pool.pk, "format": fmt, "params": clean},
                     created_by=created_by)
    return job_enqueue(job=job, task=task_names.EXPORT_LABELS)
