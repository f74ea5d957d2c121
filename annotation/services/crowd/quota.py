"""A crowd worker's quota: how much they have done, when they are done, and the queue's gate.

Quota pairs count every pair the worker judged outside training (gold included: the worker
cannot tell gold from pool pairs, so neither may the count). The queue hands a worker a new pair
only while judged + held < quota, so the worker can never be given more than the quota; a second
check after the claim (a worker asking twice at once) gives back a pair that overran it.
Minutes count from the end of the guidelines; once they are up no new pair is handed out.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.models import CrowdStudy, CrowdWorker, Label, Lease, PooledPair
from annotation.services.crowd.arrivals import worker_release_held, worker_training_state
from annotation.services.queue.leases import lease_release

QUOTA_REACHED = "quota_reached"
NOT_STARTED = "study_not_started"


@dataclass(frozen=True)
class WorkerProgress:
    stage: str
    judged: int
    held: int
    quota_pairs: int | None
    quota_minutes: int | None
    seconds_left: int | None
    training: str
    done: bool


def _judged_and_held(worker: CrowdWorker) -> tuple[int, int]:
    pool_id, rater_id = worker.study.pool_id, worker.user_id
    not_training = ~Q(pair__role=PooledPair.Role.TRAINING)
    judged = Label.objects.filter(not_training, rater_id=rater_id, pair__pool_id=pool_id).count()
    held = Lease.objects.filter(not_training, rater_id=rater_id, pair__pool_id=pool_id, state=Lease.State.ACTIVE).count()
    return judged, held


def _minutes_up(worker: CrowdWorker, now) -> bool:
    minutes = worker.study.quota_minutes
    return bool(minutes and worker.work_started_at and now >= worker.work_started_at + timedelta(minutes=minutes))


def _pairs_met(study: CrowdStudy, used: int) -> bool:
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
    if _minutes_up(worker, now):
        return QUOTA_REACHED
    return QUOTA_REACHED if _pairs_met(worker.study, sum(_judged_and_held(worker))) else None


def crowd_quota_overrun(*, worker: CrowdWorker, lease: Lease, now=None) -> bool:
    """For the queue, after it has leased a pair: True (and the pair given back) when this lease
    takes the crowd worker past their quota, which only concurrent asks of one worker can do."""
    if lease.pair.role == PooledPair.Role.TRAINING or worker.study.quota_pairs is None:
        return False
    if sum(_judged_and_held(worker)) <= worker.study.quota_pairs:
        return False
    lease_release(token=lease.token, rater=worker.user, now=now)
    return True


def worker_progress(*, worker: CrowdWorker, now=None) -> WorkerProgress:
    """Where the worker is; a worker whose quota is met is marked done here (their held pairs,
    if any, go back), so the page that asks is the one that sends them to the completion."""
    now = now or timezone.now()
    study = worker.study
    judged, held = _judged_and_held(worker)
    done = worker.stage == CrowdWorker.Stage.DONE
    if not done and worker.stage == CrowdWorker.Stage.WORK and (_pairs_met(study, judged) or _minutes_up(worker, now)):
        worker = worker_complete(worker=worker, now=now)
        done, held = True, 0
    seconds_left = None
    if study.quota_minutes and worker.work_started_at:
        seconds_left = max(0, int((worker.work_started_at + timedelta(minutes=study.quota_minutes) - now).total_seconds()))
    return WorkerProgress(stage=worker.stage, judged=judged, held=held, quota_pairs=study.quota_pairs,
                          quota_minutes=study.quota_minutes, seconds_left=seconds_left,
                          training=worker_training_state(worker), done=done)


def worker_complete(*, worker: CrowdWorker, now=None) -> CrowdWorker:
    """Marks the worker done (once) and gives back what they still hold."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = CrowdWorker.objects.select_for_update(of=("self",)).select_related("study", "user").get(pk=worker.pk)
        if locked.stage != CrowdWorker.Stage.DONE:
            locked.stage, locked.completed_at, locked.completed_session_id = CrowdWorker.Stage.DONE, now, locked.session_id
            locked.save(update_fields=["stage", "completed_at", "completed_session_id"])
    worker_release_held(worker=locked, now=now)
    return locked


def worker_seen(*, worker: CrowdWorker, now=None) -> None:
    CrowdWorker.objects.filter(pk=worker.pk).update(last_seen_at=now or timezone.now())


def crowd_idle_release(*, study: CrowdStudy, now=None) -> int:
    """Gives back the pairs of the study's workers silent for longer than its idle timeout (their
    page closed without saying so). Run lazily whenever any worker's page reports in; the
    queue's own lease expiry catches the rest."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=study.idle_timeout_seconds)
    idle = (CrowdWorker.objects.select_related("study", "user")
            .filter(study=study, last_seen_at__lt=cutoff, user__leases__state=Lease.State.ACTIVE).distinct())
    return sum(worker_release_held(worker=worker, now=now) for worker in idle)
