"""Celery tasks of the proxies area. The proxy matrices, their reports and the ranking study's build
and report are operations (services/proxies/operations.py, services/ranking/operations.py), run
by the one runner (operations.py); what is left here is the periodic expiry of ranking leases."""
from __future__ import annotations

from celery import shared_task

from annotation.services.jobs import task_names
from annotation.services.ranking.leases import ranking_leases_expire


@shared_task(name=task_names.RELEASE_EXPIRED_RANKING_LEASES)
def release_expired_ranking_leases() -> int:
    """Periodic (celery beat, every minute): overdue ranking leases give their tasks back to the queue."""
    return ranking_leases_expire()
