"""Taking back an answer: the rater's recent answers, and changing one of them.

A change rewrites the rater's one label on the pair (there is never a second label) and writes a
LabelChange row with the old and new answer, so the audit trail keeps what was first said.

Every answer a rater can give can be taken back and given anew as any other (relevant, not
relevant, ambiguous with a comment, doesn't play): the old answer's effect on the pair is undone
(its vote uncounted, its report to the admin or its "doesn't play" report withdrawn) and the new
one's applied, as label_submit would have applied it.

When a change is allowed (the same rules for pool and gold pairs, so that neither the answer to a
change nor `can_change` tells a gold pair from a pool pair, nor says whether the first answer
was right):
- never a training answer: its correct answer was shown right after it (`training_answer`).
- never once a report or judgment set of the pool was made after the answer (`used_by_report`):
  published figures must not change under a reader.
- a pool pair must be open or resolved by its votes, or waiting for an admin because of this very
  answer (in adjudication after an "ambiguous", set aside after a "doesn't play") with no admin
  decision yet; one an admin decided, or that is in adjudication, set aside or in disagreement
  for other reasons, is refused (`closed`). A pair the rater's vote resolved stays changeable
  (most pairs need a single vote, so refusing it would make undo useless, and would tell gold
  pairs, which never resolve, from pool pairs): the pair is re-resolved from its counted votes
  with the new answer, applying the third-label rule again (two votes that now disagree reopen
  the pair for a third; a third vote's majority decides).
- a change into a vote needs the clip watched as a vote does (`too_soon`, counted from the
  lease the answer was given under), so "doesn't play" then "relevant" cannot skip the clip.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from annotation.analysis.votes import base_requirement, has_room, resolve_votes
from annotation.models import Label, LabelChange, PooledPair, PoolMembership, RaterProfile, Report
from annotation.models.judgment_sets import JudgmentSet
from annotation.services.queue.labels import PAIR_FIELDS, LabelRefused
from annotation.services.queue.leases import item_id_for, pair_min_watch, refresh_pair_flags

RECENT_ANSWERS = 20

CLOSED_STATES = (PooledPair.State.ADJUDICATION, PooledPair.State.SET_ASIDE, PooledPair.State.DISAGREEMENT)


@dataclass(frozen=True)
class RecentAnswer:
    item_id: str
    caption: str
    clip: dict  # url, start, end: what the answer was about, to show again when it is taken back
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
    if pair.role == PooledPair.Role.POOL and (pair.resolved_by_admin or (pair.state in CLOSED_STATES
                                                                         and not _waits_on_this_answer(label, pair))):
        return "closed"
    return None


def _waits_on_this_answer(label: Label, pair: PooledPair) -> bool:
    """The pair waits for an admin because of this label: taking it back withdraws the request."""
    return ((pair.state == PooledPair.State.ADJUDICATION and label.value == Label.Value.AMBIGUOUS)
            or (pair.state == PooledPair.State.SET_ASIDE and label.value == Label.Value.BROKEN))


REFUSAL_MESSAGES = {
    "training_answer": "training answers cannot be changed: their correct answer was shown",
    "used_by_report": "a report already uses this answer; it can no longer be changed",
    "closed": "this pair has gone to an admin; the answer can no longer be changed",
}


def recent_answers(*, rater, pool_id: int, limit: int = RECENT_ANSWERS) -> list[RecentAnswer]:
    """The rater's last answers in the pool, newest first, each with whether it can still be changed."""
    if not PoolMembership.objects.filter(pool_id=pool_id, rater=rater).exists():
        raise LabelRefused("not_found", "no such pool")
    used_at = _pool_used_since(pool_id)
    labels = list(Label.objects.filter(rater=rater, pair__pool_id=pool_id).select_related("pair__caption", "pair__clip")
                  .order_by("-created_at", "-id")[:limit])
    changed = dict(LabelChange.objects.filter(label__in=labels).values("label_id").annotate(at=Max("changed_at"))
                   .values_list("label_id", "at"))
    answers = []
    for label in labels:
        why = _refusal(label, label.pair, used_at)
        answers.append(RecentAnswer(item_id_for("pair", label.pair_id), label.pair.caption.text, _clip_of(label.pair), label.value,
                                    label.comment, label.created_at, changed.get(label.pk), why is None, why))
    return answers


def _clip_of(pair: PooledPair) -> dict:
    """The clip as the judging page played it: a moment pair's own span wins over its clip's."""
    clip = pair.clip
    if pair.start is not None:
        return {"url": clip.playback_url, "start": pair.start, "end": pair.end}
    return {"url": clip.playback_url, "start": clip.start, "end": clip.end}


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
    if value not in Label.Value.values:
        raise LabelRefused("invalid", f"value must be one of {', '.join(Label.Value.values)}")
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
        if value in Label.VOTES and label.value not in Label.VOTES:
            _check_watched_since_lease(label, pair, now)
        change = LabelChange.objects.create(label=label, changed_by=rater, old_value=label.value, new_value=value,
                                            old_comment=label.comment,
                                            new_comment=label.comment if comment is None else comment[:5000],
                                            changed_at=now)
        old_value = label.value
        label.value, label.comment = change.new_value, change.new_comment
        if pair.role != PooledPair.Role.POOL or (old_value in Label.VOTES and value in Label.VOTES):
            label.save(update_fields=["value", "comment"])
            if pair.role == PooledPair.Role.POOL and label.counted:
                _re_resolve(pair, now, changed_label=label)
        else:
            _swap_effects(pair, label, old_value, now)
        # Gold pairs take the same statements (their flags never change), so no timing tells them apart.
        refresh_pair_flags(pair)
        pair.save(update_fields=PAIR_FIELDS)
    return label, change


def _check_watched_since_lease(label: Label, pair: PooledPair, now) -> None:
    """A vote needs the clip seen (labels.py `_check_watched`): counted from when the lease the
    answer came under was handed out, which no page can shorten."""
    handed_out = label.lease.created_at if label.lease_id else label.created_at
    left = round(pair_min_watch(pair) - (now - handed_out).total_seconds(), 2)
    if left > 0:
        raise LabelRefused("too_soon", f"the clip has not been watched long enough; send the answer again in {left:g} s",
                           seconds_left=left)


def _swap_effects(pair: PooledPair, label: Label, old_value: str, now) -> None:
    """Undoes what `old_value` did to the pool pair and applies the label's new value, as
    label_submit would have (label.value already holds the new value; the caller saves the pair)."""
    recount = False
    if old_value in Label.VOTES:
        if label.counted:
            label.counted, label.sequence = False, 0
            label.surplus_reason = "taken back by its rater"
            pair.vote_count = max(0, pair.vote_count - 1)
            recount = True
    elif old_value == Label.Value.AMBIGUOUS:
        others_ask = Label.objects.filter(pair=pair, value=Label.Value.AMBIGUOUS).exclude(pk=label.pk).exists()
        if pair.state == PooledPair.State.ADJUDICATION and not others_ask:
            pair.state = PooledPair.State.OPEN
    elif old_value == Label.Value.BROKEN:
        pair.broken_reports = max(0, pair.broken_reports - 1)
        if pair.state == PooledPair.State.SET_ASIDE and pair.broken_reports < pair.pool.broken_reports_limit:
            pair.state = PooledPair.State.OPEN
    if label.value in Label.VOTES:
        # A vote counts only if the pair still has room for it, as a submitted one.
        if pair.state == PooledPair.State.OPEN and has_room(
                required=pair.required_labels, votes=pair.vote_count, leases=pair.active_leases):
            pair.vote_count += 1
            label.counted, label.sequence, label.surplus_reason = True, pair.vote_count, ""
            recount = True
        else:
            label.surplus_reason = f"changed into a vote when the pair was already {pair.get_state_display().lower()}"
    label.save(update_fields=["value", "comment", "counted", "sequence", "surplus_reason"])
    if recount and pair.state in (PooledPair.State.OPEN, PooledPair.State.RESOLVED):
        _re_resolve(pair, now, changed_label=label)
    if label.value == Label.Value.AMBIGUOUS and pair.state == PooledPair.State.OPEN:
        pair.state = PooledPair.State.ADJUDICATION
    elif label.value == Label.Value.BROKEN:
        pair.broken_reports += 1
        if pair.state == PooledPair.State.OPEN and pair.broken_reports >= pair.pool.broken_reports_limit:
            pair.state = PooledPair.State.SET_ASIDE


def _re_resolve(pair: PooledPair, now, *, changed_label: Label) -> None:
    """The pair's state from its counted votes as they now are, by FIRE's rule (analysis/votes.py)
    from the pair's own requirement (1 or 2 votes; 3 is only ever the third-label rule)."""
    votes = [changed_label.value] if pair.vote_count == 1 and changed_label.counted else list(
        Label.objects.filter(pair=pair, counted=True).values_list("value", flat=True))
    was = (pair.state, pair.resolved_label)
    outcome = resolve_votes(votes, base_requirement(pair.required_labels))
    pair.state, pair.resolved_label, pair.required_labels = PooledPair.State.OPEN, "", outcome.required
    if outcome.state == "resolved":
        pair.state, pair.resolved_label = PooledPair.State.RESOLVED, outcome.answer
    elif outcome.state == "disagreement":
        pair.state = PooledPair.State.DISAGREEMENT
    if (pair.state, pair.resolved_label) != was:
        pair.resolved_at = now if pair.state == PooledPair.State.RESOLVED else None
