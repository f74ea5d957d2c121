"""Pool building: union of top-k, dedup, provenance, seeded redundancy, incremental runs."""
from __future__ import annotations

import numpy as np
import pytest

from annotation.models import Label, PairProvenance, PooledPair, Prediction, Run
from annotation.analysis.pair_hashes import needs_second_label, queue_positions
from annotation.services.pools.build import PoolError, known_pairs_add, pool_add_run, pool_create
from tests.factories import make_pool_with_runs, make_rater

pytestmark = pytest.mark.django_db


def pair_keys(pool):
    return set(PooledPair.objects.filter(pool=pool, role="pool").values_list("caption__external_id", "clip__external_id"))


def test_pool_is_the_deduplicated_union_of_top_k_with_provenance():
    runs = (("A", [("q1", ["v1", "v2", "v3"]), ("q2", ["v2", "v4", "v5"])]),
            ("B", [("q1", ["v2", "v1", "v6"]), ("q2", ["v6", "v2", "v1"])]))
    pool, (a, b) = make_pool_with_runs(runs=runs, depth=2)
    # top-2: A gives q1:{v1,v2} q2:{v2,v4}; B gives q1:{v2,v1} q2:{v6,v2} -> 5 distinct pairs
    assert pair_keys(pool) == {("q1", "v1"), ("q1", "v2"), ("q2", "v2"), ("q2", "v4"), ("q2", "v6")}
    prov = set(PairProvenance.objects.filter(pair__pool=pool).values_list(
        "pair__caption__external_id", "pair__clip__external_id", "run__name", "rank"))
    assert prov == {("q1", "v1", "A", 1), ("q1", "v2", "A", 2), ("q1", "v2", "B", 1), ("q1", "v1", "B", 2),
                    ("q2", "v2", "A", 1), ("q2", "v4", "A", 2), ("q2", "v6", "B", 1), ("q2", "v2", "B", 2)}
    assert list(pool.poolrun_set.order_by("run__name").values_list("pairs_added", flat=True)) == [4, 1]


def test_original_positives_as_check_items():
    runs = (("A", [("q1", ["v3"])]),)
    pool, _ = make_pool_with_runs(runs=runs, depth=1, captions=2, include_original_positives=True)
    # q1's original clip is v1, q2's is v2 (factory), both added; v3 from the run
    assert pair_keys(pool) == {("q1", "v3"), ("q1", "v1"), ("q2", "v2")}
    originals = PooledPair.objects.filter(pool=pool, is_original_positive=True)
    assert set(originals.values_list("caption__external_id", "clip__external_id")) == {("q1", "v1"), ("q2", "v2")}


def test_redundancy_draw_is_seeded_reproducible_and_near_the_fraction():
    captions, clips = [f"q{i}" for i in range(20000)], [f"v{i % 997}" for i in range(20000)]
    first = needs_second_label(captions, clips, seed=7, fraction=0.1)
    assert np.array_equal(first, needs_second_label(captions, clips, seed=7, fraction=0.1))
    assert not np.array_equal(first, needs_second_label(captions, clips, seed=8, fraction=0.1))
    assert 0.09 < first.mean() < 0.11  # 20,000 Bernoulli(0.1) draws: sd 0.002
    assert not needs_second_label(captions, clips, seed=7, fraction=0.0).any()
    assert needs_second_label(captions, clips, seed=7, fraction=1.0).all()
    order = queue_positions(captions, clips, seed=7)
    assert len(set(order.tolist())) == len(order) and (order >= 0).all()


def test_pairs_get_required_labels_from_the_draw():
    pool, _ = make_pool_with_runs(captions=6, clips=8, depth=4, redundancy=1.0)
    assert set(PooledPair.objects.filter(pool=pool).values_list("required_labels", flat=True)) == {2}
    pool0, _ = make_pool_with_runs(captions=6, clips=8, depth=4, redundancy=0.0)
    assert set(PooledPair.objects.filter(pool=pool0).values_list("required_labels", flat=True)) == {1}


def test_incremental_run_adds_only_new_pairs_and_keeps_labels():
    runs = (("A", [("q1", ["v1", "v2"])]),)
    pool, (a,) = make_pool_with_runs(runs=runs, depth=2)
    rater = make_rater()
    first = PooledPair.objects.get(pool=pool, caption__external_id="q1", clip__external_id="v1")
    Label.objects.create(pair=first, rater=rater, value="relevant", client_id="x")
    newer = Run.objects.create(dataset=pool.dataset, name="C", checksum="c")
    Prediction.objects.create(run=newer, caption=first.caption, clip=first.clip, rank=1, score=1)
    Prediction.objects.create(run=newer, caption=first.caption, clip=pool.dataset.clips.get(external_id="v5"), rank=2, score=0.5)
    added = pool_add_run(pool=pool, run=newer)
    assert added == 1
    assert pair_keys(pool) == {("q1", "v1"), ("q1", "v2"), ("q1", "v5")}
    assert Label.objects.filter(pair=first).count() == 1
    # the new run's provenance is recorded on the pair it shares with the pool, too
    assert set(PairProvenance.objects.filter(pair=first).values_list("run__name", flat=True)) == {"A", "C"}
    with pytest.raises(PoolError, match="already in pool"):
        pool_add_run(pool=pool, run=newer)


def test_queue_order_does_not_depend_on_which_run_came_first():
    runs = (("A", [("q1", ["v1", "v2"])]), ("B", [("q1", ["v3", "v1"])]))
    pool_ab, _ = make_pool_with_runs(runs=runs, depth=2, seed=3)
    pool_ba, _ = make_pool_with_runs(runs=tuple(reversed(runs)), depth=2, seed=3)

    def order(pool):
        return [(p.caption.external_id, p.clip.external_id) for p in
                PooledPair.objects.filter(pool=pool).select_related("caption", "clip").order_by("queue_order")]

    assert order(pool_ab) == order(pool_ba)


def test_pool_build_errors():
    pool, (a, b) = make_pool_with_runs()
    with pytest.raises(PoolError, match="already exists"):
        pool_create(dataset=pool.dataset, name=pool.name, runs=[a])
    with pytest.raises(PoolError, match="at least one run"):
        pool_create(dataset=pool.dataset, name="empty", runs=[])
    other_pool, (c, _) = make_pool_with_runs()
    with pytest.raises(PoolError, match="another dataset"):
        pool_create(dataset=pool.dataset, name="mixed", runs=[c])


def test_known_pairs():
    pool, _ = make_pool_with_runs()
    added = known_pairs_add(pool=pool, items=[
        {"caption": "q1", "clip": "v1", "answer": "relevant", "role": "training", "explanation": "all elements present"},
        {"caption": "q2", "clip": "v5", "answer": "not_relevant", "role": "gold"},
    ])
    assert added == 2
    again = known_pairs_add(pool=pool, items=[{"caption": "q1", "clip": "v1", "answer": "relevant", "role": "training"}])
    assert again == 0
    assert not PooledPair.objects.filter(pool=pool, role__in=["gold", "training"], available=True).exists()
    with pytest.raises(PoolError, match="item 1, field 'caption'"):
        known_pairs_add(pool=pool, items=[{"caption": "nope", "clip": "v1", "answer": "relevant"}])
    with pytest.raises(PoolError, match="field 'answer'"):
        known_pairs_add(pool=pool, items=[{"caption": "q1", "clip": "v1", "answer": "maybe"}])
