"""The "active" judging design: weights from a machine judge's uncertainty and the runs'
disagreement, inclusion probabilities, and the unbiasedness of the estimates under it (issue 25)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from annotation.analysis.judging.estimates import estimate_metrics
from annotation.analysis.judging.strategies import (StrategyParams, active_design, active_weights,
                                                    inclusion_probabilities, prefix_inclusion_probabilities,
                                                    query_order, seeded_uniform)
from annotation.analysis.machine_agreement import relevance_probability


def test_weights_hand_worked():
    # run 0 ranks pairs 0, 1; run 1 ranks 1, 2. Gains 1 at rank 1, 1/log2(3) = 0.6309298 at rank 2.
    # pair 0: machine unsure (f 0.5, uncertainty 1), disagreement 1 - 0 = 1 -> w = 1
    # pair 1: f 0.9 (uncertainty 0.2), disagreement 1 - 0.6309298 -> w = (0.2 + 0.3690702) / 2
    # pair 2: no verdict (uncertainty 1), disagreement 0.6309298 -> w = (1 + 0.6309298) / 2
    w = active_weights([np.array([0, 1]), np.array([1, 2])], 3, [0.5, 0.9, np.nan])
    assert w == pytest.approx([1.0, 0.2845351, 0.8154649], abs=1e-7)


def test_relevance_probability_reads_either_score_convention():
    # verdict relevant, score 0.8 (a probability) or 0.2 (read as its distance from 0.5): 0.8;
    # not relevant with 0.9 (confidence in "not relevant") -> 0.1; no score: certain.
    got = relevance_probability([True, True, False, False, True, False], [0.8, 0.2, 0.9, 0.3, np.nan, np.nan])
    assert got == pytest.approx([0.8, 0.8, 0.1, 0.3, 1.0, 0.0])


def _world():
    runs = [np.array([0, 1, 2, 3]), np.array([4, 0, 5, 1]), np.array([2, 6, 7])]
    confidence = np.array([0.95, 0.5, 0.7, np.nan, 0.05, 0.4, 0.99, 0.01])
    return runs, confidence


def test_inclusion_probabilities_are_floored_capped_and_reach_the_sample_rate():
    runs, confidence = _world()
    params = StrategyParams(sample_rate=0.6, top_stratum_depth=1, min_inclusion=0.1)
    d = active_design(runs, confidence, params=params, query_key=3, n_pairs=8)
    pi = d["pi"]
    assert np.all((pi > 0) & (pi <= 1))
    assert pi[[0, 4, 2]] == pytest.approx(1.0)            # rank 1 of some run: the top stratum
    rest = np.setdiff1d(np.arange(8), [0, 2, 4])
    assert np.all(pi[rest] >= 0.1 - 1e-12)
    assert pi.sum() == pytest.approx(0.6 * 8, abs=1e-6)   # expected sample size
    w = active_weights(runs, 8, confidence)
    # more uncertain / more disputed pairs get larger pi (monotone in w off the floor and the cap)
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
    params = StrategyParams(sample_rate=0.5, top_stratum_depth=0, min_inclusion=0.05)
    d = active_design(runs, confidence, params=params, query_key=1, n_pairs=8)
    u = seeded_uniform(params.seed, 1, np.arange(8), 3)
    for taken in range(len(d["order"]) + 1):
        pi = prefix_inclusion_probabilities(runs, taken, params=params, query_key=1, n_pairs=8, inclusion=d["pi"])
        assert np.all(pi <= d["pi"] + 1e-12)
        if 0 < taken < len(d["order"]):
            assert {i for i in range(8) if u[i] < pi[i]} == set(d["order"][:taken].tolist())


def test_bad_input_is_refused():
    runs, confidence = _world()
    with pytest.raises(ValueError, match="inclusion probabilities"):
        query_order("active", runs, {}, params=StrategyParams(), n_pairs=8)
    with pytest.raises(ValueError, match="probabilities in"):
        active_weights(runs, 8, np.full(8, 1.5))
    with pytest.raises(ValueError, match="min_inclusion"):
        active_design(runs, confidence, params=StrategyParams(min_inclusion=0.0), n_pairs=8)
    with pytest.raises(ValueError, match="confidence"):
        inclusion_probabilities(runs, params=StrategyParams(), n_pairs=8, strategy="active")


def test_estimates_are_unbiased_under_the_active_design_by_exact_enumeration():
    # One query, 7 pooled pairs of two runs, a known original "k"; every one of the 2^7 samples
    # of the active design weighed by its probability: E[estimate] = the full-pool value to 1e-12.
    runs = [np.array([0, 1, 2, 3, 4]), np.array([5, 0, 6, 2, 7])]
    items = [f"i{j}" for j in range(8)]
    confidence = np.array([0.9, 0.5, 0.2, 0.6, np.nan, 0.1, 0.45, 0.0])  # item 7 is the original
    params = StrategyParams(sample_rate=0.5, top_stratum_depth=0, min_inclusion=0.1)
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
