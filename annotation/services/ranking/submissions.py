"""Taking a rater's ordering of the five captions of a task they hold (or held), under the queue's
invariants and lock order (leases.py)."""
from __future__ import annotations

from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.models import RankingLease, RankingMembership, RankingSubmission, RankingTask
from annotation.services.accounts.raters import rater_profile
from annotation.services.ranking.leases import TASK_FIELDS, refresh_task_flags, task_still_needed


class RankingRefused(ValueError):
    """The submission cannot be accepted as sent; `code` says why and `field` which input is wrong."""

    def __init__(self, code: str, message: str, field: str | None = None) -> None:
        self.code, self.field = code, field
        super().__init__(message)


@dataclass(frozen=True)
class SubmissionResult:
    submission: RankingSubmission
    created: bool


def ranking_submission_create(*, rater, client_id: str, lease: str, order: list, seconds: float | None = None,
                              now=None) -> SubmissionResult:
    """Stores a rater's ordering of the five captions of the task they hold (or held) under
    `lease`, the lease's opaque token (caption ids, most relevant first).

    Only a lease the rater was given carries an ordering: not another rater's task, not while
    paused. The same `client_id` again returns the stored submission; a second ordering of the
    same task under another client id is a conflict. An ordering that arrives when the task no
    longer needs it (lease ended, others took the place) is kept with counted=False."""
    now = now or timezone.now()
    client_id = (client_id or "").strip()
    if not client_id or len(client_id) > 64:
        raise RankingRefused("invalid", "client_id must be 1 to 64 characters", "client_id")
    replay = RankingSubmission.objects.filter(rater=rater, client_id=client_id).first()
    if replay:
        return SubmissionResult(replay, False)
    if seconds is not None and seconds < 0:
        raise RankingRefused("invalid", "seconds must not be negative", "seconds")
    if not isinstance(lease, str) or not lease or len(lease) > 64:
        raise RankingRefused("invalid", "lease_id must be the lease id the task was handed out with", "lease_id")
    try:
        with transaction.atomic():
            return _submit_locked(rater, client_id, lease, list(order), seconds, now)
    except IntegrityError:
        # The same client id raced in through another request; that one stands.
        replay = RankingSubmission.objects.filter(rater=rater, client_id=client_id).first()
        if replay:
            return SubmissionResult(replay, False)
        raise


def _submit_locked(rater, client_id: str, token: str, order: list, seconds: float | None, now) -> SubmissionResult:
    named = RankingLease.objects.filter(token=token, rater=rater).values("pk", "task_id", "state").first()
    if named is None:
        raise RankingRefused("not_found", "no such lease", "lease_id")  # the same for another rater's lease
    # Task first, then lease: the lock order of every change to a task.
    task = RankingTask.objects.select_for_update().get(pk=named["task_id"])
    if not RankingMembership.objects.filter(study=task.study_id, rater=rater).exists():
        raise RankingRefused("forbidden", "you have no access to this study")
    if rater_profile(user=rater).paused:
        raise RankingRefused("paused", "an admin has paused your work; this ordering was not stored")
    replay = RankingSubmission.objects.filter(rater=rater, client_id=client_id).first()
    if replay:
        return SubmissionResult(replay, False)
    if RankingSubmission.objects.filter(task=task, rater=rater).exists():
        raise RankingRefused("conflict", "you have already ordered this task's captions")
    if named["state"] in (RankingLease.State.RELEASED, RankingLease.State.COMPLETED):
        raise RankingRefused("conflict", f"this lease has been {named['state']}; the task is no longer yours to order")
    expected = set(task.captions.values_list("caption_id", flat=True))
    if len(order) != len(expected) or set(order) != expected or any(type(c) is not int for c in order):
        raise RankingRefused("invalid", f"order must list this task's {len(expected)} caption ids, each once, "
                                        "most relevant first", "order")

    # The live lease may be a newer one than the ordering names (the old one ran out and the task
    # came back to the rater); none live means a late ordering.
    live = RankingLease.objects.select_for_update().filter(task=task, rater=rater, state=RankingLease.State.ACTIVE).first()
    submission = RankingSubmission(task=task, rater=rater, client_id=client_id, order=order, seconds=seconds,
                                   lease_id=live.pk if live else named["pk"], counted=False)
    if live:
        live.state, live.ended_at = RankingLease.State.COMPLETED, now
        live.save(update_fields=["state", "ended_at"])
        task.active_leases = max(0, task.active_leases - 1)
    if task_still_needed(task):
        submission.counted = True
        task.submission_count += 1
        if task.submission_count == task.required_submissions:
            task.completed_at = now
    else:
        submission.surplus_reason = "arrived after its lease ended, when the task no longer needed it"
    submission.save()
    refresh_task_flags(task)
    task.save(update_fields=TASK_FIELDS)
    return SubmissionResult(submission, True)
