"""Judging orders: every strategy's choices on hand-worked cases (issue 15)."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.analysis.judging.strategies import (
    STRATEGIES,
    StrategyParams,
    ap_prior_weights,
    inclusion_probabilities,
    interleave,
    pair_depths,
    prefix_inclusion_probabilities,
    query_order,
    run_line,
    sampled_design,
    sampling_threshold,
    seeded_uniform,
)

P = StrategyParams()


def lists(*runs):
    return [np.array(r) for r in runs]


def test_interleave_round_robin():
    # 3 queries: q0 p0, q1 p0, q2 p0, q0 p1, ... -> key = position * 3 + slot
    assert [interleave(0, 0, 3), interleave(0, 2, 3), interleave(1, 0, 3), interleave(2, 1, 3)] == [0, 2, 3, 7]
    with pytest.raises(ValueError):
        interleave(0, 3, 3)


def test_pair_depths_is_the_best_rank_over_runs():
    # A = [0, 1, 2], B = [3, 1, 4]: pair 1 is rank 2 in both; 3 is rank 1 of B
    assert pair_depths(lists([0, 1, 2], [3, 1, 4])).tolist() == [1, 2, 3, 1, 3]


def test_pool_order_is_a_seeded_permutation_of_the_unjudged_pairs():
    rl = lists([0, 1, 2, 3], [4, 5, 1])
    order = query_order("pool_order", rl, {}, params=P, query_key=7)
    assert sorted(order.tolist()) == list(range(6))
    # the order is the pairs sorted by their seeded key, and is reproducible
    keys = seeded_uniform(0, 7, np.arange(6), 1)
    assert order.tolist() == np.argsort(keys).tolist()
    assert query_order("pool_order", rl, {}, params=P, query_key=7).tolist() == order.tolist()
    assert query_order("pool_order", rl, {}, params=P, query_key=8).tolist() != order.tolist()
    # judged pairs drop out, the others keep their relative order
    rest = query_order("pool_order", rl, {int(order[0]): True}, params=P, query_key=7)
    assert rest.tolist() == order[1:].tolist()


def test_shallow_first_goes_depth_by_depth():
    # depths [1, 2, 3, 1, 3] (see above): {0, 3} first, then 1, then {2, 4}
    rl = lists([0, 1, 2], [3, 1, 4])
    order = query_order("shallow_first", rl, {}, params=P).tolist()
    assert set(order[:2]) == {0, 3} and order[2] == 1 and set(order[3:]) == {2, 4}
    # the seeded key decides the ties
    keys = seeded_uniform(0, 0, np.arange(5), 1)
    assert order[:2] == sorted([0, 3], key=lambda p: keys[p])
    assert query_order("shallow_first", rl, {0: False, 3: True}, params=P).tolist() == order[2:]


def test_warm_up_puts_the_shallow_pairs_first_for_any_strategy():
    rl = lists([0, 1, 2, 3], [4, 5, 6, 7])
    for strategy in ("pool_order", "move_to_front", "bandit"):
        order = query_order(strategy, rl, {}, params=StrategyParams(warmup_depth=2), query_key=3).tolist()
        assert set(order[:2]) == {0, 4} and set(order[2:4]) == {1, 5}, strategy


def test_move_to_front_stays_on_a_run_while_it_yields_relevant():
    rl = lists([0, 1, 2], [3, 4, 5])
    first, second = run_line(2, seed=0, query_key=0).tolist()
    f, s = rl[first].tolist(), rl[second].tolist()
    # nothing judged: the first run of the line, then the second
    assert query_order("move_to_front", rl, {}, params=P).tolist() == f + s
    # f[0] relevant: stay on the first run
    assert query_order("move_to_front", rl, {f[0]: True}, params=P).tolist() == f[1:] + s
    # f[1] not relevant: the first run goes to the back, the second run is judged next
    assert query_order("move_to_front", rl, {f[0]: True, f[1]: False}, params=P).tolist() == s + f[2:]
    # s[0] not relevant either: back to the first run
    judged = {f[0]: True, f[1]: False, s[0]: False}
    assert query_order("move_to_front", rl, judged, params=P).tolist() == f[2:] + s[1:]


def test_move_to_front_sends_every_run_containing_a_non_relevant_pair_back():
    # A = [0, 1], B = [1, 2], C = [3]: pair 1 is not relevant -> A and B go back (keeping their
    # order), C is now first whatever the seeded line was.
    rl = lists([0, 1], [1, 2], [3])
    line = run_line(3, seed=0, query_key=0).tolist()
    order = query_order("move_to_front", rl, {1: False}, params=P).tolist()
    assert order[0] == 3
    a_b = [r for r in line if r != 2]
    expected_tail = [p for r in a_b for p in rl[r].tolist() if p != 1]
    assert order[1:] == list(dict.fromkeys(expected_tail))


def test_bandit_mm_picks_the_run_with_the_highest_posterior_mean():
    # A = [0, 1, 2], B = [3, 4, 5]; 0 relevant, 3 not:
    # A: Beta(1 + 1, 1 + 0), mean 2/3; B: Beta(1, 2), mean 1/3 -> A's next pair, 1
    rl = lists([0, 1, 2], [3, 4, 5])
    assert query_order("bandit", rl, {0: True, 3: False}, params=P).tolist() == [1, 2, 4, 5]
    assert query_order("bandit", rl, {0: False, 3: True}, params=P).tolist() == [4, 5, 1, 2]


def test_a_judged_pair_updates_every_run_that_contains_it():
    # A = [0, 1], B = [2, 0, 3], C = [4, 5]; pair 0 (picked for A) is not relevant.
    # A: Beta(1, 2) -> 1/3; B contains 0 too: Beta(1, 2) -> 1/3; C: Beta(1, 1) -> 1/2: C next.
    # Were B not updated it would tie C at 1/2.
    rl = lists([0, 1], [2, 0, 3], [4, 5])
    assert query_order("bandit", rl, {0: False}, params=P)[0] == 4


def test_bandit_non_stationary_discount_favours_recent_outcomes():
    # A = [0, 1, 2, 3] judged F, F, T; B = [4, 5, 6, 7] judged T, T, F; discount 0.5.
    # Weights by rank, deepest judged = 1: (0.25, 0.5, 1).
    # A: a = 1, b = 0.25 + 0.5 = 0.75 -> (1 + 1) / (2 + 1.75) = 0.533
    # B: a = 0.75, b = 1 -> 1.75 / 3.75 = 0.467  -> A (its last outcome was a success)
    # Stationary (discount 1): A = 2 / 5 = 0.4, B = 3 / 5 = 0.6 -> B.
    rl = lists([0, 1, 2, 3], [4, 5, 6, 7])
    judged = {0: False, 1: False, 2: True, 4: True, 5: True, 6: False}
    ns = StrategyParams(bandit_discount=0.5)
    assert query_order("bandit", rl, judged, params=ns).tolist() == [3, 7]
    stationary = StrategyParams(bandit_discount=1.0)
    assert query_order("bandit", rl, judged, params=stationary).tolist() == [7, 3]


def test_thompson_sampling_is_seeded_and_follows_the_evidence():
    # A: 8 relevant of 8 judged, B: 0 of 8 -> posteriors Beta(9, 1) and Beta(1, 9); a draw from
    # Beta(1, 9) beats one from Beta(9, 1) with probability ~ 1e-5: A's next pair every time.
    rl = lists(list(range(10)), list(range(10, 20)))
    judged = {**{p: True for p in range(8)}, **{p: False for p in range(10, 18)}}
    params = [StrategyParams(bandit_variant="thompson", seed=s) for s in range(20)]
    firsts = {int(query_order("bandit", rl, judged, params=p)[0]) for p in params}
    assert firsts == {8}
    # with no evidence the draws decide, differently for different seeds, reproducibly
    picks = [int(query_order("bandit", rl, {}, params=p)[0]) for p in params]
    assert set(picks) == {0, 10}
    assert picks == [int(query_order("bandit", rl, {}, params=p)[0]) for p in params]


def test_ap_prior_weights_hand_worked():
    # depth 2: H1 = 1, H2 = 1.5; rank 1: (1 + 1.5 - 1) / 4 = 0.375, rank 2: (1 + 1.5 - 1.5) / 4 = 0.25
    # runs [0, 1] and [1, 2]: w0 = 0.375 / 2, w1 = (0.25 + 0.375) / 2, w2 = 0.25 / 2
    assert np.allclose(ap_prior_weights(lists([0, 1], [1, 2])), [0.1875, 0.3125, 0.125])


def test_sampling_threshold_hand_worked():
    # weights above, no top stratum, rate 0.5 of 3 pairs = 1.5 expected: c * 0.625 = 1.5 -> c = 2.4
    # pi = (0.45, 0.75, 0.3), all below 1
    w = np.array([0.1875, 0.3125, 0.125])
    assert sampling_threshold(w, np.zeros(3, bool), 0.5) == pytest.approx(2.4)
    pi = inclusion_probabilities(lists([0, 1], [1, 2]), params=StrategyParams(sample_rate=0.5))
    assert np.allclose(pi, [0.45, 0.75, 0.3])


def test_sampling_threshold_hand_worked_with_a_capped_pair():
    # w = (1, 0.1, 0.1), rate 0.5 of 3 pairs = 1.5 expected. Uncapped, c = 1.5 / 1.2 = 1.25 would give
    # the first pair 1.25 > 1, so it is capped: 1 + c * 0.2 = 1.5 -> c = 2.5, pi = (1, 0.25, 0.25)
    w = np.array([1.0, 0.1, 0.1])
    c = sampling_threshold(w, np.zeros(3, bool), 0.5)
    assert c == pytest.approx(2.5)
    assert np.allclose(np.minimum(1.0, c * w), [1.0, 0.25, 0.25])
    # the top stratum and known pairs leave the count: 4 pairs, pair 3 known, pair 0 in the top
    # stratum; rate 0.5 of 3 counted = 1.5, minus 1 for the top: 0.5 = c * (0.1 + 0.1) -> c = 2.5
    w4 = np.array([1.0, 0.1, 0.1, 5.0])
    assert sampling_threshold(w4, np.array([True, False, False, False]), 0.5,
                              np.array([False, False, False, True])) == pytest.approx(2.5)


def _threshold_by_bisection(w, need):
    lo, hi = 0.0, float(1.0 / w.min())
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if np.minimum(1.0, mid * w).sum() < need else (lo, mid)
    return hi


def test_sampling_threshold_solves_the_expected_size_exactly():
    # Against a plain bisection of f(c) = sum min(1, c w) = need, on weights with ties and wide ranges.
    rng = np.random.default_rng(7)
    for trial in range(300):
        m = int(rng.integers(1, 40))
        w = [rng.uniform(0.01, 1.0, m), np.ones(m), rng.integers(1, 4, m).astype(float),
             np.exp(rng.normal(0, 3, m))][trial % 4]
        rate = float(rng.uniform(0.01, 0.99))
        c = sampling_threshold(w, np.zeros(m, bool), rate)
        assert np.minimum(1.0, c * w).sum() == pytest.approx(rate * m, rel=1e-9)
        assert c == pytest.approx(_threshold_by_bisection(w, rate * m), rel=1e-9)


def test_sampled_design_top_stratum_expected_size_and_prefixes():
    rng = np.random.default_rng(3)
    rl = [rng.permutation(40)[:10] for _ in range(5)]
    n = len(set(np.concatenate(rl).tolist()))
    rl = [np.array([sorted(set(np.concatenate(rl).tolist())).index(p) for p in r]) for r in rl]
    params = StrategyParams(sample_rate=0.4, top_stratum_depth=1)
    pi = inclusion_probabilities(rl, params=params)
    depth = pair_depths(rl)
    assert np.all(pi[depth <= 1] == 1.0) and np.all(pi[depth > 1] < 1.0)
    assert pi.sum() == pytest.approx(0.4 * n)                      # expected sample size
    order = query_order("sampled", rl, {}, params=params)
    top = np.flatnonzero(depth <= 1)
    assert set(order[: len(top)].tolist()) == set(top.tolist())     # top stratum first
    design = sampled_design(rl, params=params)
    # the sample is exactly the pairs whose key u / w is below c (Poisson sampling)
    assert set(order[len(top):].tolist()) == set(np.flatnonzero((depth > 1) & (design["key"] < design["c"])).tolist())
    # a prefix is a Poisson sample with c = key of the first pair not taken
    k = len(top) + 2
    prefix_pi = prefix_inclusion_probabilities(rl, k, params=params)
    c = design["key"][order[k]]
    assert np.allclose(prefix_pi[depth > 1], np.minimum(1.0, c * design["weights"][depth > 1]))
    assert np.allclose(prefix_inclusion_probabilities(rl, len(order), params=params), pi)
    # pairs taken in the prefix all have key <= c: the prefix is {key < c} exactly
    assert np.all(design["key"][order[len(top):k]] < c)
    # other strategies judge everything
    assert np.all(inclusion_probabilities(rl, params=params, strategy="bandit") == 1.0)


def test_sampled_order_drops_judged_pairs():
    rl = lists([0, 1, 2, 3], [4, 5, 6, 7])
    params = StrategyParams(sample_rate=0.5)
    order = query_order("sampled", rl, {}, params=params)
    assert query_order("sampled", rl, {int(order[0]): False}, params=params).tolist() == order[1:].tolist()


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_orders_are_deterministic_and_exclude_judged(strategy):
    rng = np.random.default_rng(0)
    rl = [rng.permutation(12)[:6] for _ in range(3)]
    judged = {int(p): bool(rng.random() < 0.3) for p in rng.permutation(12)[:4]}
    pi = (inclusion_probabilities(rl, params=P, query_key=5, n_pairs=12, strategy="active",
                                  confidence=np.linspace(0, 1, 12)) if strategy == "active" else None)
    a = query_order(strategy, rl, judged, params=P, query_key=5, n_pairs=12, inclusion=pi)
    b = query_order(strategy, rl, dict(judged), params=P, query_key=5, n_pairs=12, inclusion=pi)
    assert a.tolist() == b.tolist()
    assert not set(a.tolist()) & set(judged)
    assert len(set(a.tolist())) == len(a)
    if strategy not in ("sampled", "active"):
        assert sorted(a.tolist() + list(judged)) == list(range(12))


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="unknown strategy"):
        query_order("random", lists([0]), {}, params=P)
    with pytest.raises(ValueError, match="bandit_variant"):
        query_order("bandit", lists([0]), {}, params=StrategyParams(bandit_variant="ucb"))
    with pytest.raises(ValueError, match="n_pairs"):
        query_order("bandit", lists([0, 5]), {}, params=P, n_pairs=3)
    with pytest.raises(ValueError, match="outside"):
        query_order("bandit", lists([0, 1]), {7: True}, params=P)


def _splitmix_reference(x: int) -> int:
    """SplitMix64's output for state x, written from its definition (Steele, Lea & Flood 2014)."""
    m = (1 << 64) - 1
    z = (x + 0x9E3779B97F4A7C15) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    return z ^ (z >> 31)


def _seeded_uniform_reference(seed: int, query_key: int, index: int, tag: int, extra: int) -> float:
    m = (1 << 64) - 1
    h = _splitmix_reference(tag)
    for v in (seed, query_key, index, extra):
        h = _splitmix_reference(h ^ (v & m))
    return (h >> 11) / 2.0 ** 53


def test_splitmix_matches_the_published_first_output_for_state_zero():
    from annotation.analysis.judging.strategies import _splitmix, _splitmix_int

    assert _splitmix_int(0) == 0xE220A8397B1DCDAF == _splitmix_reference(0)
    assert int(_splitmix(np.array([0], dtype=np.uint64))[0]) == 0xE220A8397B1DCDAF


def test_seeded_uniform_one_query_and_many_queries_draw_the_same_numbers_as_the_definition():
    # The label hook passes one seed and query key (hashed once as Python ints), the simulation
    # arrays of them: both must give the definition's numbers, negative and 63-bit values included.
    rng = np.random.default_rng(5)
    for seed, key in [(0, 0), (7, 123456), (-3, 2**63 - 1), (2**62 + 11, -(2**63))]:
        index = np.array([0, 1, 5, -1, 2**40], dtype=np.int64)
        for tag, extra in [(1, 0), (4, 17), (3, -2)]:
            want = [_seeded_uniform_reference(seed, key, int(i), tag, extra) for i in index]
            assert seeded_uniform(seed, key, index, tag, extra=extra).tolist() == want
            many = seeded_uniform(np.array([[seed], [seed]]), np.array([[key], [key]]), index, tag, extra=extra)
            assert many.shape == (2, 5) and many[0].tolist() == want and many[1].tolist() == want
    seeds, keys = rng.integers(-(2**63), 2**63 - 1, size=20), rng.integers(0, 10**9, size=20)
    for seed, key in zip(seeds.tolist(), keys.tolist()):
        assert seeded_uniform(seed, key, np.arange(3), 2).tolist() == [
            _seeded_uniform_reference(seed, key, i, 2, 0) for i in range(3)]
