"""The pool's gold rule on hand-made raters: a spammer is paused after the configured number of
gold answers, a careful rater is not; setting labels aside recomputes the pairs they counted on."""
from __future__ import annotations

import random

import pytest

from annotation.models import Label, PooledPair, QualityAction, RaterProfile
from annotation.services.crowd.studies import StudyInvalid, quality_rule_save, quality_rule_warnings
from annotation.services.queue.labels import LabelRefused
from annotation.services.accounts.raters import memberships_grant
from tests.annotation.services.crowd.crowd_world import crowd_pool
from tests.factories import label_pair, make_rater

pytestmark = pytest.mark.django_db

MIN_GOLD, THRESHOLD = 6, 0.7


def gold_pairs(pool):
    return list(PooledPair.objects.filter(pool=pool, role="gold").order_by("queue_order", "pk"))


def paused(rater) -> bool:
    return RaterProfile.objects.get(user=rater).paused


def other(answer: str) -> str:
    return "not_relevant" if answer == "relevant" else "relevant"


@pytest.fixture
def pool():
    pool = crowd_pool(gold=12, training=0)
    quality_rule_save(pool=pool, min_gold_answers=MIN_GOLD, min_gold_accuracy=THRESHOLD)
    return pool


def test_spammer_is_paused_once_enough_gold_answers_are_wrong_enough(pool):
    spammer = make_rater()
    memberships_grant(pool=pool, users=[spammer])
    rng = random.Random(3)
    right = 0
    for answered, pair in enumerate(gold_pairs(pool), start=1):
        value = rng.choice(["relevant", "not_relevant"])
        right += value == pair.known_answer
        label_pair(spammer, pair, value)
        # The rule, written out: never before MIN_GOLD answers; then as soon as the share is low.
        should_pause = answered >= MIN_GOLD and right / answered < THRESHOLD
        assert paused(spammer) == should_pause, (answered, right)
        if should_pause:
            break
    assert paused(spammer), "a coin-flipping rater must fall below 70% within 12 gold answers"
    action = QualityAction.objects.get(pool=pool, rater=spammer)
    assert (action.gold_answers, action.gold_correct, action.threshold) == (answered, right, THRESHOLD)
    # Paused: the next answer is refused.
    remaining = gold_pairs(pool)[answered]
    with pytest.raises(LabelRefused) as refused:
        label_pair(spammer, remaining, "relevant")
    assert refused.value.code == "paused"


def test_careful_rater_is_not_paused(pool):
    careful = make_rater()
    memberships_grant(pool=pool, users=[careful])
    for n, pair in enumerate(gold_pairs(pool)):
        # One slip in twelve (the third answer): 11/12 = 0.92, and 2/3 before the rule may act.
        label_pair(careful, pair, other(pair.known_answer) if n == 2 else pair.known_answer)
    assert not paused(careful)
    assert not QualityAction.objects.filter(rater=careful).exists()


def test_exactly_at_the_threshold_is_not_below_it(pool):
    rater = make_rater()
    memberships_grant(pool=pool, users=[rater])
    quality_rule_save(pool=pool, min_gold_answers=10, min_gold_accuracy=0.7)
    for n, pair in enumerate(gold_pairs(pool)[:10]):
        label_pair(rater, pair, other(pair.known_answer) if n in (0, 1, 2) else pair.known_answer)
    assert not paused(rater)  # 7/10 = 0.7 is not below 0.7


def test_disabled_rule_does_nothing(pool):
    quality_rule_save(pool=pool, enabled=False)
    rater = make_rater()
    memberships_grant(pool=pool, users=[rater])
    for pair in gold_pairs(pool):
        label_pair(rater, pair, other(pair.known_answer))
    assert not paused(rater)


def test_set_aside_labels_reopen_the_pairs_they_decided(pool):
    quality_rule_save(pool=pool, set_aside_labels=True)
    spammer, careful, second = make_rater(), make_rater(), make_rater()
    memberships_grant(pool=pool, users=[spammer, careful, second])
    single, double, agreed = list(PooledPair.objects.filter(pool=pool, role="pool").order_by("pk")[:3])
    PooledPair.objects.filter(pk__in=[double.pk, agreed.pk]).update(required_labels=2)
    # single: one vote, the spammer's: resolved by it alone.
    label_pair(spammer, single, "relevant")
    # double: careful says relevant, the spammer not relevant -> a third vote is asked for.
    label_pair(careful, double, "relevant")
    label_pair(spammer, double, "not_relevant")
    # agreed: careful and second agree; the spammer's later vote is surplus (not counted).
    label_pair(careful, agreed, "relevant")
    label_pair(second, agreed, "relevant")
    label_pair(spammer, agreed, "relevant")
    for pair in (single, double, agreed):
        pair.refresh_from_db()
    assert (single.state, single.resolved_label, single.vote_count) == ("resolved", "relevant", 1)
    assert (double.state, double.required_labels, double.vote_count) == ("open", 3, 2)
    assert (agreed.state, agreed.vote_count) == ("resolved", 2)

    for pair in gold_pairs(pool):
        label_pair(spammer, pair, other(pair.known_answer))
        if paused(spammer):
            break
    action = QualityAction.objects.get(rater=spammer)
    # Two of the spammer's labels were counted (single, double); the one on `agreed` was surplus.
    assert action.labels_set_aside == 2
    for pair in (single, double, agreed):
        pair.refresh_from_db()
    # single: no vote left -> open and back in the queue.
    assert (single.state, single.resolved_label, single.vote_count, single.resolved_at) == ("open", "", 0, None)
    assert single.available
    # double: careful's vote alone, the pair's own requirement of 2 again -> open, needs one more.
    assert (double.state, double.required_labels, double.vote_count, double.available) == ("open", 2, 1, True)
    assert list(Label.objects.filter(pair=double, counted=True).values_list("rater_id", "sequence")) == [(careful.pk, 1)]
    # agreed: untouched.
    assert (agreed.state, agreed.resolved_label, agreed.vote_count) == ("resolved", "relevant", 2)
    assert action.pairs_reopened == 1  # `double` was already in the queue, waiting for a third vote
    kept = Label.objects.filter(rater=spammer, pair__role="pool")
    assert kept.count() == 3  # every label is kept, only uncounted
    assert set(kept.filter(counted=False, surplus_reason=Label.SET_ASIDE_REASON).values_list("pair_id", flat=True)) == {single.pk, double.pk}


def test_rule_settings_are_checked(pool):
    with pytest.raises(StudyInvalid) as bad:
        quality_rule_save(pool=pool, min_gold_accuracy=1.5)
    assert bad.value.field == "min_gold_accuracy"
    with pytest.raises(StudyInvalid) as bad:
        quality_rule_save(pool=pool, min_gold_answers=0)
    assert bad.value.field == "min_gold_answers"


# A rule that can never act is said to be so, with the numbers (issue 39: "after 3 gold answers"
# was saved on a pool with 2 gold pairs, and nothing said it would never pause anyone).

def test_a_rule_after_more_gold_answers_than_gold_pairs_is_warned_of_with_the_numbers():
    two = crowd_pool(gold=2, training=0, gold_rate=0.2)  # gold reaches raters
    rule = quality_rule_save(pool=two, min_gold_answers=3, min_gold_accuracy=0.7)
    assert quality_rule_warnings(pool=two, rule=rule) == [
        "the pool has 2 gold pairs, so a rater gives at most 2 gold answers: the rule (after 3) never applies; "
        "set it to at most 2, or add gold pairs"]
    rule = quality_rule_save(pool=two, min_gold_answers=2)
    assert quality_rule_warnings(pool=two, rule=rule) == []  # two answers are possible: it can act
    rule = quality_rule_save(pool=two, min_gold_answers=3, enabled=False)
    assert quality_rule_warnings(pool=two, rule=rule) == []  # off: nothing to warn of


def test_a_rule_on_a_pool_without_gold_pairs_is_warned_of():
    none = crowd_pool(gold=0, training=0)
    rule = quality_rule_save(pool=none, min_gold_answers=5)
    assert quality_rule_warnings(pool=none, rule=rule) == [
        "the pool has no gold pairs: the rule (after 5 gold answers) never applies until gold pairs are added"]


def test_the_api_and_the_pool_page_say_it(client):
    from rest_framework.test import APIClient

    from tests.factories import make_user

    two = crowd_pool(gold=2, training=0, gold_rate=0.2)
    admin = make_user("admin")
    api = APIClient()
    api.force_authenticate(admin)
    saved = api.put(f"/api/v1/pools/{two.pk}/quality-rule/", {"min_gold_answers": 3}, format="json")
    assert saved.status_code == 200
    assert saved.json()["warnings"] == [
        "the pool has 2 gold pairs, so a rater gives at most 2 gold answers: the rule (after 3) never applies; "
        "set it to at most 2, or add gold pairs"]
    assert api.get(f"/api/v1/pools/{two.pk}/quality-rule/").json()["warnings"] == saved.json()["warnings"]
    assert api.put(f"/api/v1/pools/{two.pk}/quality-rule/", {"min_gold_answers": 2},
                   format="json").json()["warnings"] == []
    api.put(f"/api/v1/pools/{two.pk}/quality-rule/", {"min_gold_answers": 3}, format="json")
    client.force_login(admin)
    page = client.get(f"/admin-ui/pools/{two.pk}/").content.decode()
    assert "Saved, but the pool has 2 gold pairs, so a rater gives at most 2 gold answers" in page
