"""The "active" judging design: Neyman scores from a machine judge's beliefs and the pairs' leverage
on the runs' C@K, one allocation over the pool mixed with the uniform design, inclusion
probabilities, and the unbiasedness of the estimates under it (issue 25)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from annotation.analysis.judging.estimates import estimate_metrics
from annotation.analysis.judging.strategies import (StrategyParams, active_design, active_pi, active_pool_scale,
                                                    active_scale, active_weights, inclusion_probabilities,
                                                    prefix_inclusion_probabilities, query_order, seeded_uniform)
from annotation.analysis.machine_agreement import relevance_probability


def test_weights_hand_worked():
    # run 0 lists pairs 0, 1; run 1 lists 1, 2 (C@K at the pool depth, K = 2). f = 0.5, 0.9 and no
    # verdict (counted as 0.5). Leverage of a pair in a run: the product of the run's other (1 - f).
    # pair 0: sd sqrt(0.25) = 0.5, run 0's other pair 1: 1 - 0.9 = 0.1            -> a = 0.05
    # pair 1: sd sqrt(0.09) = 0.3, run 0: 1 - 0.5, run 1: 1 - 0.5: sqrt(0.25 + 0.25) -> a = 0.3 sqrt(0.5)
    # pair 2: sd 0.5, run 1's other pair 1: 0.1                                      -> a = 0.05
    w = active_weights([np.array([0, 1]), np.array([1, 2])], 3, [0.5, 0.9, np.nan])
    assert w == pytest.approx([0.05, 0.3 * np.sqrt(0.5), 0.05], abs=1e-15)
    # pair 2 known relevant: run 1 is settled (no leverage there), pair 2 scores 0; a certain
    # verdict (f = 1 on pair 0) scores 0 and takes every other pair of its runs' leverage
    w = active_weights([np.array([0, 1]), np.array([1, 2])], 3, [0.5, 0.9, np.nan], known=[2])
    assert w == pytest.approx([0.05, 0.3 * 0.5, 0.0], abs=1e-15)
    w = active_weights([np.array([0, 1]), np.array([1, 2])], 3, [1.0, 0.9, 0.5])
    assert w == pytest.approx([0.0, 0.3 * 0.5, 0.05], abs=1e-15)


def test_pool_allocation_hand_worked():
    # Neyman scores a = 0, 1, 3 (mean 4/3), uniform share 1/4: relative weights
    # 0.75 a / mean + 0.25 = 0.25, 0.8125, 1.9375 (sum 3).
    # 1.5 judgments: none capped, c = 1.5 / 3 = 0.5: c0 = 0.125, c1 = 0.5 * 0.75 / (4/3) = 0.28125
    c0, c1 = active_scale([0.0, 1.0, 3.0], 0.5, n_counted=3, n_top=0, uniform_share=0.25)
    assert (c0, c1) == pytest.approx((0.125, 0.28125), abs=1e-12)
    assert active_pi([0.0, 1.0, 3.0], (c0, c1)) == pytest.approx([0.125, 0.40625, 0.96875], abs=1e-12)
    # 2 judgments: the third capped at 1, 1 + c (0.25 + 0.8125) = 2, c = 16/17: c0 = 4/17, c1 = 9/17
    c0, c1 = active_scale([0.0, 1.0, 3.0], 0.5, n_counted=4, n_top=0, uniform_share=0.25)
    assert (c0, c1) == pytest.approx((4 / 17, 9 / 17), abs=1e-12)
    assert active_pi([0.0, 1.0, 3.0], (c0, c1)) == pytest.approx([4 / 17, 13 / 17, 1.0], abs=1e-12)
    # a top-stratum pair counts against the budget: 0.5 x 5 - 1 = 1.5 left -> the first case
    assert active_scale([0.0, 1.0, 3.0], 0.5, n_counted=5, n_top=1, uniform_share=0.25) == \
        pytest.approx((0.125, 0.28125), abs=1e-12)
    with pytest.raises(ValueError, match="top stratum alone"):
        active_scale([0.0, 1.0], 0.1, n_counted=10, n_top=1, uniform_share=0.25)


def test_one_allocation_over_the_pool_not_per_query():
    # query A: its runs are undecided (machine unsure); query B: both runs' first pair is surely
    # relevant, so B's other pairs cannot move any run's C@K: B gets only the uniform share
    runs = [np.array([0, 1, 2]), np.array([2, 3, 0])]
    conf_a = np.array([0.4, 0.5, 0.3, 0.6])
    conf_b = np.array([1.0, 0.5, 0.3, 0.6])
    runs_b = [np.array([0, 1, 2]), np.array([0, 3, 2])]
    params = StrategyParams(sample_rate=0.5, active_uniform_share=0.2)
    scale = active_pool_scale([(runs, 4, conf_a, None), (runs_b, 4, conf_b, None)], params=params)
    a = np.concatenate([active_weights(runs, 4, conf_a), active_weights(runs_b, 4, conf_b)])
    assert scale == pytest.approx(active_scale(a, 0.5, n_counted=8, n_top=0, uniform_share=0.2), abs=1e-15)
    pi_a = active_design(runs, conf_a, params=params, n_pairs=4, scale=scale)["pi"]
    pi_b = active_design(runs_b, conf_b, params=params, n_pairs=4, scale=scale)["pi"]
    assert pi_a.sum() + pi_b.sum() == pytest.approx(4.0, abs=1e-9)   # the pool's budget, not each query's
    assert pi_b == pytest.approx(np.full(4, scale[0]), abs=1e-15)      # B: the uniform share only
    assert pi_a.sum() > 2.0 > pi_b.sum()


def test_relevance_probability_reads_either_score_convention():
    # verdict relevant, score 0.8 (a probability) or 0.2 (read as its distance from 0.5): 0.8;
    # not relevant with 0.9 (confidence in "not relevant") -> 0.1; no score: certain.
    got = relevance_probability([True, True, False, False, True, False], [0.8, 0.2, 0.9, 0.3, np.nan, np.nan])
    assert got == pytest.approx([0.8, 0.8, 0.1, 0.3, 1.0, 0.0])


def _world():
    runs = [np.array([0, 1, 2, 3]), np.array([4, 0, 5, 1]), np.array([2, 6, 7])]
    confidence = np.array([0.95, 0.5, 0.7, np.nan, 0.05, 0.4, 0.99, 0.01])
    return runs, confidence


def test_inclusion_probabilities_reach_the_sample_rate_with_every_pair_above_the_uniform_share():
    runs, confidence = _world()
    params = StrategyParams(sample_rate=0.6, top_stratum_depth=1, active_uniform_share=0.1)
    d = active_design(runs, confidence, params=params, query_key=3, n_pairs=8)
    pi = d["pi"]
    assert np.all((pi > 0) & (pi <= 1))
    assert pi[[0, 4, 2]] == pytest.approx(1.0)            # rank 1 of some run: the top stratum
    rest = np.setdiff1d(np.arange(8), [0, 2, 4])
    c0, c1 = d["scale"]
    assert np.all(pi[rest] >= c0 - 1e-15) and c0 > 0 and c1 > 0
    assert pi.sum() == pytest.approx(0.6 * 8, abs=1e-6)   # expected sample size
    w = active_weights(runs, 8, confidence)
    assert pi[rest] == pytest.approx(np.minimum(1.0, c0 + c1 * w[rest]), abs=1e-15)
    # pairs worth more get larger pi (monotone in w up to the cap)
    order = rest[np.argsort(w[rest])]
    assert np.all(np.diff(pi[order]) >= -1e-12)
    # the sample is the Poisson draw u_i < pi_i of the seeded uniforms, judged in increasing u / pi
    u = seeded_uniform(params.seed, 3, np.arange(8), 3)
    sample = [int(i) for i in d["order"] if i not in (0, 2, 4)]
    assert set(sample) == {int(i) for i in rest if u[i] < pi[i]}
    assert sample == sorted(sample, key=lambda i: u[i] / pi[i])
    # the stored pi give the same order, with no machine verdicts
    assert query_order("active", runs, {}, params=params, query_key=3, n_pairs=8, inclusion=pi).tolist() == \
        d["order"].tolist()
    assert inclusion_probabilities(runs, params=params, query_key=3, n_pairs=8, strategy="active",
                                   confidence=confidence) == pytest.approx(pi)


def test_a_prefix_of_the_active_order_is_a_poisson_sample_too():
    runs, confidence = _world()
    params = StrategyParams(sample_rate=0.5, top_stratum_depth=0, active_uniform_share=0.05)
    d = active_design(runs, confidence, params=params, query_key=1, n_pairs=8)
    u = seeded_uniform(params.seed, 1, np.arange(8), 3)
    for taken in range(len(d["order"]) + 1):
        pi = prefix_inclusion_probabilities(runs, taken, params=params, query_key=1, n_pairs=8, inclusion=d["pi"])
        assert np.all(pi <= d["pi"] + 1e-12)
        if d["n_top"] < taken < len(d["order"]):   # pairs at pi = 1 (capped here) come first
            assert {i for i in range(8) if u[i] < pi[i]} == set(d["order"][:taken].tolist())


def test_bad_input_is_refused():
    runs, confidence = _world()
    with pytest.raises(ValueError, match="inclusion probabilities"):
        query_order("active", runs, {}, params=StrategyParams(), n_pairs=8)
    with pytest.raises(ValueError, match="probabilities in"):
        active_weights(runs, 8, np.full(8, 1.5))
    with pytest.raises(ValueError, match="active_uniform_share"):
        active_design(runs, confidence, params=StrategyParams(active_uniform_share=0.0), n_pairs=8)
    with pytest.raises(ValueError, match="confidence"):
        inclusion_probabilities(runs, params=StrategyParams(), n_pairs=8, strategy="active")


def test_estimates_are_unbiased_under_the_active_design_by_exact_enumeration():
    # One query, 7 pooled pairs of two runs, a known original "k"; every one of the 2^7 samples
    # of the active design weighed by its probability: E[estimate] = the full-pool value to 1e-12.
    runs = [np.array([0, 1, 2, 3, 4]), np.array([5, 0, 6, 2, 7])]
    items = [f"i{j}" for j in range(8)]
    confidence = np.array([0.9, 0.5, 0.2, 0.6, np.nan, 0.1, 0.45, 0.0])  # item 7 is the original
    params = StrategyParams(sample_rate=0.5, top_stratum_depth=0, active_uniform_share=0.1)
    pi = active_design(runs, confidence, params=params, n_pairs=8, known=[7])["pi"]
    assert np.all((pi > 0) & (pi <= 1)) and pi[:7].min() < 1
    rankings = {f"r{r}": {"q": [items[i] for i in lst]} for r, lst in enumerate(runs)}
    truth = {("q", items[j]): rel for j, rel in enumerate([True, False, True, False, True, True, False])}
    known = {"q": {items[7]}}
    measures = ("C@1", "C@3", "AP", "nDCG@10")
    full = {(e.run, e.measure): e.estimate for e in
            estimate_metrics(rankings, truth, {}, known_relevant=known, measures=measures).runs}
    pairs = sorted(truth)
    p = {pair: float(pi[items.index(pair[1])]) for pair in pairs}
    mean = dict.fromkeys(full, 0.0)
    total = 0.0
    for mask in itertools.product((0, 1), repeat=len(pairs)):
        prob = float(np.prod([p[x] if t else 1 - p[x] for t, x in zip(mask, pairs)]))
        total += prob
        judged = {x: truth[x] for t, x in zip(mask, pairs) if t}
        for e in estimate_metrics(rankings, judged, {x: p[x] for x in judged}, known_relevant=known,
                                  measures=measures).runs:
            mean[(e.run, e.measure)] += prob * e.estimate
    assert total == pytest.approx(1.0, abs=1e-12)
    for key, value in full.items():
        assert mean[key] == pytest.approx(value, abs=1e-12), key
