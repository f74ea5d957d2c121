"""A pool's quality rule on gold answers, run in the transaction of every gold answer.

After `min_gold_answers` gold answers (relevant / not relevant; "ambiguous" and "doesn't play"
are not answers to grade), a rater whose share of right answers is below `min_gold_accuracy` is
paused, and with `set_aside_labels` their pool labels stop counting.

Scope of the pause: the account (RaterProfile.paused), the only pause the queue, the label and
answer-change services and the ranking studies know. A crowd worker's account belongs to one
study, so for them this is the study's pause; a staff rater failing one pool's gold is stopped
everywhere until an admin looks (the QualityAction row says which pool and on what figures, and
the raters page resumes them).

Setting labels aside: the rater's counted labels in the pool become uncounted (kept, with the
reason), and each pair they counted on is recomputed from the votes left, by FIRE's rule as
labels.py `_resolve` applies it (the pair's own requirement of 1 or 2 votes; a strict majority
resolves; two disagreeing votes ask for a third): a pair short of votes goes back to the queue.
Pairs are locked in id order (pair before lease, as everywhere), so two rules firing at once for
two raters cannot deadlock. A pair an admin decided, or one waiting in adjudication or set aside
(clip does not play), keeps its state: only its counts change.
"""
from __future__ import annotations


from django.db.models import Count, F, Q
from django.utils import timezone

from annotation.analysis.rater_quality import fails_gold_rule
from annotation.analysis.votes import base_requirement, resolve_votes
from annotation.models import Label, Lease, PooledPair, QualityAction, QualityRule, RaterProfile
from annotation.services.queue.leases import lease_release, refresh_pair_flags

REOPENABLE = (PooledPair.State.OPEN, PooledPair.State.RESOLVED, PooledPair.State.DISAGREEMENT)
PAIR_SAVE_FIELDS = ["vote_count", "required_labels", "state", "resolved_label", "resolved_at", "active_leases",
                    "available", "priority"]


def gold_tally(*, pool_id: int, rater_id: int) -> tuple[int, int]:
    """(gold answers, right ones) of the rater in the pool."""
    row = Label.objects.filter(rater_id=rater_id, pair__pool_id=pool_id, pair__role=PooledPair.Role.GOLD,
                               value__in=Label.VOTES).aggregate(
        n=Count("id"), right=Count("id", filter=Q(value=F("pair__known_answer"))))
    return row["n"], row["right"]


def quality_rule_after_answer(*, pool_id: int, rater, is_gold: bool, now=None) -> QualityAction | None:
    """Called by label_submit in the answer's transaction for pool and gold answers alike (so a
    gold answer takes the same statements as any other): applies the pool's rule when the answer
    was a gold one. Returns the action taken, if any."""
    rule = QualityRule.objects.filter(pool_id=pool_id, enabled=True).first()
    if rule is None:
        return None
    answers, right = gold_tally(pool_id=pool_id, rater_id=rater.pk)
    if not is_gold or not fails_gold_rule(gold_answers=answers, gold_correct=right, min_gold_answers=rule.min_gold_answers,
                                          min_accuracy=rule.min_gold_accuracy):
        return None
    profile = RaterProfile.objects.select_for_update().filter(user=rater).first()
    if profile is None or profile.paused:
        return None  # already paused (by an admin or an earlier rule): nothing more to do
    now = now or timezone.now()
    profile.paused = True
    profile.save(update_fields=["paused"])
    action = QualityAction(pool_id=pool_id, rater=rater, gold_answers=answers, gold_correct=right,
                           threshold=rule.min_gold_accuracy)
    # Every pair this touches is locked first, in id order, so that two rules firing at once
    # (for two raters who share pairs) queue instead of deadlocking.
    held = Lease.objects.filter(rater=rater, state=Lease.State.ACTIVE)
    touched = set(held.values_list("pair_id", flat=True))
    if rule.set_aside_labels:
        touched |= set(_counted_pair_ids(pool_id, rater))
    list(PooledPair.objects.select_for_update().filter(pk__in=touched).order_by("pk").values_list("pk", flat=True))
    # A paused rater's held pairs would otherwise wait for their lease to run out.
    for token in Lease.objects.filter(rater=rater, state=Lease.State.ACTIVE).order_by("pair_id").values_list("token", flat=True):
        lease_release(token=token, rater=rater, now=now)
    if rule.set_aside_labels:
        action.labels_set_aside, action.pairs_reopened = rater_labels_set_aside(pool_id=pool_id, rater=rater, now=now)
    action.save()
    return action


def _counted_pair_ids(pool_id: int, rater) -> list[int]:
    return sorted(Label.objects.filter(rater=rater, pair__pool_id=pool_id, pair__role=PooledPair.Role.POOL,
                                       counted=True).values_list("pair_id", flat=True))


def rater_labels_set_aside(*, pool_id: int, rater, now=None) -> tuple[int, int]:
    """The rater's counted labels in the pool stop counting; their pairs are recomputed. Call
    inside a transaction. Returns (labels set aside, pairs that went back to the queue)."""
    now = now or timezone.now()
    pair_ids = _counted_pair_ids(pool_id, rater)
    labels = reopened = 0
    for pair_id in pair_ids:
        pair = PooledPair.objects.select_for_update().get(pk=pair_id)
        labels += Label.objects.filter(pair=pair, rater=rater, counted=True).update(
            counted=False, sequence=0, surplus_reason=Label.SET_ASIDE_REASON)
        was_open = pair.available
        _recount(pair, now)
        refresh_pair_flags(pair)
        pair.save(update_fields=PAIR_SAVE_FIELDS)
        reopened += pair.available and not was_open
    return labels, reopened


def _recount(pair: PooledPair, now) -> None:
    votes = list(Label.objects.filter(pair=pair, counted=True).order_by("sequence", "id"))
    for position, label in enumerate(votes, start=1):
        if label.sequence != position:
            Label.objects.filter(pk=label.pk).update(sequence=position)
    pair.vote_count = len(votes)
    if pair.resolved_by_admin or pair.state not in REOPENABLE:
        return
    was = (pair.state, pair.resolved_label, pair.resolved_at)
    pair.state, pair.resolved_label, pair.resolved_at = PooledPair.State.OPEN, "", None
    outcome = resolve_votes([label.value for label in votes], base_requirement(pair.required_labels))
    pair.required_labels = outcome.required
    if outcome.state == "resolved":
        # A pair whose answer stands keeps the time it was first resolved.
        pair.state, pair.resolved_label = PooledPair.State.RESOLVED, outcome.answer
        pair.resolved_at = was[2] if was[:2] == (pair.state, outcome.answer) else now
    elif outcome.state == "disagreement":
        pair.state = PooledPair.State.DISAGREEMENT
