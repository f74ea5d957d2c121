"""Taking back an answer: the rater's recent answers, and changing one of them.

A change rewrites the rater's one label on the pair (there is never a second label) and writes a
LabelChange row with the old and new answer, so the audit trail keeps what was first said.

When a change is allowed (the same rules for pool and gold pairs, so that neither the answer to a
change nor `can_change` tells a gold pair from a pool pair, nor says whether the first answer
was right):
- only relevant / not relevant answers, changed into one of those two. An "ambiguous" or "doesn't
  play" answer has already sent a pool pair to an admin or towards being set aside; taking it back
  would have to undo someone else's work, so it is refused (`not_a_vote`) for every pair.
- never a training answer: its correct answer was shown right after it (`training_answer`).
- never once a report or judgment set of the pool was made after the answer (`used_by_report`):
  published figures must not change under a reader.
- a pool pair must be open or resolved by its votes; one an admin decided, or that is in
  adjudication, set aside or in disagreement, is refused (`closed`). A pair the rater's vote
  resolved stays changeable (most pairs need a single vote, so refusing it would make undo
  useless, and would tell gold pairs, which never resolve, from pool pairs): the pair is
  re-resolved from its counted votes with the new answer, applying the third-label rule again
  (two votes that now disagree reopen the pair for a third; a third vote's majority decides).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from annotation.models import Label, LabelChange, PooledPair, PoolMembership, RaterProfile, Report
from annotation.models.reports import JudgmentSet
from annotation.services.queue.labels import PAIR_FIELDS, LabelRefused
from annotation.services.queue.leases import item_id_for, refresh_pair_flags

RECENT_ANSWERS = 20

CLOSED_STATES = (PooledPair.State.ADJUDICATION, PooledPair.State.SET_ASIDE, PooledPair.State.DISAGREEMENT)


@dataclass(frozen=True)
class RecentAnswer:
    item_id: str
    caption: str
    value: str
    comment: str
    answered_at: object
    changed_at: object | None
    can_change: bool
    why_not: str | None  # the refusal code a change would get now, or None


def _pool_used_since(pool_id: int):
    """When the pool's labels were last read into something published (a report or a judgment
    set): answers given before then are frozen."""
    reports = Report.objects.filter(pool_id=pool_id).aggregate(at=Max("created_at"))["at"]
    sets = JudgmentSet.objects.filter(pool_id=pool_id).aggregate(at=Max("created_at"))["at"]
    return max([at for at in (reports, sets) if at is not None], default=None)


def _refusal(label: Label, pair: PooledPair, used_at) -> str | None:
    if pair.role == PooledPair.Role.TRAINING:
        return "training_answer"
    if used_at is not None and used_at >= label.created_at:
        return "used_by_report"
    if label.value not in Label.VOTES:
        return "not_a_vote"
    if pair.role == PooledPair.Role.POOL and (pair.state in CLOSED_STATES or pair.resolved_by_admin):
        return "closed"
    return None


REFUSAL_MESSAGES = {
    "training_answer": "training answers cannot be changed: their correct answer was shown",
    "used_by_report": "a report already uses this answer; it can no longer be changed",
    "not_a_vote": "only relevant / not relevant answers can be changed",
    "closed": "this pair has gone to an admin; the answer can no longer be changed",
}


def recent_answers(*, rater, pool_id: int, limit: int = RECENT_ANSWERS) -> list[RecentAnswer]:
    """The rater's last answers in the pool, newest first, each with whether it can still be changed."""
    if not PoolMembership.objects.filter(pool_id=pool_id, rater=rater).exists():
        raise LabelRefused("not_found", "no such pool")
    used_at = _pool_used_since(pool_id)
    labels = list(Label.objects.filter(rater=rater, pair__pool_id=pool_id).select_related("pair__caption")
                  .order_by("-created_at", "-id")[:limit])
    changed = dict(LabelChange.objects.filter(label__in=labels).values("label_id").annotate(at=Max("changed_at"))
                   .values_list("label_id", "at"))
    answers = []
    for label in labels:
        why = _refusal(label, label.pair, used_at)
        answers.append(RecentAnswer(item_id_for("pair", label.pair_id), label.pair.caption.text, label.value,
                                    label.comment, label.created_at, changed.get(label.pk), why is None, why))
    return answers


def _label_for_item(rater, item_id: str) -> int | None:
    """The rater's own label on the pair with this opaque id (the HMAC cannot be reversed, so the
    rater's labels are hashed until one matches, newest first: undo is about recent answers)."""
    if not isinstance(item_id, str) or not item_id or len(item_id) > 64:
        return None
    for pk, pair_id in Label.objects.filter(rater=rater).order_by("-created_at", "-id").values_list("pk", "pair_id").iterator():
        if item_id_for("pair", pair_id) == item_id:
            return pk
    return None


def answer_change(*, rater, item_id: str, value: str, comment: str | None = None, now=None) -> tuple[Label, LabelChange]:
    """Replaces the rater's answer on the pair with opaque id `item_id` by `value` (and `comment`,
    when given), keeping the pair's counts and resolution consistent; see the module docstring."""
    now = now or timezone.now()
    if value not in Label.VOTES:
        raise LabelRefused("invalid", "value must be relevant or not_relevant")
    label_pk = _label_for_item(rater, item_id)
    if label_pk is None:
        raise LabelRefused("not_found", "no such answer of yours")
    if RaterProfile.objects.filter(user=rater, paused=True).exists():
        raise LabelRefused("paused", "an admin has paused your work; the answer was not changed")
    with transaction.atomic():
        # Pair first, then label: the lock order of submitting, so a change and a vote on the
        # same pair (or two changes of the same answer) queue instead of deadlocking.
        pair_id = Label.objects.filter(pk=label_pk).values_list("pair_id", flat=True).get()
        pair = PooledPair.objects.select_for_update().get(pk=pair_id)
        label = Label.objects.select_for_update().get(pk=label_pk)
        training = PoolMembership.objects.filter(pool_id=pair.pool_id, rater=rater).values_list("training", flat=True).first()
        if training is None:
            raise LabelRefused("forbidden", "you have no access to this pool")
        # The training gate of label_submit holds for changes too: a rater sent back to training
        # changes no pool or gold answer until passing it again.
        if pair.role != PooledPair.Role.TRAINING and training != PoolMembership.Training.PASSED \
                and PooledPair.objects.filter(pool_id=pair.pool_id, role=PooledPair.Role.TRAINING).exists():
            raise LabelRefused("training", "you have not passed this pool's training; the answer was not changed")
        why = _refusal(label, pair, _pool_used_since(pair.pool_id))
        if why:
            raise LabelRefused(why, REFUSAL_MESSAGES[why])
        change = LabelChange.objects.create(label=label, changed_by=rater, old_value=label.value, new_value=value,
                                            old_comment=label.comment,
                                            new_comment=label.comment if comment is None else comment[:5000],
                                            changed_at=now)
        label.value, label.comment = change.new_value, change.new_comment
        label.save(update_fields=["value", "comment"])
        if pair.role == PooledPair.Role.POOL and label.counted:
            _re_resolve(pair, now, changed_label=label)
        # Gold pairs take the same statements (their flags never change), so no timing tells them apart.
        refresh_pair_flags(pair)
        pair.save(update_fields=PAIR_FIELDS)
    return label, change


def _re_resolve(pair: PooledPair, now, *, changed_label: Label) -> None:
    """The pair's state from its counted votes as they now are, by FIRE's rule (labels.py
    `_resolve`): the pair's own requirement (1 or 2 votes; 3 is only ever the third-label rule),
    then a strict majority resolves, two disagreeing votes ask for a third."""
    votes = [changed_label.value] if pair.vote_count == 1 else list(
        Label.objects.filter(pair=pair, counted=True).values_list("value", flat=True))
    required = 1 if pair.required_labels == 1 else 2
    was = (pair.state, pair.resolved_label)
    pair.state, pair.resolved_label, pair.required_labels = PooledPair.State.OPEN, "", required
    if len(votes) >= required:
        top, count = Counter(votes).most_common(1)[0]
        if count * 2 > len(votes):
            pair.state, pair.resolved_label = PooledPair.State.RESOLVED, top
        elif len(votes) < 3:
            pair.required_labels = len(votes) + 1
        else:
            pair.state = PooledPair.State.DISAGREEMENT
    if (pair.state, pair.resolved_label) != was:
        pair.resolved_at = now if pair.state == PooledPair.State.RESOLVED else None
