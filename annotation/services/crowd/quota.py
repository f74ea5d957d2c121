"""A crowd worker's quota: how much they have done and when they are done. The rule the queue
gates on (what counts, when the quota is used) is in gate.py, which both read."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from annotation.models import CrowdStudy, CrowdWorker, Lease
from annotation.services.crowd.arrivals import worker_release_held, worker_training_state
from annotation.services.crowd.gate import judged_and_held, minutes_up, pairs_met



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


def worker_progress(*, worker: CrowdWorker, now=None) -> WorkerProgress:
    """Where the worker is; a worker whose quota is met is marked done here (their held pairs,
    if any, go back), so the page that asks is the one that sends them to the completion."""
    now = now or timezone.now()
    study = worker.study
    judged, held = judged_and_held(worker)
    done = worker.stage == CrowdWorker.Stage.DONE
    if not done and worker.stage == CrowdWorker.Stage.WORK and (pairs_met(study, judged) or minutes_up(worker, now)):
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
