"""Handing a study's tasks to raters: leases, heartbeats, give-backs and expiry.

Tasks are served like pool pairs (annotation/services/queue/leases.py) and keep the same invariants, in
the same transaction as every change, under the task's row lock:
- `active_leases + submission_count <= required_submissions` (also a check constraint);
- a rater never gets a task they hold or have submitted (unique live lease, unique submission per
  task and rater), so each task's orderings come from distinct raters;
- `available` is true exactly when the task is short of orderings counting live leases, so the
  next-task query walks the partial index `ranking_task_queue` in hand-out order with
  SELECT ... FOR UPDATE SKIP LOCKED and stays fast however large the study.
Locks are taken task first, then lease, so concurrent submits and expiries cannot deadlock.
Started tasks are handed out first, so orderings complete tasks rather than spread thin.
Submissions (submissions.py) keep the same invariants under the same locks.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from annotation.analysis.votes import has_room
from annotation.models import RankingLease, RankingMembership, RankingStudy, RankingSubmission, RankingTask
from annotation.services.accounts.raters import rater_profile
from annotation.services.queue.lease_lifecycle import LeasedItems, lease_extend, lease_give_back, leases_expire_due

MAX_HELD_PER_STUDY = 2  # the task on screen and the next one, preloaded
TASK_FLAG_FIELDS = ["active_leases", "available", "priority"]
TASK_FIELDS = TASK_FLAG_FIELDS + ["submission_count", "completed_at"]


@dataclass(frozen=True)
class RankingAssignment:
    lease: RankingLease | None
    reason: str | None = None  # why there is none: not_a_member, paused, holding_max, no_work_left


class RankingLeaseGone(Exception):
    """The lease is no longer live (expired, completed or released)."""

    def __init__(self, lease: RankingLease, still_needed: bool) -> None:
        self.lease, self.still_needed = lease, still_needed
        super().__init__(f"lease {lease.pk} is {lease.state}")


def refresh_task_flags(task: RankingTask) -> None:
    """Recomputes the queue columns from the counters (call with the task row locked): a task is
    available while it has room (analysis/votes.py has_room, the pool pairs' rule)."""
    task.available = has_room(required=task.required_submissions, votes=task.submission_count,
                              leases=task.active_leases)
    task.priority = 1 if task.submission_count + task.active_leases > 0 else 0


#: Ranking tasks as leased items: their leases end as a pool pair's do (queue/lease_lifecycle.py).
TASKS = LeasedItems(lease_model=RankingLease, item_model=RankingTask, item_field="task",
                    refresh_flags=refresh_task_flags, flag_fields=tuple(TASK_FLAG_FIELDS))


def ranking_lease_next(*, study: RankingStudy, rater, exclude_leases=(), now=None) -> RankingAssignment:
    """The rater's next task in this study, leased for `study.lease_seconds`.

    Tasks the rater already holds come back first (a reloaded page resumes), except those whose
    lease tokens are in `exclude_leases` (the ones the page already shows or preloads). A task
    whose lease is listed is not claimed anew either: the page lists the leases it gave back with
    "none of these fits", so that the same five captions do not come straight back to this rater
    (the task stays open to everyone else)."""
    now = now or timezone.now()
    if not RankingMembership.objects.filter(study=study, rater=rater).exists():
        return RankingAssignment(None, "not_a_member")
    if rater_profile(user=rater).paused:
        return RankingAssignment(None, "paused")
    ranking_leases_expire(now=now, study=study, limit=50)

    excluded = set(exclude_leases)
    held = list(RankingLease.objects.filter(rater=rater, task__study=study, state=RankingLease.State.ACTIVE)
                .order_by("created_at", "pk"))
    for lease in held:
        if lease.token not in excluded:
            RankingLease.objects.filter(pk=lease.pk, state=RankingLease.State.ACTIVE).update(
                expires_at=now + timedelta(seconds=study.lease_seconds))
            lease.refresh_from_db(fields=["expires_at", "state"])
            return RankingAssignment(lease)
    if len(held) >= MAX_HELD_PER_STUDY:
        return RankingAssignment(None, "holding_max")
    passed = list(RankingLease.objects.filter(rater=rater, task__study=study, token__in=excluded)
                  .values_list("task_id", flat=True)) if excluded else []
    lease = _claim_task(study, rater, now, passed)
    return RankingAssignment(lease, None if lease else "no_work_left")


def _not_mine(rater):
    return (~Exists(RankingSubmission.objects.filter(task=OuterRef("pk"), rater=rater))
            & ~Exists(RankingLease.objects.filter(task=OuterRef("pk"), rater=rater, state=RankingLease.State.ACTIVE)))


def _claim_task(study: RankingStudy, rater, now, passed_tasks=()) -> RankingLease | None:
    """SKIP LOCKED lets raters take different tasks at once, but it also hides tasks that another
    request has locked for a moment (a submission under way). When only such tasks are left, wait
    for their locks instead of telling the rater there is no work."""
    wait = False
    for _ in range(6):
        with transaction.atomic():
            open_tasks = RankingTask.objects.filter(study=study, available=True).filter(_not_mine(rater))
            if passed_tasks:
                open_tasks = open_tasks.exclude(pk__in=passed_tasks)
            task = (open_tasks.select_for_update(skip_locked=not wait, of=("self",))
                    .order_by("-priority", "queue_order")
                    .first())
            if task is None:
                if wait or not open_tasks.exists():
                    return None
                wait = True
                continue
            refresh_task_flags(task)
            if not task.available:
                continue  # changed between our snapshot and the lock; look again
            lease = RankingLease.objects.create(task=task, rater=rater,
                                                expires_at=now + timedelta(seconds=study.lease_seconds))
            task.active_leases += 1
            refresh_task_flags(task)
            task.save(update_fields=TASK_FLAG_FIELDS)
            lease.task = task
            return lease
    return None


def task_still_needed(task: RankingTask) -> bool:
    return has_room(required=task.required_submissions, votes=task.submission_count, leases=task.active_leases)


def ranking_lease_renew(*, token: str, rater, now=None) -> RankingLease:
    """Heartbeat: extends a live lease. A lease that is no longer live raises RankingLeaseGone,
    saying whether the task still needs an ordering (the page then submits anyway, or moves on)."""
    now = now or timezone.now()
    lease = RankingLease.objects.select_related("task__study").get(token=token, rater=rater)
    if not lease_extend(TASKS, lease, seconds=lease.task.study.lease_seconds, paused=rater_profile(user=rater).paused,
                        now=now):
        lease.task.refresh_from_db()
        mine = RankingSubmission.objects.filter(task=lease.task, rater=rater).exists()
        raise RankingLeaseGone(lease, task_still_needed(lease.task) and not mine)
    return lease


def ranking_lease_release(*, token: str, rater, now=None) -> RankingLease:
    """The rater gives the task back without ordering it (e.g. the clip does not play)."""
    return lease_give_back(TASKS, token=token, rater=rater, now=now)



def ranking_leases_expire(*, now=None, study: RankingStudy | None = None, limit: int = 1000) -> int:
    """Returns the tasks of overdue leases to the queue (the periodic job, and lazily at assignment)."""
    return leases_expire_due(TASKS, now=now or timezone.now(), limit=limit,
                             **({"task__study": study} if study is not None else {}))
