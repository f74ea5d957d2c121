"""The FIRE workflow rules: leases, assignment order, redundancy, resolution, escalation,
broken clips, surplus labels, idempotency, training and gold."""
from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone

from annotation.models import Label, Lease, PooledPair, PoolMembership
from annotation.services.queue.labels import LabelRefused, label_submit, pair_adjudicate, pair_requeue
from annotation.services.pools.build import known_pairs_add
from annotation.services.queue.leases import LeaseGone, lease_next, lease_release, lease_renew, leases_expire
from annotation.services.accounts.raters import memberships_grant, rater_set_paused, training_reset
from tests.factories import make_pool_with_runs, make_rater

pytestmark = pytest.mark.django_db


def setup_pool(n_raters=3, **kwargs):
    pool, runs = make_pool_with_runs(**kwargs)
    raters = [make_rater() for _ in range(n_raters)]
    memberships_grant(pool=pool, users=raters)
    return pool, raters


def judge(rater, lease, value="relevant", client_id=None, **kwargs):
    return label_submit(rater=rater, client_id=client_id or f"c-{lease.pk}-{rater.pk}", lease=lease.token,
                        value=value, seconds=3.5, **kwargs)


def pair_of(lease):
    return PooledPair.objects.get(pk=lease.pair_id)


def test_single_label_resolves_a_pair():
    pool, (r1, *_) = setup_pool()
    lease = lease_next(pool=pool, rater=r1).lease
    result = judge(r1, lease, "relevant")
    assert result.created and result.label.counted and result.label.sequence == 1 and result.feedback is None
    pair = pair_of(lease)
    assert (pair.state, pair.resolved_label, pair.vote_count, pair.active_leases, pair.available) == (
        "resolved", "relevant", 1, 0, False)
    assert Lease.objects.get(pk=lease.pk).state == "completed"


def test_double_labelled_pair_needs_two_different_raters_and_a_third_on_disagreement():
    pool, (r1, r2, r3) = setup_pool(redundancy=1.0, captions=1, clips=3, depth=1,
                                    runs=(("A", [("q1", ["v1"])]),))
    l1 = lease_next(pool=pool, rater=r1).lease
    assert lease_next(pool=pool, rater=r2).lease.pair_id == l1.pair_id  # a second holder is allowed (needs 2)
    assert lease_next(pool=pool, rater=r3).reason == "no_work_left"  # but not a third: 2 leases = 2 needed
    judge(r1, l1, "relevant")
    l2 = Lease.objects.get(rater=r2, state="active")
    judge(r2, l2, "not_relevant")
    pair = pair_of(l1)
    assert (pair.state, pair.required_labels, pair.vote_count, pair.available) == ("open", 3, 2, True)
    assert lease_next(pool=pool, rater=r1).reason == "no_work_left"  # r1 labelled it already
    l3 = lease_next(pool=pool, rater=r3).lease
    judge(r3, l3, "not_relevant")
    pair.refresh_from_db()
    assert (pair.state, pair.resolved_label) == ("resolved", "not_relevant")
    assert list(Label.objects.filter(pair=pair).order_by("sequence").values_list("sequence", flat=True)) == [1, 2, 3]


def test_agreeing_double_labels_resolve_without_a_third():
    pool, (r1, r2, _) = setup_pool(redundancy=1.0, runs=(("A", [("q1", ["v1"])]),), depth=1)
    judge(r1, lease_next(pool=pool, rater=r1).lease, "relevant")
    lease = lease_next(pool=pool, rater=r2).lease
    judge(r2, lease, "relevant")
    pair = pair_of(lease)
    assert (pair.state, pair.required_labels) == ("resolved", 2)


def test_started_pairs_come_first_then_seeded_order():
    pool, (r1, r2, _) = setup_pool(redundancy=1.0, captions=4, clips=6, depth=2)
    expected = list(PooledPair.objects.filter(pool=pool).order_by("queue_order").values_list("pk", flat=True))
    first = lease_next(pool=pool, rater=r1).lease
    assert first.pair_id == expected[0]
    judge(r1, first)
    # r2 gets the started pair (it has a label and needs one more) before the fresh ones
    assert lease_next(pool=pool, rater=r2).lease.pair_id == expected[0]
    assert lease_next(pool=pool, rater=r2, exclude_leases=[Lease.objects.get(rater=r2).token]).lease.pair_id == expected[1]


def test_held_pairs_come_back_and_at_most_two_are_held():
    pool, (r1, *_) = setup_pool()
    a = lease_next(pool=pool, rater=r1).lease
    assert lease_next(pool=pool, rater=r1).lease.pk == a.pk  # a reloaded page resumes its pair
    b = lease_next(pool=pool, rater=r1, exclude_leases=[a.token]).lease
    assert b.pk != a.pk and b.pair_id != a.pair_id
    assert lease_next(pool=pool, rater=r1, exclude_leases=[a.token, b.token]).reason == "holding_max"


def test_expired_leases_return_pairs_to_the_queue():
    pool, (r1, r2, _) = setup_pool(runs=(("A", [("q1", ["v1"])]),), depth=1)
    lease = lease_next(pool=pool, rater=r1).lease
    assert lease_next(pool=pool, rater=r2).reason == "no_work_left"
    later = timezone.now() + timedelta(seconds=pool.lease_seconds + 1)
    # lazily at assignment (at most every few seconds per pool; clearing the cache stands for that wait):
    cache.clear()
    assert lease_next(pool=pool, rater=r2, now=later).lease.pair_id == lease.pair_id
    assert Lease.objects.get(pk=lease.pk).state == "expired"
    assert pair_of(lease).active_leases == 1


def test_periodic_expiry_and_heartbeat():
    pool, (r1, *_) = setup_pool(runs=(("A", [("q1", ["v1"])]),), depth=1)
    lease = lease_next(pool=pool, rater=r1).lease
    renewed = lease_renew(token=lease.token, rater=r1, now=timezone.now() + timedelta(seconds=200))
    assert renewed.expires_at > lease.expires_at
    assert leases_expire(now=lease.expires_at + timedelta(seconds=1)) == 0  # renewed: not due yet
    assert leases_expire(now=renewed.expires_at + timedelta(seconds=1)) == 1
    with pytest.raises(LeaseGone) as gone:
        lease_renew(token=lease.token, rater=r1)
    assert gone.value.still_needed is True
    assert pair_of(lease).available


def test_late_label_is_accepted_if_the_pair_still_needs_it():
    pool, (r1, *_) = setup_pool(runs=(("A", [("q1", ["v1"])]),), depth=1)
    lease = lease_next(pool=pool, rater=r1).lease
    leases_expire(now=lease.expires_at + timedelta(seconds=1))
    result = judge(r1, lease, "relevant")
    assert result.label.counted and pair_of(lease).state == "resolved"


def test_late_label_is_kept_as_surplus_when_the_pair_is_done():
    pool, (r1, r2, _) = setup_pool(runs=(("A", [("q1", ["v1"])]),), depth=1)
    lease1 = lease_next(pool=pool, rater=r1).lease
    leases_expire(now=lease1.expires_at + timedelta(seconds=1))
    judge(r2, lease_next(pool=pool, rater=r2).lease, "not_relevant")
    late = judge(r1, lease1, "relevant")
    assert late.created and not late.label.counted and "no longer needed" in late.label.surplus_reason
    pair = pair_of(lease1)
    assert (pair.vote_count, pair.resolved_label) == (1, "not_relevant")
    assert Label.objects.filter(pair=pair).count() == 2  # never silently dropped


def test_replay_returns_the_stored_label():
    pool, (r1, *_) = setup_pool()
    lease = lease_next(pool=pool, rater=r1).lease
    first = judge(r1, lease, "relevant", client_id="same")
    again = judge(r1, lease, "not_relevant", client_id="same")
    assert not again.created and again.label.pk == first.label.pk and again.label.value == "relevant"
    assert Label.objects.count() == 1
    with pytest.raises(LabelRefused) as refused:
        judge(r1, lease, "relevant", client_id="another")
    assert refused.value.code == "conflict"


def test_ambiguous_escalates_to_adjudication_with_the_comment():
    pool, (r1, r2, _) = setup_pool(runs=(("A", [("q1", ["v1"])]),), depth=1)
    lease = lease_next(pool=pool, rater=r1).lease
    result = judge(r1, lease, "ambiguous", comment="is a puppy a dog?")
    assert not result.label.counted
    pair = pair_of(lease)
    assert (pair.state, pair.vote_count, pair.available) == ("adjudication", 0, False)
    assert lease_next(pool=pool, rater=r2).reason == "no_work_left"
    assert Label.objects.get(pk=result.label.pk).comment == "is a puppy a dog?"
    decided = pair_adjudicate(pair_id=pair.pk, admin=None, label="relevant", note="puppies are dogs")
    assert (decided.state, decided.resolved_label, decided.resolved_by_admin) == ("resolved", "relevant", True)


def test_broken_clip_returns_to_others_and_is_set_aside_after_the_limit():
    pool, raters = setup_pool(n_raters=3, runs=(("A", [("q1", ["v1"])]),), depth=1, broken_reports_limit=2)
    r1, r2, r3 = raters
    lease = lease_next(pool=pool, rater=r1).lease
    judge(r1, lease, "broken")
    pair = pair_of(lease)
    assert (pair.state, pair.broken_reports, pair.available, pair.vote_count) == ("open", 1, True, 0)
    assert lease_next(pool=pool, rater=r1).reason == "no_work_left"  # not back to the same rater
    judge(r2, lease_next(pool=pool, rater=r2).lease, "broken")
    pair.refresh_from_db()
    assert (pair.state, pair.available) == ("set_aside", False)
    assert lease_next(pool=pool, rater=r3).reason == "no_work_left"
    requeued = pair_requeue(pair_id=pair.pk)
    assert (requeued.state, requeued.available) == ("open", True)
    assert lease_next(pool=pool, rater=r3).lease.pair_id == pair.pk


def test_release_gives_the_pair_back():
    pool, (r1, r2, _) = setup_pool(runs=(("A", [("q1", ["v1"])]),), depth=1)
    lease = lease_next(pool=pool, rater=r1).lease
    lease_release(token=lease.token, rater=r1)
    assert lease_next(pool=pool, rater=r2).lease.pair_id == lease.pair_id


def test_access_pause_and_membership():
    pool, (r1, *_) = setup_pool()
    outsider = make_rater()
    assert lease_next(pool=pool, rater=outsider).reason == "not_a_member"
    rater_set_paused(user=r1, paused=True)
    assert lease_next(pool=pool, rater=r1).reason == "paused"
    rater_set_paused(user=r1, paused=False)
    lease = lease_next(pool=pool, rater=r1).lease
    with pytest.raises(LabelRefused) as refused:  # another rater's lease is no lease at all
        label_submit(rater=outsider, client_id="x", lease=lease.token, value="relevant")
    assert refused.value.code == "not_found"
    PoolMembership.objects.filter(pool=pool, rater=r1).delete()
    with pytest.raises(LabelRefused) as refused:  # access taken away while the pair was held
        judge(r1, lease)
    assert refused.value.code == "forbidden" and not Label.objects.exists()


def test_training_queue_then_production_with_feedback():
    pool, (r1, r2, _) = setup_pool(training_pass_mark=0.5)
    known_pairs_add(pool=pool, items=[
        {"caption": "q1", "clip": "v1", "answer": "relevant", "role": "training", "explanation": "every element is present"},
        {"caption": "q1", "clip": "v4", "answer": "not_relevant", "role": "training", "explanation": "no dog"},
    ])
    first = lease_next(pool=pool, rater=r1)
    assert first.mode == "training"
    feedback = judge(r1, first.lease, "not_relevant").feedback
    assert feedback == {"correct": False, "answer": "relevant", "explanation": "every element is present"}
    second = lease_next(pool=pool, rater=r1)
    assert second.mode == "training"
    assert judge(r1, second.lease, "not_relevant").feedback["correct"] is True
    membership = PoolMembership.objects.get(pool=pool, rater=r1)
    assert (membership.training, membership.training_score) == ("passed", 0.5)
    assert lease_next(pool=pool, rater=r1).mode == "production"
    # a rater who fails stays out of production until an admin resets training
    for _ in range(2):
        judge(r2, lease_next(pool=pool, rater=r2).lease, "ambiguous")
    assert lease_next(pool=pool, rater=r2).reason == "training_failed"
    training_reset(pool=pool, user=r2)
    assert lease_next(pool=pool, rater=r2).mode == "training"


def test_gold_pairs_are_mixed_in_unannounced_and_not_counted_as_pool_pairs():
    pool, (r1, *_) = setup_pool(gold_rate=1.0)
    # Not a pool pair: gold that repeats an open pool pair is held back (test_attack_gates.py).
    known_pairs_add(pool=pool, items=[{"caption": "q2", "clip": "v1", "answer": "not_relevant", "role": "gold"}])
    assignment = lease_next(pool=pool, rater=r1, rng=random.Random(0))
    assert assignment.lease.pair.role == "gold" and assignment.mode == "production"
    result = judge(r1, assignment.lease, "relevant")
    assert result.feedback is None  # the answer is not revealed in production
    # once answered, the rater gets pool pairs again
    assert lease_next(pool=pool, rater=r1, rng=random.Random(0)).lease.pair.role == "pool"


def test_invalid_submissions():
    pool, (r1, *_) = setup_pool()
    lease = lease_next(pool=pool, rater=r1).lease
    for kwargs, code in [({"value": "maybe"}, "invalid"), ({"value": "relevant", "seconds": -1}, "invalid"),
                         ({"value": "relevant", "client_id": ""}, "invalid")]:
        with pytest.raises(LabelRefused) as refused:
            label_submit(rater=r1, client_id=kwargs.pop("client_id", "ok"), lease=lease.token, **kwargs)
        assert refused.value.code == code
    with pytest.raises(LabelRefused) as refused:
        label_submit(rater=r1, client_id="z", lease="no-such-lease", value="relevant")
    assert refused.value.code == "not_found"


def test_only_raters_get_pool_access_and_a_refused_list_grants_nobody():
    from annotation.services.accounts.raters import memberships_grant
    from tests.factories import make_pool_with_runs, make_rater, make_user

    pool, _ = make_pool_with_runs()
    rater, researcher = make_rater(), make_user("researcher")
    with pytest.raises(ValueError, match=f"'{researcher.username}' is not a rater"):
        memberships_grant(pool=pool, users=[rater, researcher])
    assert not PoolMembership.objects.filter(pool=pool).exists()
    assert memberships_grant(pool=pool, users=[rater]) == 1
    assert memberships_grant(pool=pool, users=[rater]) == 0


def test_a_refused_answer_leaves_its_lease_live_and_a_replay_changes_nothing():
    # On PostgreSQL one statement ends the lease and reads the earlier labels before the rules
    # are checked (issue 40): a refusal or a replay must roll the lease back with the rest.
    from tests.annotation.services.queue.test_label_changes import override_min_watch

    pool, (r1, *_) = setup_pool()
    lease = lease_next(pool=pool, rater=r1).lease
    with override_min_watch(2.0):
        with pytest.raises(LabelRefused) as refused:
            judge(r1, lease, "relevant", client_id="early", now=lease.created_at + timedelta(seconds=0.5))
        assert refused.value.code == "too_soon"
        lease.refresh_from_db()
        assert (lease.state, lease.ended_at) == ("active", None)
        assert pair_of(lease).active_leases == 1
        first = judge(r1, lease, "relevant", client_id="late", now=lease.created_at + timedelta(seconds=2.5))
    lease.refresh_from_db()
    assert first.created and first.label.lease_id == lease.pk and lease.state == "completed"
    # A live lease of the rater's on the same pair (made here: the queue never hands a labelled pair
    # back): a replay of the answer returns the stored label and leaves that lease live.
    live = Lease.objects.create(pair_id=lease.pair_id, rater=r1, expires_at=timezone.now() + timedelta(minutes=5))
    again = judge(r1, lease, "not_relevant", client_id="late")
    assert not again.created and again.label.pk == first.label.pk and Label.objects.count() == 1
    live.refresh_from_db()
    assert (live.state, live.ended_at) == ("active", None)
