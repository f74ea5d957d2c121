"""The crowd quota as the queue reads it: whether a crowd worker may be handed a new pair.

Quota pairs count every pair the worker judged outside training (gold included: the worker
cannot tell gold from pool pairs, so neither may the count). The queue hands a worker a new pair
only while judged + held < quota, so the worker can never be given more than the quota; a second
check after the claim (a worker asking twice at once) tells the queue to give back a pair that
overran it. Minutes count from the end of the guidelines; once they are up no new pair is handed out.

This module reads models only, so that both the queue (services/queue/leases.py, which gates on
it) and the crowd's own services (services/crowd/quota.py, which gives leases back through the
queue) import it without importing each other.
"""
from __future__ import annotations

from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from annotation.models import CrowdStudy, CrowdWorker, Label, Lease, PooledPair

QUOTA_REACHED = "quota_reached"
NOT_STARTED = "study_not_started"


def judged_and_held(worker: CrowdWorker) -> tuple[int, int]:
    pool_id, rater_id = worker.study.pool_id, worker.user_id
    not_training = ~Q(pair__role=PooledPair.Role.TRAINING)
    judged = Label.objects.filter(not_training, rater_id=rater_id, pair__pool_id=pool_id).count()
    held = Lease.objects.filter(not_training, rater_id=rater_id, pair__pool_id=pool_id, state=Lease.State.ACTIVE).count()
    return judged, held


def minutes_up(worker: CrowdWorker, now) -> bool:
    minutes = worker.study.quota_minutes
    return bool(minutes and worker.work_started_at and now >= worker.work_started_at + timedelta(minutes=minutes))


def pairs_met(study: CrowdStudy, used: int) -> bool:
    return study.quota_pairs is not None and used >= study.quota_pairs


def crowd_worker_in_pool(*, pool_id: int, rater) -> CrowdWorker | None:
    """The rater's crowd identity in the pool's study; None for every other rater."""
    return CrowdWorker.objects.select_related("study", "user").filter(user_id=rater.pk, study__pool_id=pool_id).first()


def crowd_quota_refusal(*, worker: CrowdWorker, now=None) -> str | None:
    """For the queue, before it hands out new work: why the crowd worker gets no new pair (their
    quota is used, by pairs judged and held or by time; they are done; or they have not gone
    through consent and guidelines), or None."""
    if worker.stage == CrowdWorker.Stage.DONE:
        return QUOTA_REACHED
    if worker.stage != CrowdWorker.Stage.WORK:
        return NOT_STARTED
    now = now or timezone.now()
    if minutes_up(worker, now):
        return QUOTA_REACHED
    return QUOTA_REACHED if pairs_met(worker.study, sum(judged_and_held(worker))) else None


def crowd_quota_overrun(*, worker: CrowdWorker, lease: Lease) -> bool:
    """For the queue, after it has leased a pair: True when this lease takes the crowd worker past
    their quota, which only concurrent asks of one worker can do (the queue then gives it back)."""
    if lease.pair.role == PooledPair.Role.TRAINING or worker.study.quota_pairs is None:
        return False
    return sum(judged_and_held(worker)) > worker.study.quota_pairs


def crowd_workers_at_quota(*, pool_id: int, user_ids, now=None) -> set[int]:
    """Of these accounts, the crowd workers of the pool's study whom the queue gives no new pair
    because their quota is used or they are done (crowd_quota_refusal's QUOTA_REACHED): pages
    say so instead of calling them working."""
    workers = CrowdWorker.objects.select_related("study").filter(study__pool_id=pool_id, user_id__in=list(user_ids))
    return {w.user_id for w in workers if crowd_quota_refusal(worker=w, now=now) == QUOTA_REACHED}
