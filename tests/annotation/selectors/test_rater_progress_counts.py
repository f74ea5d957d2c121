"""Issue 39, finding 7: the rater's "Left for you" and "Labelled today" count what the pool page counts.

A pool of 6 pool pairs (each needing one label) with 2 gold pairs that repeat pool pairs (their
twins) and 2 training pairs. A new rater has 6 pairs to answer, not 8: a gold twin is handed out
only in place of its pool pair (leases.py _GOLD_TWIN_SEEN), and training is not the pool's work.
Training answers are not labels of the pool, on the rater's page as on the pool page."""
from __future__ import annotations

import pytest

from annotation.models import PooledPair, PoolMembership
from annotation.selectors.dashboard import pool_live
from annotation.selectors.pools import rater_progress
from annotation.services.accounts.raters import memberships_grant
from annotation.services.pools.build import known_pairs_add
from tests.factories import label_pair, make_pool_with_runs, make_rater

pytestmark = pytest.mark.django_db


def _pool_with_gold_twins_and_training():
    pool, _ = make_pool_with_runs(captions=3, clips=6, depth=2, gold_rate=0.5,
                                  runs=(("A", [("q1", ["v1", "v2"]), ("q2", ["v3", "v4"]), ("q3", ["v5", "v6"])]),))
    assert pool.pairs.filter(role=PooledPair.Role.POOL).count() == 6
    known_pairs_add(pool=pool, items=[
        {"caption": "q1", "clip": "v1", "answer": "relevant", "role": "gold"},
        {"caption": "q2", "clip": "v3", "answer": "not_relevant", "role": "gold"},
        {"caption": "q1", "clip": "v6", "answer": "not_relevant", "role": "training"},
        {"caption": "q3", "clip": "v1", "answer": "not_relevant", "role": "training"}])
    return pool


def _today_on_pool_page(pool, rater) -> int:
    return next(r["labels_today"] for r in pool_live(pool=pool)["raters"] if r["rater_id"] == rater.pk)


def test_left_for_you_is_the_pool_pairs_and_training_counts_on_neither_page():
    pool = _pool_with_gold_twins_and_training()
    rater = make_rater()
    memberships_grant(pool=pool, users=[rater])

    start = rater_progress(pool=pool, rater=rater)
    assert start["left_for_you"] == 6  # 8 before: the two gold twins counted beside their pool pairs
    assert start["training"]["total"] == 2

    for pair in pool.pairs.filter(role=PooledPair.Role.TRAINING).order_by("pk"):
        label_pair(rater, pair, pair.known_answer)
    after_training = rater_progress(pool=pool, rater=rater)
    assert after_training["training"]["status"] == "passed"
    assert after_training["left_for_you"] == 6
    assert after_training["labelled_today"] == 0 == _today_on_pool_page(pool, rater)

    # Each answer takes one off, a pool pair's or (once its twin is resolved by another) a gold one's.
    first = pool.pairs.get(role=PooledPair.Role.POOL, caption__external_id="q3", clip__external_id="v5")
    label_pair(rater, first, "relevant")
    progress = rater_progress(pool=pool, rater=rater)
    assert progress["left_for_you"] == 5
    assert progress["labelled_today"] == 1 == _today_on_pool_page(pool, rater)

    other = make_rater()
    memberships_grant(pool=pool, users=[other])
    PoolMembership.objects.filter(pool=pool, rater=other).update(training=PoolMembership.Training.PASSED)
    twin = pool.pairs.get(role=PooledPair.Role.POOL, caption__external_id="q1", clip__external_id="v1")
    label_pair(other, twin, "relevant")
    # The twin is resolved by someone else: it is no longer the rater's, its gold pair is instead.
    assert rater_progress(pool=pool, rater=rater)["left_for_you"] == 5
    gold = pool.pairs.get(role=PooledPair.Role.GOLD, caption__external_id="q1", clip__external_id="v1")
    label_pair(rater, gold, "relevant")
    progress = rater_progress(pool=pool, rater=rater)
    assert progress["left_for_you"] == 4
    assert progress["labelled_today"] == 2 == _today_on_pool_page(pool, rater)
