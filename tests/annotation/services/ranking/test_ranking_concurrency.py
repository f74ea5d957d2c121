"""Raters working a ranking study at the same time, on PostgreSQL (SELECT ... FOR UPDATE SKIP
LOCKED): every task ends with exactly raters_per_task counted orderings from distinct raters."""
from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.db import connections

from annotation.models import RankingLease, RankingSubmission, RankingTask
from annotation.selectors.ranking import ranking_task_display
from annotation.services.ranking.leases import ranking_lease_next
from annotation.services.ranking.submissions import ranking_submission_create
from tests.annotation.services.ranking.helpers import CAPTIONS, make_benchmark, make_study
from tests.factories import make_user

RATERS = 8
PER_TASK = 3


def work_until_done(study, rater, errors: list, rounds: Counter) -> None:
    try:
        while True:
            assignment = ranking_lease_next(study=study, rater=rater)
            if assignment.lease is None:
                assert assignment.reason == "no_work_left", assignment.reason
                return
            task = assignment.lease.task
            order = [c["id"] for c in reversed(ranking_task_display(task=task, rater=rater))]
            result = ranking_submission_create(rater=rater, client_id=f"{rater.pk}:{task.pk}", lease=assignment.lease.token,
                                               order=order, seconds=1.0)
            assert result.created and result.submission.counted
            rounds[rater.pk] += 1
    except Exception as exc:  # noqa: BLE001 - reported by the main thread
        errors.append(repr(exc))
    finally:
        connections.close_all()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_raters_complete_every_task_exactly(require_postgres):
    captions = CAPTIONS + [f"{a} {b} plays" for a in ("small", "big", "old") for b in ("fox", "owl", "hen")]
    raters = [make_user("rater") for _ in range(RATERS)]
    study = make_study(make_benchmark(captions), n_clips=len(captions), raters_per_task=PER_TASK, raters=raters)
    errors: list = []
    rounds: Counter = Counter()
    threads = [threading.Thread(target=work_until_done, args=(study, r, errors, rounds)) for r in raters]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []

    tasks = list(RankingTask.objects.filter(study=study))
    assert len(tasks) == len(captions)
    for task in tasks:
        subs = list(RankingSubmission.objects.filter(task=task))
        assert len(subs) == PER_TASK and all(s.counted for s in subs)
        assert len({s.rater_id for s in subs}) == PER_TASK
        assert (task.submission_count, task.active_leases, task.available) == (PER_TASK, 0, False)
        assert task.completed_at is not None
    assert sum(rounds.values()) == len(tasks) * PER_TASK
    assert not RankingLease.objects.filter(task__study=study, state="active").exists()
    assert len(rounds) > 1  # the work was shared
