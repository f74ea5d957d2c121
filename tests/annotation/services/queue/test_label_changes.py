"""Taking back an answer (issue 14 item 2): the label is rewritten, never duplicated, the change is
audited, and the pair's votes, resolution and queue flags stay what FIRE's rule says for the votes
as they now are."""
from __future__ import annotations

import random
import threading
from contextlib import contextmanager

import pytest
from django.db import connection

from annotation.models import Label, LabelChange, PooledPair
from annotation.services.queue.label_changes import answer_change, recent_answers
from annotation.services.queue.labels import LabelRefused, label_submit, pair_adjudicate
from annotation.services.pools.build import known_pairs_add
from annotation.services.queue.leases import item_id_for, lease_next
from annotation.services.accounts.raters import memberships_grant, rater_set_paused, training_reset
from annotation.services.reports.create import report_create
from tests.factories import make_pool_with_runs, make_rater

pytestmark = pytest.mark.django_db

ONE_PAIR = (("A", [("q1", ["v1"])]),)


def setup_pool(n_raters=3, **kwargs):
    pool, _ = make_pool_with_runs(**kwargs)
    raters = [make_rater() for _ in range(n_raters)]
    memberships_grant(pool=pool, users=raters)
    return pool, raters


def answer(rater, pool, value, **kwargs):
    lease = lease_next(pool=pool, rater=rater, **kwargs).lease
    label_submit(rater=rater, client_id=f"c-{lease.pk}", lease=lease.token, value=value, seconds=3.0)
    return lease.pair_id


def change(rater, pair_id, value, **kwargs):
    return answer_change(rater=rater, item_id=item_id_for("pair", pair_id), value=value, **kwargs)


@contextmanager
def override_min_watch(seconds):
    from django.conf import settings

    before = settings.REJUDGE
    settings.REJUDGE = {**before, "MIN_WATCH_SECONDS": seconds}
    try:
        yield
    finally:
        settings.REJUDGE = before


def pair_state(pair_id):
    p = PooledPair.objects.get(pk=pair_id)
    return p.state, p.resolved_label, p.vote_count, p.required_labels, p.available


def test_a_single_vote_pair_the_rater_resolved_is_re_resolved_with_the_new_answer():
    pool, (r1, *_) = setup_pool(runs=ONE_PAIR, depth=1)
    pair_id = answer(r1, pool, "relevant")
    assert pair_state(pair_id) == ("resolved", "relevant", 1, 1, False)
    label, audit = change(r1, pair_id, "not_relevant", comment="no dog in it")
    assert Label.objects.filter(pair_id=pair_id).count() == 1  # replaced, not duplicated
    assert (label.value, label.comment, label.counted, label.sequence) == ("not_relevant", "no dog in it", True, 1)
    assert (audit.old_value, audit.new_value, audit.old_comment, audit.new_comment, audit.changed_by) == (
        "relevant", "not_relevant", "", "no dog in it", r1)
    assert pair_state(pair_id) == ("resolved", "not_relevant", 1, 1, False)


def test_two_agreeing_votes_that_now_disagree_reopen_the_pair_for_a_third():
    # Needs 2: r1 relevant, r2 relevant -> resolved relevant. r1 changes to not_relevant: votes
    # {relevant, not_relevant}, no strict majority of 2 (1*2 > 2 is false), fewer than 3 votes ->
    # required 3, open, and available (0 leases < 3 - 2 needed).
    pool, (r1, r2, r3) = setup_pool(runs=ONE_PAIR, depth=1, redundancy=1.0)
    pair_id = answer(r1, pool, "relevant")
    answer(r2, pool, "relevant")
    assert pair_state(pair_id) == ("resolved", "relevant", 2, 2, False)
    change(r1, pair_id, "not_relevant")
    assert pair_state(pair_id) == ("open", "", 2, 3, True)
    assert PooledPair.objects.get(pk=pair_id).resolved_at is None
    # The third rater now gets it, and their vote decides: {N, R, N} -> 2 of 3 -> not_relevant.
    assert answer(r3, pool, "not_relevant") == pair_id
    assert pair_state(pair_id) == ("resolved", "not_relevant", 3, 3, False)


def test_a_change_that_makes_two_disagreeing_votes_agree_resolves_without_the_third():
    # Needs 2: r1 relevant, r2 not_relevant -> required 3 and r3 holds the pair. r1 changes to
    # not_relevant: {N, N} is a majority of the 2 the pair needs -> resolved not_relevant, required 2.
    pool, (r1, r2, r3) = setup_pool(runs=ONE_PAIR, depth=1, redundancy=1.0)
    pair_id = answer(r1, pool, "relevant")
    answer(r2, pool, "not_relevant")
    assert pair_state(pair_id) == ("open", "", 2, 3, True)
    held = lease_next(pool=pool, rater=r3).lease
    change(r1, pair_id, "not_relevant")
    assert pair_state(pair_id) == ("resolved", "not_relevant", 2, 2, False)
    # The holder's answer arrives after: stored as surplus, never a vote.
    late = label_submit(rater=r3, client_id="late", lease=held.token, value="relevant").label
    assert not late.counted and pair_state(pair_id)[:3] == ("resolved", "not_relevant", 2)


def test_the_first_of_two_votes_changes_while_the_pair_waits_for_the_second():
    pool, (r1, r2, _) = setup_pool(runs=ONE_PAIR, depth=1, redundancy=1.0)
    pair_id = answer(r1, pool, "relevant")
    change(r1, pair_id, "not_relevant")
    assert pair_state(pair_id) == ("open", "", 1, 2, True)
    answer(r2, pool, "not_relevant")
    assert pair_state(pair_id) == ("resolved", "not_relevant", 2, 2, False)


def test_a_changed_vote_can_change_again_and_each_change_is_audited():
    pool, (r1, *_) = setup_pool(runs=ONE_PAIR, depth=1)
    pair_id = answer(r1, pool, "relevant")
    change(r1, pair_id, "not_relevant")
    change(r1, pair_id, "relevant")
    trail = list(LabelChange.objects.filter(label__pair_id=pair_id).values_list("old_value", "new_value"))
    assert trail == [("relevant", "not_relevant"), ("not_relevant", "relevant")]
    assert pair_state(pair_id)[:2] == ("resolved", "relevant")


def test_an_ambiguous_answer_taken_back_as_a_vote_leaves_adjudication_and_counts():
    pool, (r1, *_) = setup_pool(runs=ONE_PAIR, depth=1)
    pair_id = answer(r1, pool, "ambiguous")
    assert pair_state(pair_id)[:3] == ("adjudication", "", 0)
    label, audit = change(r1, pair_id, "relevant", comment="")
    assert (label.value, label.counted, label.sequence) == ("relevant", True, 1)
    assert (audit.old_value, audit.new_value) == ("ambiguous", "relevant")
    assert pair_state(pair_id) == ("resolved", "relevant", 1, 1, False)
    assert Label.objects.filter(pair_id=pair_id).count() == 1


def test_a_vote_taken_back_as_ambiguous_uncounts_it_and_sends_the_pair_to_an_admin():
    pool, (r1, *_) = setup_pool(runs=ONE_PAIR, depth=1)
    pair_id = answer(r1, pool, "relevant")
    label, audit = change(r1, pair_id, "ambiguous", comment="the dog is half out of frame")
    assert (label.value, label.counted, label.comment) == ("ambiguous", False, "the dog is half out of frame")
    assert (audit.old_value, audit.new_value, audit.new_comment) == ("relevant", "ambiguous", "the dog is half out of frame")
    assert pair_state(pair_id)[:3] == ("adjudication", "", 0)
    assert PooledPair.objects.get(pk=pair_id).resolved_at is None
    # ... and back again: the pair leaves adjudication and the vote counts once more.
    change(r1, pair_id, "not_relevant")
    assert pair_state(pair_id) == ("resolved", "not_relevant", 1, 1, False)


def test_a_doesnt_play_report_taken_back_is_uncounted_and_the_vote_resolves():
    pool, (r1, *_) = setup_pool(runs=ONE_PAIR, depth=1)
    pair_id = answer(r1, pool, "broken")
    assert PooledPair.objects.get(pk=pair_id).broken_reports == 1
    change(r1, pair_id, "not_relevant")
    assert PooledPair.objects.get(pk=pair_id).broken_reports == 0
    assert pair_state(pair_id) == ("resolved", "not_relevant", 1, 1, False)


def test_a_report_that_set_the_pair_aside_reopens_it_when_taken_back():
    pool, (r1, *_) = setup_pool(runs=ONE_PAIR, depth=1, broken_reports_limit=1)
    pair_id = answer(r1, pool, "broken")
    assert pair_state(pair_id)[0] == "set_aside"
    change(r1, pair_id, "ambiguous", comment="it plays now but I cannot tell")
    pair = PooledPair.objects.get(pk=pair_id)
    assert (pair.state, pair.broken_reports) == ("adjudication", 0)


def test_a_vote_taken_back_as_doesnt_play_reopens_the_pair_for_others():
    pool, (r1, *_) = setup_pool(runs=ONE_PAIR, depth=1)
    pair_id = answer(r1, pool, "relevant")
    change(r1, pair_id, "broken")
    pair = PooledPair.objects.get(pk=pair_id)
    assert (pair.broken_reports, Label.objects.get(pair_id=pair_id).counted) == (1, False)
    assert pair_state(pair_id) == ("open", "", 0, 1, True)


def test_a_report_turned_vote_needs_the_clip_watched_since_the_lease():
    from datetime import timedelta

    pool, (r1, *_) = setup_pool(runs=ONE_PAIR, depth=1)
    pair_id = answer(r1, pool, "broken")
    lease = Label.objects.get(pair_id=pair_id).lease
    with override_min_watch(2.0):
        with pytest.raises(LabelRefused) as refused:
            change(r1, pair_id, "relevant", now=lease.created_at + timedelta(seconds=0.5))
        assert refused.value.code == "too_soon"
        change(r1, pair_id, "relevant", now=lease.created_at + timedelta(seconds=2.5))
    assert pair_state(pair_id)[:2] == ("resolved", "relevant")


def test_an_ambiguous_pair_an_admin_decided_is_closed():
    pool, (r1, *_) = setup_pool(runs=ONE_PAIR, depth=1)
    pair_id = answer(r1, pool, "ambiguous")
    pair_adjudicate(pair_id=pair_id, admin=None, label="not_relevant")
    with pytest.raises(LabelRefused) as refused:
        change(r1, pair_id, "relevant")
    assert refused.value.code == "closed"


def test_the_new_answer_must_be_one_a_rater_can_give():
    pool, (r1, *_) = setup_pool(runs=ONE_PAIR, depth=1)
    pair_id = answer(r1, pool, "relevant")
    with pytest.raises(LabelRefused) as refused:
        change(r1, pair_id, "maybe")
    assert refused.value.code == "invalid"


def test_a_report_made_after_the_answer_freezes_it():
    pool, (r1, *_) = setup_pool(runs=ONE_PAIR, depth=1)
    pair_id = answer(r1, pool, "relevant")
    report_create(pool=pool, kind="agreement")
    with pytest.raises(LabelRefused) as refused:
        change(r1, pair_id, "not_relevant")
    assert refused.value.code == "used_by_report"
    assert Label.objects.get(pair_id=pair_id).value == "relevant" and not LabelChange.objects.exists()
    (recent,) = recent_answers(rater=r1, pool_id=pool.pk)
    assert (recent.can_change, recent.why_not) == (False, "used_by_report")


def test_a_pair_an_admin_decided_is_closed():
    pool, (r1, *_) = setup_pool(runs=ONE_PAIR, depth=1)
    pair_id = answer(r1, pool, "relevant")
    pair_adjudicate(pair_id=pair_id, admin=None, label="not_relevant")
    with pytest.raises(LabelRefused) as refused:
        change(r1, pair_id, "not_relevant")
    assert refused.value.code == "closed"


def test_a_rater_can_change_only_their_own_answers():
    pool, (r1, r2, _) = setup_pool(runs=ONE_PAIR, depth=1)
    pair_id = answer(r1, pool, "relevant")
    for item in (item_id_for("pair", pair_id), "nonsense", ""):
        with pytest.raises(LabelRefused) as refused:
            answer_change(rater=r2, item_id=item, value="not_relevant")
        assert refused.value.code == "not_found"
    assert Label.objects.get(pair_id=pair_id).value == "relevant"


def test_a_paused_rater_cannot_change():
    pool, (r1, *_) = setup_pool(runs=ONE_PAIR, depth=1)
    pair_id = answer(r1, pool, "relevant")
    rater_set_paused(user=r1, paused=True)
    with pytest.raises(LabelRefused) as refused:
        change(r1, pair_id, "not_relevant")
    assert refused.value.code == "paused"


def test_a_rater_sent_back_to_training_cannot_change_pool_answers():
    """Undo must not walk around the training gate: pool and gold answers are refused to a rater
    who has not (again) passed training, as new answers are."""
    pool, (r1, *_) = setup_pool(training_pass_mark=0.5)
    known_pairs_add(pool=pool, items=[{"caption": "q1", "clip": "v1", "answer": "relevant", "role": "training"}])
    answer(r1, pool, "relevant")  # the training pair: passed
    pair_id = answer(r1, pool, "relevant")
    assert PooledPair.objects.get(pk=pair_id).role == "pool"
    training_reset(pool=pool, user=r1)
    with pytest.raises(LabelRefused) as refused:
        change(r1, pair_id, "not_relevant")
    assert refused.value.code == "training"
    assert Label.objects.get(pair_id=pair_id, rater=r1).value == "relevant"
    assert not LabelChange.objects.exists()


def test_training_answers_cannot_be_changed():
    pool, (r1, *_) = setup_pool(training_pass_mark=0.5)
    known_pairs_add(pool=pool, items=[{"caption": "q1", "clip": "v1", "answer": "relevant", "role": "training"}])
    pair_id = answer(r1, pool, "not_relevant")
    assert PooledPair.objects.get(pk=pair_id).role == "training"
    with pytest.raises(LabelRefused) as refused:
        change(r1, pair_id, "relevant")
    assert refused.value.code == "training_answer"


def test_changing_a_gold_answer_looks_like_changing_a_pool_answer():
    pool, (r1, *_) = setup_pool(gold_rate=1.0)
    known_pairs_add(pool=pool, items=[{"caption": "q2", "clip": "v1", "answer": "not_relevant", "role": "gold"}])
    gold_id = answer(r1, pool, "relevant", rng=random.Random(0))
    pool_id = answer(r1, pool, "relevant", rng=random.Random(0))
    assert PooledPair.objects.get(pk=gold_id).role == "gold" and PooledPair.objects.get(pk=pool_id).role == "pool"
    # Both listed alike, both changeable, both answered with the same fields.
    listed = {a.item_id: a for a in recent_answers(rater=r1, pool_id=pool.pk)}
    for pk in (gold_id, pool_id):
        assert (listed[item_id_for("pair", pk)].can_change, listed[item_id_for("pair", pk)].why_not) == (True, None)
    gold_label, _ = change(r1, gold_id, "not_relevant")
    pool_label, _ = change(r1, pool_id, "not_relevant")
    assert gold_label.value == pool_label.value == "not_relevant"
    gold = PooledPair.objects.get(pk=gold_id)
    assert (gold.vote_count, gold.available, gold.state) == (0, False, "open")  # gold never votes


def test_recent_answers_newest_first_with_caption_and_nothing_internal():
    pool, (r1, r2, _) = setup_pool(captions=2, clips=2, depth=2)
    first = answer(r1, pool, "relevant")
    second = answer(r1, pool, "not_relevant")
    answer(r2, pool, "relevant")  # someone else's: never listed
    change(r1, first, "not_relevant")
    listed = recent_answers(rater=r1, pool_id=pool.pk)
    assert [a.item_id for a in listed] == [item_id_for("pair", second), item_id_for("pair", first)]
    assert listed[1].value == "not_relevant" and listed[1].changed_at is not None and listed[0].changed_at is None
    assert listed[0].caption == PooledPair.objects.get(pk=second).caption.text
    with pytest.raises(LabelRefused):
        recent_answers(rater=make_rater(), pool_id=pool.pk)  # not a member


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_concurrent_changes_of_the_same_answer_queue_on_the_pair_lock():
    # Needs 2, r1 relevant + r2 relevant -> resolved. Two requests change r1's answer at once, to
    # not_relevant and back to relevant. Whatever their order, the trail chains (each change's old
    # value is the previous one's new value), the label ends on the last change's value, and the
    # pair is what the rule says for {that value, relevant}.
    pool, (r1, r2, _) = setup_pool(runs=ONE_PAIR, depth=1, redundancy=1.0)
    pair_id = answer(r1, pool, "relevant")
    answer(r2, pool, "relevant")
    barrier, errors = threading.Barrier(2), []

    def work(value):
        try:
            barrier.wait()
            change(r1, pair_id, value)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(v,)) for v in ("not_relevant", "relevant")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    trail = list(LabelChange.objects.filter(label__pair_id=pair_id).order_by("id").values_list("old_value", "new_value"))
    assert len(trail) == 2 and trail[0][0] == "relevant" and trail[1][0] == trail[0][1]
    final = Label.objects.get(pair_id=pair_id, rater=r1).value
    assert final == trail[1][1] and Label.objects.filter(pair_id=pair_id).count() == 2
    expected = ("resolved", "relevant", 2, 2, False) if final == "relevant" else ("open", "", 2, 3, True)
    assert pair_state(pair_id) == expected
