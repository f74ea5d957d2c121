"""The queue hands out pairs in the order the pool's judging strategy gives, as labels arrive;
stopping rules fire inside the label transaction, and an admin's resume brings the pairs back.

Each case is worked by hand in its comment: run A ranks v1, v2, v3 and run B ranks v4, v5, v6 for
caption q1 (disjoint, so every pair is in one run), and the truth is v4 and v5 relevant only.
"""
from __future__ import annotations

import pytest

from annotation.analysis.judging.strategies import run_line
from annotation.models import PooledPair, PoolQuery
from annotation.services.judging import JudgingError, judging_settings_update, pool_resume, query_resume
from annotation.services.queue.labels import label_submit, pair_adjudicate
from annotation.services.queue.leases import lease_next
from annotation.services.accounts.raters import memberships_grant
from tests.factories import make_pool_with_runs, make_rater

pytestmark = pytest.mark.django_db

ONE_QUERY = (("A", [("q1", ["v1", "v2", "v3"])]), ("B", [("q1", ["v4", "v5", "v6"])]))
RELEVANT = {("q1", "v4"), ("q1", "v5"), ("q2", "v1")}


def setup(judging, runs=ONE_QUERY, raters=1, redundancy=0.0, captions=1):
    pool, made = make_pool_with_runs(runs=runs, captions=max(captions, 2), clips=6, depth=3, redundancy=redundancy,
                                     seed=5, judging=judging)
    people = [make_rater() for _ in range(raters)]
    memberships_grant(pool=pool, users=people)
    return pool, people


def name(pair_id):
    pair = PooledPair.objects.select_related("caption", "clip").get(pk=pair_id)
    return pair.caption.external_id, pair.clip.external_id


def judge(rater, lease, value=None, relevant=RELEVANT):
    value = value or ("relevant" if name(lease.pair_id) in relevant else "not_relevant")
    return label_submit(rater=rater, client_id=f"c{lease.pk}-{rater.pk}", lease=lease.token, value=value, seconds=3)


def handed_out(pool, rater, limit=20, relevant=RELEVANT):
    """Lease, judge with the truth, repeat: the pairs in the order the queue gave them."""
    seen = []
    for _ in range(limit):
        lease = lease_next(pool=pool, rater=rater).lease
        if lease is None:
            break
        seen.append(name(lease.pair_id))
        judge(rater, lease, relevant=relevant)
    return seen


def clips(seq):
    return [clip for _, clip in seq]


def test_pool_order_keeps_todays_seeded_order():
    pool, (rater,) = setup({})
    expected = list(PooledPair.objects.filter(pool=pool).order_by("queue_order").values_list("pk", flat=True))
    assert handed_out(pool, rater) == [name(pk) for pk in expected]


def test_shallow_first_goes_depth_by_depth():
    # Depth 1 = {v1, v4}, depth 2 = {v2, v5}, depth 3 = {v3, v6}; ties by a seeded key.
    pool, (rater,) = setup({"strategy": "shallow_first"})
    seq = clips(handed_out(pool, rater))
    assert [set(seq[0:2]), set(seq[2:4]), set(seq[4:6])] == [{"v1", "v4"}, {"v2", "v5"}, {"v3", "v6"}]


def test_bandit_follows_the_run_that_finds_relevant_pairs():
    # Warm-up depth 1 judges v1 (not relevant) and v4 (relevant) first. MM-NS posterior means:
    # A = (1+0)/(2+0+1) = 1/3, B = (1+1)/(2+1+0) = 2/3, so B's v5 next (relevant); then B with
    # discount 0.9: a = 0.9 + 1 = 1.9 -> 2.9/3.9 = 0.74 > 1/3, so v6 (not relevant); B is used up,
    # so A's v2, v3. Shallow first would have given v2 or v5 third and v3 or v6 fifth.
    pool, (rater,) = setup({"strategy": "bandit", "warmup_depth": 1})
    seq = clips(handed_out(pool, rater))
    assert set(seq[:2]) == {"v1", "v4"} and seq[2:] == ["v5", "v6", "v2", "v3"]


def test_move_to_front_keeps_a_run_while_it_finds_relevant_pairs():
    # The line starts in a seeded order. A first: v1 (not relevant) sends A to the back; B gives
    # v4, v5 (relevant, B stays), v6 (not relevant, B to the back); then A's v2, v3.
    # B first: v4, v5, v6, then A's v1, v2, v3.
    pool, (rater,) = setup({"strategy": "move_to_front"})
    caption = PoolQuery.objects.get(pool=pool, caption__external_id="q1").caption_id
    a_first = int(run_line(2, seed=5, query_key=caption)[0]) == 0  # run index 0 = A (the older run)
    expected = ["v1", "v4", "v5", "v6", "v2", "v3"] if a_first else ["v4", "v5", "v6", "v1", "v2", "v3"]
    assert clips(handed_out(pool, rater)) == expected


def test_queries_take_turns():
    # Two queries, shallow first: key = position * 2 + slot, so q1 and q2 alternate, each depth
    # by depth; q1 (the older caption) has slot 0 and goes first.
    runs = (("A", [("q1", ["v1", "v2"]), ("q2", ["v3", "v4"])]),)
    pool, (rater,) = setup({"strategy": "shallow_first"}, runs=runs)
    assert handed_out(pool, rater) == [("q1", "v1"), ("q2", "v3"), ("q1", "v2"), ("q2", "v4")]


def test_only_resolved_labels_move_the_order_not_redundancy_labels():
    # Every pair needs two labels. After v1 and v4 each have ONE label, the bandit has learnt
    # nothing (nothing is resolved), so the keys of the untouched pairs are those of the build.
    pool, (r1, r2) = setup({"strategy": "bandit", "warmup_depth": 1}, raters=2, redundancy=1.0)
    keys = dict(PooledPair.objects.filter(pool=pool).values_list("pk", "queue_order"))
    first = [lease_next(pool=pool, rater=r1).lease]
    first.append(lease_next(pool=pool, rater=r1, exclude_leases=[first[0].token]).lease)
    assert {clip for _, clip in map(name, [lease.pair_id for lease in first])} == {"v1", "v4"}
    for lease in first:
        judge(r1, lease)
    untouched = PooledPair.objects.filter(pool=pool, vote_count=0)
    assert dict(untouched.values_list("pk", "queue_order")) == {pk: keys[pk] for pk in untouched.values_list("pk", flat=True)}
    # The second labels resolve v1 and v4: now B's v5 comes next (as in the single-label case).
    for _ in range(2):
        judge(r2, lease_next(pool=pool, rater=r2).lease)
    assert clips([name(lease_next(pool=pool, rater=r1).lease.pair_id)]) == ["v5"]


def test_misses_in_a_row_stops_the_query_and_resume_brings_it_back():
    # Every pair of q1 not relevant here; stop after 2 misses in a row: the second label stops
    # q1, its 4 other pairs leave the queue. A resume counts misses afresh: 2 more, stopped again.
    pool, (rater,) = setup({"strategy": "shallow_first", "stop_misses_in_a_row": 2})
    assert len(handed_out(pool, rater, relevant=set())) == 2
    query = PoolQuery.objects.get(pool=pool, caption__external_id="q1")
    assert (query.stopped_reason, query.judged, query.relevant) == ("misses_in_a_row", 2, 0)
    left = PooledPair.objects.filter(pool=pool, state="stopped")
    assert left.count() == 4 and not left.filter(available=True).exists()
    assert lease_next(pool=pool, rater=rater).reason == "no_work_left"

    query_resume(pool=pool, caption_id=query.caption_id)
    assert not PooledPair.objects.filter(pool=pool, state="stopped").exists()
    assert len(handed_out(pool, rater, relevant=set())) == 2
    query.refresh_from_db()
    assert (query.stopped_reason, query.judged, query.judged_at_resume) == ("misses_in_a_row", 4, 2)
    assert PooledPair.objects.filter(pool=pool, state="stopped").count() == 2


def test_query_budget_stops_after_that_many_judgments_and_resume_gives_a_fresh_budget():
    pool, (rater,) = setup({"strategy": "shallow_first", "query_budget": 2})
    query = PoolQuery.objects.get(pool=pool, caption__external_id="q1")
    with pytest.raises(JudgingError, match="not stopped"):
        query_resume(pool=pool, caption_id=query.caption_id)
    assert len(handed_out(pool, rater)) == 2
    query.refresh_from_db()
    assert query.stopped_reason == "budget"
    query_resume(pool=pool, caption_id=query.caption_id)
    assert len(handed_out(pool, rater)) == 2  # two more, then the budget stops it again
    assert PoolQuery.objects.get(pk=query.pk).stopped_reason == "budget"


def test_a_lease_held_when_the_query_stops_is_honoured():
    pool, (r1, r2) = setup({"strategy": "shallow_first", "query_budget": 1}, raters=2)
    held = lease_next(pool=pool, rater=r2).lease
    judge(r1, lease_next(pool=pool, rater=r1).lease)  # the budget's one judgment stops q1
    assert PooledPair.objects.get(pk=held.pair_id).state == "stopped"
    result = judge(r2, held)
    assert result.label.counted
    assert PooledPair.objects.get(pk=held.pair_id).state == "resolved"


def test_pool_budget_stops_the_pool_and_pool_resume_restarts_it():
    runs = (("A", [("q1", ["v1", "v2"]), ("q2", ["v3", "v4"])]),)
    pool, (rater,) = setup({"strategy": "shallow_first", "pool_budget": 3}, runs=runs)
    assert len(handed_out(pool, rater)) == 3
    pool.refresh_from_db()
    assert pool.judging_stopped_reason == "pool_budget"
    assert PooledPair.objects.filter(pool=pool, state="stopped").count() == 1
    assert lease_next(pool=pool, rater=rater).reason == "no_work_left"
    pool_resume(pool=pool)
    assert handed_out(pool, rater) == [("q2", "v4")]


def test_an_admin_decision_counts_as_a_judgment():
    pool, (rater,) = setup({"strategy": "shallow_first", "query_budget": 1})
    pair = PooledPair.objects.filter(pool=pool, caption__external_id="q1").first()
    pair_adjudicate(pair_id=pair.pk, admin=None, label="relevant")
    assert PoolQuery.objects.get(pool=pool, caption_id=pair.caption_id).stopped_reason == "budget"


def test_sampled_design_stores_inclusion_probabilities_and_queues_only_the_sample():
    pool, (rater,) = setup({"strategy": "sampled", "sample_rate": 0.5})
    pairs = PooledPair.objects.filter(pool=pool)
    in_sample = pairs.exclude(state="not_sampled")
    assert pairs.filter(state="not_sampled", available=False).count() == pairs.count() - in_sample.count()
    assert all(0 < p <= 1 for p in pairs.values_list("inclusion_probability", flat=True))
    # Expected sample size = 0.5 * 6 = 3 = the sum of the inclusion probabilities.
    assert sum(pairs.values_list("inclusion_probability", flat=True)) == pytest.approx(3.0)
    assert {name(pk) for pk in in_sample.values_list("pk", flat=True)} == set(handed_out(pool, rater))


def test_a_label_on_a_sampled_pool_draws_the_query_design_once_and_keeps_its_order_and_pi(monkeypatch):
    """The label hook needs the sampled design's order and its pi: it draws it once per judged pair
    (it drew it twice, in the order and again in the stored pi), and what it keeps is what the
    design drawn afresh gives."""
    import numpy as np

    from annotation.analysis.judging import strategies
    from annotation.services.judging import order as order_module

    for _ in range(30):  # the sample is drawn from the caption's database id: take a pool whose sample has 2+ pairs
        pool, (rater,) = setup({"strategy": "sampled", "sample_rate": 0.5})
        if PooledPair.objects.filter(pool=pool).exclude(state="not_sampled").count() >= 2:
            break
    draws = []
    real = strategies.sampled_design
    monkeypatch.setattr(order_module, "sampled_design", lambda *a, **k: draws.append(1) or real(*a, **k))
    monkeypatch.setattr(strategies, "sampled_design", lambda *a, **k: draws.append(1) or real(*a, **k))
    judged = 0
    while (lease := lease_next(pool=pool, rater=rater).lease) is not None:
        draws.clear()
        judge(rater, lease)
        judged += 1
        assert len(draws) == 1, draws
        snapshot = order_module.query_snapshot(pool.pk, lease.pair.caption_id)
        fresh = strategies.inclusion_probabilities(snapshot.run_lists, params=order_module.strategy_params(pool),
                                                   query_key=int(lease.pair.caption_id), n_pairs=len(snapshot.pair_ids))
        assert np.allclose([float(p) for p in snapshot.inclusion], fresh)
    assert judged >= 2


def test_a_sampled_order_from_a_given_design_is_the_order_drawn_afresh():
    from annotation.analysis.judging.strategies import StrategyParams, query_order, sampled_design

    import numpy as np

    lists = [np.array([0, 1, 2, 3]), np.array([4, 1, 5, 6])]
    params = StrategyParams(sample_rate=0.6, seed=3)
    design = sampled_design(lists, params=params, query_key=11, n_pairs=7)
    for judged in ({}, {int(design["order"][0]): True}):
        assert query_order("sampled", lists, judged, params=params, query_key=11, n_pairs=7, design=design).tolist() == \
            query_order("sampled", lists, judged, params=params, query_key=11, n_pairs=7).tolist()


def test_changing_the_strategy_reorders_pending_pairs_and_sampling_is_fixed_once_judging_started():
    pool, (rater,) = setup({})
    judge(rater, lease_next(pool=pool, rater=rater).lease)
    result = judging_settings_update(pool=pool, changes={"strategy": "shallow_first"})
    assert result["strategy"] == "shallow_first" and result["queries"] == 1
    seq = clips(handed_out(pool, rater))
    depth = {"v1": 1, "v4": 1, "v2": 2, "v5": 2, "v3": 3, "v6": 3}
    assert [depth[c] for c in seq] == sorted(depth[c] for c in seq)
    with pytest.raises(JudgingError, match="sampling design"):
        judging_settings_update(pool=pool, changes={"strategy": "sampled"})
    with pytest.raises(JudgingError, match="strategy"):
        judging_settings_update(pool=pool, changes={"strategy": "best_first"})


def test_remaining_relevant_estimate_stops_the_query():
    # Bandit, warm-up 1: v1, v4 first, then v5, v6, v2, v3 (as above). Estimated relevant left =
    # sum over unjudged pairs of the best smoothed precision (rel + 1) / (judged + 2) of the runs
    # holding them. After v1 (miss), v4 (hit): A = 1/3, B = 2/3: v2 + v3 + v5 + v6 = 2/3 + 4/3 = 2.
    # After v5 (hit): B = 3/4: 2/3 + 3/4 = 1.42. After v6 (miss): B = 3/5 but B has nothing left:
    # v2 + v3 = 2/3 < 1, so the query stops there with v2 and v3 unjudged.
    pool, (rater,) = setup({"strategy": "bandit", "warmup_depth": 1, "stop_remaining_below": 1.0})
    seq = clips(handed_out(pool, rater))
    assert set(seq[:2]) == {"v1", "v4"} and seq[2:] == ["v5", "v6"]
    assert PoolQuery.objects.get(pool=pool).stopped_reason == "remaining_relevant"
    assert set(PooledPair.objects.filter(pool=pool, state="stopped").values_list("clip__external_id", flat=True)) == {"v2", "v3"}


def test_imported_judgments_teach_the_strategy_but_spend_no_budget():
    # v1 known relevant from an imported judgment (resolved, no vote, not by an admin: what
    # services/pools.py gives such pairs). The budget of 2 is two raters' judgments after it.
    from annotation.services.judging import pool_judging_refresh
    from annotation.selectors.judging import pool_query_statuses

    pool, (rater,) = setup({"strategy": "shallow_first", "query_budget": 2})
    PooledPair.objects.filter(pool=pool, clip__external_id="v1").update(state="resolved", resolved_label="relevant",
                                                                        available=False)
    pool_judging_refresh(pool=pool)
    assert len(handed_out(pool, rater)) == 2
    query = PoolQuery.objects.get(pool=pool)
    assert (query.stopped_reason, query.judged, query.relevant) == ("budget", 2, 1 + sum(
        1 for p in PooledPair.objects.filter(pool=pool, vote_count__gt=0, resolved_label="relevant")))
    (row,) = pool_query_statuses(pool=pool)["results"]
    assert (row["judged"], row["imported"], row["left"], row["stopped_pairs"]) == (2, 1, 0, 3)


def test_a_run_added_later_joins_the_order_and_brings_its_queries():
    # Built from run A (q1: v1, v2, v3) under shallow first; run B adds q1's v4, v5, v6 and a new
    # query q2 (v1). q2 gets the next slot, and every query's order is recomputed: depth 1 of q1
    # (v1, v4) and q2's v1 come before any depth-2 pair.
    from annotation.models import Prediction, Run
    from annotation.services.pools.build import pool_add_run

    pool, (rater,) = setup({"strategy": "shallow_first"}, runs=(ONE_QUERY[0],))
    assert PoolQuery.objects.filter(pool=pool).count() == 1
    dataset = pool.dataset
    run = Run.objects.create(dataset=dataset, name="B", checksum="b-sum", depth=3)
    clip = {c.external_id: c for c in dataset.clips.all()}
    caption = {c.external_id: c for c in dataset.captions.all()}
    Prediction.objects.bulk_create([Prediction(run=run, caption=caption["q1"], clip=clip[v], rank=r, score=1)
                                    for r, v in enumerate(["v4", "v5", "v6"], start=1)]
                                   + [Prediction(run=run, caption=caption["q2"], clip=clip["v1"], rank=1, score=1)])
    assert pool_add_run(pool=pool, run=run) == 4
    assert list(PoolQuery.objects.filter(pool=pool).order_by("slot").values_list("caption__external_id", flat=True)) == [
        "q1", "q2"]
    seq = handed_out(pool, rater)
    assert set(seq[:3]) == {("q1", "v1"), ("q1", "v4"), ("q2", "v1")} and len(seq) == 7


def test_a_sampled_query_that_stops_early_stores_its_prefix_inclusion_probabilities():
    # Sequential Poisson: judging stopped after the sample's first pair is a Poisson sample with
    # pi = min(1, c w) for c = the key of the first pair not taken (strategies.py); the stored pi
    # switch from the complete sample's to those, and back when the query is resumed.
    from annotation.analysis.judging.strategies import (StrategyParams, inclusion_probabilities,
                                                        prefix_inclusion_probabilities)
    from annotation.services.judging.order import query_snapshot

    pool, (rater,) = setup({"strategy": "sampled", "sample_rate": 0.8, "query_budget": 1})
    query = PoolQuery.objects.get(pool=pool)
    snap = query_snapshot(pool.pk, query.caption_id)
    params = StrategyParams(seed=5, sample_rate=0.8)
    full = inclusion_probabilities(snap.run_lists, params=params, query_key=query.caption_id, n_pairs=6)
    prefix = prefix_inclusion_probabilities(snap.run_lists, 1, params=params, query_key=query.caption_id, n_pairs=6)
    assert not full == pytest.approx(prefix)  # the test can tell them apart

    def stored():
        return [PooledPair.objects.get(pk=pk).inclusion_probability for pk in snap.pair_ids.tolist()]

    assert stored() == pytest.approx(full.tolist())
    assert len(handed_out(pool, rater)) == 1
    assert PoolQuery.objects.get(pk=query.pk).stopped_reason == "budget"
    assert stored() == pytest.approx(prefix.tolist())
    query_resume(pool=pool, caption_id=query.caption_id)
    assert stored() == pytest.approx(full.tolist())


def test_progress_counts_only_pairs_still_to_judge_so_a_finished_sampled_or_stopped_pool_reaches_100_percent():
    from annotation.selectors.pools import pool_progress

    # The draw is seeded by the caption's id, which depends on what ran before: a 3-pair query at
    # rate 0.5 keeps every pair for some ids. Such a pool says nothing here, so take the first pool
    # whose sample leaves a pair out (about 9 in 10 do).
    for _ in range(20):
        pool, (rater,) = setup({"strategy": "sampled", "sample_rate": 0.5})
        pairs = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL)
        not_sampled = pairs.filter(state="not_sampled").count()
        if not_sampled:
            break
    assert not_sampled > 0
    handed_out(pool, rater)  # every sampled pair judged
    progress = pool_progress(pool=pool)
    assert progress["left"] == 0
    # The pairs outside the sample were never to be judged: the pool is done.
    assert progress["resolved_fraction"] == 1.0
    assert progress["to_judge"] == pairs.count() - not_sampled
    assert progress["by_state"]["not_sampled"] == not_sampled
