"""Settings that depend on other settings are checked, with the numbers (issue 39: "a gold rule that
can never fire is saved", and so was every other setting that could not act). The pool has, by
hand: 4 captions, runs A and B ranking 3 clips each with one clip shifted, so each caption has 4
pairs and the pool 16 (tests/factories.py make_pool_with_runs)."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from annotation.models import PoolMembership, PooledPair
from annotation.services.crowd.studies import quality_rule_save, study_save
from annotation.services.pools.build import known_pairs_add
from annotation.services.pools.settings_checks import pool_settings_warnings
from tests.factories import make_pool_with_runs, make_rater, make_user

pytestmark = pytest.mark.django_db


def pool_with(**options):
    pool, _ = make_pool_with_runs(**options)
    assert PooledPair.objects.filter(pool=pool, role="pool").count() == 16  # the hand count above
    return pool


def members(pool, n):
    for _ in range(n):
        PoolMembership.objects.create(pool=pool, rater=make_rater())


def gold(pool, n):
    known_pairs_add(pool=pool, items=[{"caption": f"q{q}", "clip": "v6" if q != 5 else "v1", "answer": "relevant",
                                       "role": "gold"} for q in range(1, n + 1)])


def test_nothing_is_said_of_settings_that_can_act():
    pool = pool_with(redundancy=0.0)
    members(pool, 3)
    assert pool_settings_warnings(pool=pool) == []


def test_a_second_label_with_one_rater_and_a_third_with_two_are_said():
    pool = pool_with(redundancy=1.0, broken_reports_limit=1)
    assert pool_settings_warnings(pool=pool) == []  # no rater yet: every pool starts so
    members(pool, 1)
    assert pool_settings_warnings(pool=pool) == [
        "redundancy 1 asks two labels of 16 pairs, but only 1 rater can judge the pool: those pairs never finish; "
        "add a second rater, or set redundancy 0"]
    members(pool, 1)
    assert pool_settings_warnings(pool=pool) == [
        "two labels that disagree ask for a third rater, but only 2 raters can judge the pool: such a pair of the "
        "16 pairs labelled twice waits for an admin's decision; add a third rater"]
    members(pool, 1)
    assert pool_settings_warnings(pool=pool) == []


def test_an_open_crowd_study_without_a_cap_brings_enough_raters_and_one_with_places_counts_them():
    pool = pool_with(redundancy=1.0, broken_reports_limit=1)
    members(pool, 1)
    study = study_save(pool=pool, platform="prolific", title="t", completion_code="C0DE", quota_pairs=5,
                       consent_text="I agree.", training_required=False)
    assert pool_settings_warnings(pool=pool) == []
    study_save(pool=pool, places=1)
    assert pool_settings_warnings(pool=pool)[0].startswith("two labels that disagree ask for a third rater, but only "
                                                           "2 raters can judge the pool")
    study_save(pool=pool, is_open=False)
    assert pool_settings_warnings(pool=pool)[0].startswith("redundancy 1 asks two labels of 16 pairs, but only 1 rater")
    assert study.pk


def test_a_broken_clip_limit_beyond_the_raters_is_said():
    pool = pool_with(broken_reports_limit=3)
    members(pool, 2)
    assert pool_settings_warnings(pool=pool) == [
        "a clip is set aside after 3 reports that it doesn't play, but only 2 raters can judge the pool (each "
        "reports a pair once): a broken clip stays in the queue; set the limit to at most 2, or add raters"]
    get_user_model().objects.filter(memberships__pool=pool).update(is_active=False)
    members(pool, 3)  # the two disabled raters do not count; three active ones do
    assert pool_settings_warnings(pool=pool) == []


def test_a_gold_rate_without_gold_pairs_and_gold_pairs_without_a_rate_are_said():
    pool = pool_with(gold_rate=0.05)
    assert pool_settings_warnings(pool=pool) == [
        "gold rate 0.05, but the pool has no gold pairs: none is shown; attach some (build_pool --known-pairs, "
        "or Gold and training pairs on the pool page)"]
    gold(pool, 2)
    assert pool_settings_warnings(pool=pool) == []
    pool.gold_rate = 0
    pool.save()
    assert pool_settings_warnings(pool=pool) == [
        "the pool has 2 gold pairs, but its gold rate is 0: raters never see them; set a gold rate"]


def test_a_gold_rule_on_a_pool_whose_gold_rate_is_zero_is_said():
    pool = pool_with(gold_rate=0.0)
    gold(pool, 3)
    rule = quality_rule_save(pool=pool, min_gold_answers=2)
    assert ("the pool's gold rate is 0, so no gold pair reaches a rater: the rule (after 2 gold answers) never "
            "applies; set a gold rate") in pool_settings_warnings(pool=pool)
    assert rule.pk


def test_a_warm_up_as_deep_as_the_pool_leaves_an_adaptive_strategy_nothing_to_choose():
    pool = pool_with(judging={"strategy": "bandit", "warmup_depth": 3})
    assert pool_settings_warnings(pool=pool) == [
        "warmup_depth 3 covers the whole pool (depth 3): every pair is judged in the warm-up and bandit never "
        "chooses; set it below 3"]
    assert pool_settings_warnings(pool=pool_with(judging={"strategy": "bandit", "warmup_depth": 2})) == []
    # pool_order judges every pair anyway: a deep warm-up only orders it shallow first
    assert pool_settings_warnings(pool=pool_with(judging={"warmup_depth": 3})) == []


def test_a_top_stratum_as_deep_as_the_pool_samples_nothing():
    pool = pool_with(judging={"strategy": "sampled", "sample_rate": 0.5, "top_stratum_depth": 3})
    assert pool_settings_warnings(pool=pool) == [
        "top_stratum_depth 3 covers the whole pool (depth 3): every pair is judged and sample_rate 0.5 samples "
        "nothing; set it below 3"]


def test_settings_of_another_strategy_are_said_to_be_ignored():
    pool = pool_with(judging={"strategy": "shallow_first", "sample_rate": 0.5, "bandit_variant": "thompson"})
    assert pool_settings_warnings(pool=pool) == [
        "bandit_variant, sample_rate are ignored under the shallow_first strategy"]
    assert pool_settings_warnings(pool=pool_with(judging={"strategy": "bandit", "bandit_variant": "thompson"})) == []


def test_budgets_and_stopping_rules_that_can_never_stop_are_said():
    pool = pool_with(judging={"query_budget": 4, "stop_misses_in_a_row": 5, "pool_budget": 16})
    assert pool_settings_warnings(pool=pool) == [
        "query_budget 4 is at least the largest query's 4 pairs: it never stops a query",
        "stop_misses_in_a_row 5 is more than the largest query's 4 pairs: it never stops a query",
        "pool_budget 16 is at least the pool's 16 pairs: it never stops the pool"]
    assert pool_settings_warnings(pool=pool_with(judging={"query_budget": 3, "stop_misses_in_a_row": 4,
                                                          "pool_budget": 15})) == []


def test_a_crowd_quota_shorter_than_training_or_too_short_for_the_gold_rule_is_said():
    pool = pool_with(gold_rate=0.1)
    gold(pool, 4)
    known_pairs_add(pool=pool, items=[{"caption": f"q{q}", "clip": "v5" if q != 4 else "v2", "answer": "relevant",
                                       "role": "training"} for q in range(1, 5)])
    quality_rule_save(pool=pool, min_gold_answers=3)
    study_save(pool=pool, platform="prolific", title="t", completion_code="C0DE", quota_pairs=3,
               consent_text="I agree.", training_required=True)
    # 3 pairs at 0.1: 0.3 gold answers expected (4 gold pairs, so the pairs are not what limits it)
    assert pool_settings_warnings(pool=pool) == [
        "each worker answers 4 training pairs before a quota of 3 pairs: the training is longer than the work; "
        "shorten it or raise the quota",
        "a worker's quota of 3 pairs at gold rate 0.1 holds about 0.3 gold answers, fewer than the gold rule's 3: "
        "the rule rarely acts within a quota; raise the gold rate to at least 1, the quota, or lower the rule"]
    study_save(pool=pool, quota_pairs=30)  # 30 x 0.1 = 3 gold answers: the rule can act
    assert pool_settings_warnings(pool=pool) == []


def test_the_api_and_the_pool_page_show_them():
    pool = pool_with(gold_rate=0.0)
    admin = make_user("admin")
    api = APIClient()
    api.force_authenticate(admin)
    answer = api.patch(f"/api/v1/pools/{pool.pk}/", {"gold_rate": 0.05}, format="json")
    assert answer.status_code == 200
    assert answer.json()["warnings"] == [
        "gold rate 0.05, but the pool has no gold pairs: none is shown; attach some (build_pool --known-pairs, "
        "or Gold and training pairs on the pool page)"]
    api.force_login(admin)
    page = api.get(f"/admin-ui/pools/{pool.pk}/")
    assert page.status_code == 200
    assert "Gold rate 0.05, but the pool has no gold pairs: none is shown" in page.content.decode()


def test_the_crowd_study_api_says_what_its_quota_cannot_do():
    pool = pool_with(gold_rate=0.1)
    gold(pool, 4)
    quality_rule_save(pool=pool, min_gold_answers=3)
    api = APIClient()
    api.force_authenticate(make_user("admin"))
    saved = api.put(f"/api/v1/pools/{pool.pk}/crowd-study/", {
        "platform": "prolific", "title": "t", "completion_code": "C0DE", "quota_pairs": 10,
        "consent_text": "I agree.", "training_required": False}, format="json")
    assert saved.status_code == 201
    # 10 pairs at 0.1: about 1 gold answer, the rule wants 3 (0.3 of 10 would give them)
    assert saved.json()["warnings"] == [
        "a worker's quota of 10 pairs at gold rate 0.1 holds about 1.0 gold answers, fewer than the gold rule's 3: "
        "the rule rarely acts within a quota; raise the gold rate to at least 0.3, the quota, or lower the rule"]
    assert api.get(f"/api/v1/pools/{pool.pk}/crowd-study/").json()["warnings"] == saved.json()["warnings"]
