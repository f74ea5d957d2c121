"""Periodic upkeep of the queue (the pools' jobs are operations: services/pools/operations.py)."""
from __future__ import annotations

from celery import shared_task

from annotation.services.jobs import task_names
from annotation.services.queue.leases import leases_expire


@shared_task(name=task_names.RELEASE_EXPIRED_LEASES)
def release_expired_leases() -> int:
    """Periodic (celery beat, every minute): overdue leases give their pairs back to the queue."""
    return leases_expire()
