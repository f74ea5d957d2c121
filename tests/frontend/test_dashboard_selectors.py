"""Reads behind the admin pages (annotation/selectors/dashboard.py), on hand-worked examples."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Clip, Label, Pool, PooledPair, PoolMembership, Run
from annotation.selectors.dashboard import (datasets_overview, pool_agreement, pool_live, rater_pool_cards,
                                            raters_overview)
from tests.factories import make_dataset, make_user

pytestmark = pytest.mark.django_db


def make_pool(pairs: int = 5):
    dataset = make_dataset(clips=pairs, captions=pairs)
    pool = Pool.objects.create(dataset=dataset, name="p", redundancy=0.5)
    captions = list(dataset.captions.order_by("external_id"))
    clips = list(dataset.clips.order_by("external_id"))
    return pool, [PooledPair.objects.create(pool=pool, caption=captions[i], clip=clips[i], queue_order=i)
                  for i in range(pairs)]


def vote(pair, rater, value, sequence, *, counted=True, when=None):
    label = Label.objects.create(pair=pair, rater=rater, value=value, client_id=f"{pair.pk}-{rater.pk}",
                                 counted=counted, sequence=sequence if counted else 0, seconds=2.0)
    if when:
        Label.objects.filter(pk=label.pk).update(created_at=when)
    return label


def test_pool_agreement_matches_the_hand_worked_example():
    pool, (a, b, c, d, e) = make_pool()
    r1, r2, r3 = (make_user("rater") for _ in range(3))
    # A: R R (agree)   B: R N then a third R   C: N N (agree)   D: one vote   E: escalated, not votes
    for pair, values in ((a, "RR"), (b, "RNR"), (c, "NN"), (d, "R")):
        for k, v in enumerate(values):
            vote(pair, (r1, r2, r3)[k], "relevant" if v == "R" else "not_relevant", k + 1)
        PooledPair.objects.filter(pk=pair.pk).update(vote_count=len(values))
    vote(e, r1, "ambiguous", 0, counted=False)
    vote(e, r2, "broken", 0, counted=False)

    result = pool_agreement(pool=pool, n_boot=20)

    assert result["pairs_labelled"] == 4 and result["pairs_multi"] == 3
    first_two, everything = result["first_two"], result["all"]
    # First two votes: A (1,1), B (1,0), C (0,0). Coincidences o11=2, o00=2, o01=o10=1, n=6:
    # D_o = 2/6, D_e = 2*3*3/(6*5) = 0.6, alpha = 1 - (1/3)/0.6 = 4/9.
    assert first_two["percent_agreement"] == pytest.approx(2 / 3)
    assert first_two["alpha"] == pytest.approx(4 / 9)
    # All votes: B's three values (1,0,1) add o11=1, o10=o01=1 (pairs weighted 1/2): n=7,
    # n1=4, n0=3, D_o = 2/7, D_e = 2*3*4/(7*6) = 4/7, alpha = 0.5; B does not all agree.
    assert everything["percent_agreement"] == pytest.approx(2 / 3)
    assert everything["alpha"] == pytest.approx(0.5)
    assert len(first_two["alpha_ci"]) == 2


def test_pool_agreement_without_multiply_labelled_pairs():
    pool, (a, *_rest) = make_pool(2)
    vote(a, make_user("rater"), "relevant", 1)
    PooledPair.objects.filter(pk=a.pk).update(vote_count=1)
    assert pool_agreement(pool=pool) == {"pairs_labelled": 1, "pairs_multi": 0, "first_two": None, "all": None}


def test_pool_live_rater_rows_count_production_work_only():
    pool, (a, b, c, *_rest) = make_pool()
    gold = PooledPair.objects.create(pool=pool, caption=a.caption, clip=b.clip, role="gold", known_answer="relevant")
    training = PooledPair.objects.create(pool=pool, caption=a.caption, clip=c.clip, role="training",
                                         known_answer="relevant")
    rater, idle = make_user("rater"), make_user("rater")
    PoolMembership.objects.create(pool=pool, rater=rater, training="passed", training_score=1.0)
    PoolMembership.objects.create(pool=pool, rater=idle)
    vote(a, rater, "relevant", 1, when=timezone.now() - timedelta(days=2))
    Label.objects.create(pair=b, rater=rater, value="ambiguous", client_id="amb", counted=False, seconds=4.0)
    Label.objects.create(pair=gold, rater=rater, value="not_relevant", client_id="gold", seconds=6.0)
    Label.objects.create(pair=training, rater=rater, value="relevant", client_id="train", seconds=100.0)

    live = pool_live(pool=pool)
    rows = {r["rater_id"]: r for r in live["raters"]}

    mine = rows[rater.pk]
    assert (mine["labels"], mine["labels_today"], mine["ambiguous"], mine["broken"]) == (3, 2, 1, 0)
    assert mine["mean_seconds"] == pytest.approx((2.0 + 4.0 + 6.0) / 3)  # the training answer is left out
    assert (mine["gold_answered"], mine["gold_correct"]) == (1, 0)
    assert (mine["training"], mine["training_score"]) == ("passed", 1.0)
    # The pool's labels are the raters' production labels: the same count, gold included.
    assert live["labels"] == sum(r["labels"] for r in live["raters"]) == 3
    # The window's rate is over the same labels as its count (the training answer is in neither).
    assert mine["labels_window"] == 2 and mine["labels_last_hour"] == 2
    assert (rows[idle.pk]["labels"], rows[idle.pk]["mean_seconds"], rows[idle.pk]["last_label_at"]) == (0, None, None)
    assert rows[idle.pk]["rate_per_hour"] is None


def test_datasets_overview_counts_do_not_multiply_across_tables():
    dataset = make_dataset(clips=5, captions=3)
    for name in ("a", "b"):
        Run.objects.create(dataset=dataset, name=name, checksum=name)
    Pool.objects.create(dataset=dataset, name="p")
    row = datasets_overview().get(pk=dataset.pk)
    assert (row.clip_count, row.caption_count, row.run_count, row.pool_count) == (5, 3, 2, 1)
    assert Clip.objects.filter(dataset=dataset).count() == 5


def test_raters_overview_lists_raters_with_their_pools_and_labels():
    pool, (a, b, *_rest) = make_pool()
    rater = make_user("rater")
    make_user("researcher")
    PoolMembership.objects.create(pool=pool, rater=rater)
    vote(a, rater, "relevant", 1)
    vote(b, rater, "not_relevant", 1, when=timezone.now() - timedelta(days=3))
    rows = list(raters_overview())
    assert [r.pk for r in rows] == [rater.pk]
    assert (rows[0].label_count, rows[0].labels_today) == (2, 1)
    assert [m.pool.name for m in rows[0].memberships.all()] == ["p"]


def test_rater_pool_cards_count_training_open_pairs_and_my_labels():
    pool, (a, b, c, d, e) = make_pool()
    other_pool, (x, *_rest) = make_pool(1)
    PooledPair.objects.create(pool=pool, caption=a.caption, clip=b.clip, role="training", known_answer="relevant")
    PooledPair.objects.filter(pk=e.pk).update(state="resolved")
    rater, someone = make_user("rater"), make_user("rater")
    for p in (pool, other_pool):
        PoolMembership.objects.create(pool=p, rater=rater)
    vote(a, rater, "relevant", 1)
    vote(b, someone, "relevant", 1)
    vote(x, rater, "relevant", 1)
    cards = {card.pool_id: (card.training_pairs, card.open_pairs, card.my_labels)
             for card in rater_pool_cards(rater=rater)}
    assert cards == {pool.pk: (1, 4, 1), other_pool.pk: (0, 1, 1)}
