"""Handing ranking tasks to raters (services/ranking/leases.py): distinct raters, capacity,
priority of started tasks, membership and pause, leases and their expiry, heartbeat and release."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import RankingLease, RankingSubmission, RankingTask
from annotation.selectors.ranking import ranking_study_progress
from annotation.services.accounts.raters import rater_set_paused
from annotation.services.ranking.leases import (RankingLeaseGone, ranking_lease_next, ranking_lease_release,
                                                ranking_lease_renew, ranking_leases_expire)
from annotation.services.ranking.study import ranking_memberships_grant
from tests.annotation.services.ranking.helpers import make_study, raters, submit
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_three_distinct_raters_and_never_more_holders_than_needed():
    r1, r2, r3, r4 = raters(4)
    study = make_study(n_clips=1, raters=[r1, r2, r3, r4])
    task = study.tasks.get()
    a1 = ranking_lease_next(study=study, rater=r1)
    assert a1.lease.task == task
    # r1 already holds the only task: excluding it leaves nothing for r1
    assert ranking_lease_next(study=study, rater=r1, exclude_leases=[a1.lease.token]).reason == "no_work_left"
    assert ranking_lease_next(study=study, rater=r2).lease.task == task
    assert ranking_lease_next(study=study, rater=r3).lease.task == task
    task.refresh_from_db()
    assert (task.active_leases, task.available) == (3, False)
    assert ranking_lease_next(study=study, rater=r4).reason == "no_work_left"
    submit(r1, task)
    assert ranking_lease_next(study=study, rater=r4).reason == "no_work_left"  # 1 ordering + 2 leases = 3
    # r1 has submitted: the task never comes back to them
    assert ranking_lease_next(study=study, rater=r1).reason == "no_work_left"
    submit(r2, task)
    submit(r3, task)
    task.refresh_from_db()
    assert (task.submission_count, task.active_leases, task.available) == (3, 0, False)
    assert task.completed_at is not None
    assert set(task.submissions.values_list("rater", flat=True)) == {r1.pk, r2.pk, r3.pk}
    assert ranking_study_progress(study=study)["complete"] == 1


def test_started_tasks_come_first_and_held_tasks_resume():
    r1, r2 = raters(2)
    study = make_study(n_clips=4, raters=[r1, r2])
    first = ranking_lease_next(study=study, rater=r1).lease
    # r2 gets the task r1 started (priority), not the next unstarted one in queue order
    assert ranking_lease_next(study=study, rater=r2).lease.task == first.task
    # a reloaded page gets the same lease back, renewed
    again = ranking_lease_next(study=study, rater=r1)
    assert again.lease.pk == first.pk and again.lease.expires_at >= first.expires_at
    second = ranking_lease_next(study=study, rater=r1, exclude_leases=[first.token]).lease
    assert second.task != first.task
    assert ranking_lease_next(study=study, rater=r1, exclude_leases=[first.token, second.token]).reason == "holding_max"


def test_membership_and_pause():
    member, outsider = raters(2)
    study = make_study(n_clips=2, raters=[member])
    assert ranking_lease_next(study=study, rater=outsider).reason == "not_a_member"
    rater_set_paused(user=member, paused=True)
    assert ranking_lease_next(study=study, rater=member).reason == "paused"
    rater_set_paused(user=member, paused=False)
    assert ranking_lease_next(study=study, rater=member).lease is not None
    with pytest.raises(ValueError, match="not a rater"):
        ranking_memberships_grant(study=study, users=[make_user("researcher")])


def test_expiry_returns_the_task_and_a_late_ordering_is_kept_uncounted():
    r1, r2, r3, r4 = raters(4)
    study = make_study(n_clips=1, raters_per_task=2, lease_seconds=60, raters=[r1, r2, r3, r4])
    t0 = timezone.now()
    lease1 = ranking_lease_next(study=study, rater=r1, now=t0).lease
    ranking_lease_next(study=study, rater=r2, now=t0)
    assert ranking_lease_next(study=study, rater=r3, now=t0).reason == "no_work_left"
    later = t0 + timedelta(seconds=61)
    # expired lazily when r3 asks: r1's and r2's leases end, r3 gets the task
    assert ranking_lease_next(study=study, rater=r3, now=later).lease.task == lease1.task
    lease1.refresh_from_db()
    assert lease1.state == "expired"
    with pytest.raises(RankingLeaseGone) as gone:
        ranking_lease_renew(token=lease1.token, rater=r1, now=later)
    assert gone.value.still_needed  # 0 orderings + 1 live lease < 2
    # r1 submits anyway while there is room: it counts
    assert submit(r1, lease1.task, now=later).submission.counted
    # 1 ordering + r3's lease = 2: full again
    assert ranking_lease_next(study=study, rater=r4, now=later).reason == "no_work_left"
    submit(r3, lease1.task, now=later)
    # r2's lease had expired and the task is complete: r2's ordering is stored, not counted
    late = submit(r2, lease1.task, now=later).submission
    assert not late.counted and "no longer needed" in late.surplus_reason
    task = RankingTask.objects.get(pk=lease1.task.pk)
    assert (task.submission_count, task.active_leases, task.available) == (2, 0, False)
    assert RankingSubmission.objects.filter(task=task, counted=True).count() == 2


def test_periodic_expiry_and_release():
    r1, r2 = raters(2)
    study = make_study(n_clips=1, raters_per_task=2, lease_seconds=60, raters=[r1, r2])
    t0 = timezone.now()
    lease = ranking_lease_next(study=study, rater=r1, now=t0).lease
    assert ranking_leases_expire(now=t0 + timedelta(seconds=30)) == 0
    assert ranking_leases_expire(now=t0 + timedelta(seconds=61)) == 1
    task = RankingTask.objects.get(pk=lease.task_id)
    assert (task.active_leases, task.available) == (0, True)
    lease2 = ranking_lease_next(study=study, rater=r2).lease
    ranking_lease_release(token=lease2.token, rater=r2)
    lease2.refresh_from_db()
    task.refresh_from_db()
    assert lease2.state == "released" and task.active_leases == 0
    with pytest.raises(RankingLease.DoesNotExist):
        ranking_lease_release(token=lease2.token, rater=r1)  # not r1's


def test_heartbeat_extends_a_live_lease():
    (r1,) = raters(1)
    study = make_study(n_clips=1, lease_seconds=60, raters=[r1])
    t0 = timezone.now()
    lease = ranking_lease_next(study=study, rater=r1, now=t0).lease
    renewed = ranking_lease_renew(token=lease.token, rater=r1, now=t0 + timedelta(seconds=50))
    assert renewed.expires_at == t0 + timedelta(seconds=110)
    submit(r1, lease.task)
    with pytest.raises(RankingLeaseGone) as gone:
        ranking_lease_renew(token=lease.token, rater=r1)
    assert gone.value.lease.state == "completed" and not gone.value.still_needed
