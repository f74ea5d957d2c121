import math

import numpy as np
import pytest

from annotation.analysis import sample_estimates as S


def test_draw_sample_is_seeded_without_replacement():
    a = S.draw_sample(1000, 100, seed=4)
    assert a.tolist() == S.draw_sample(1000, 100, seed=4).tolist()
    assert a.tolist() != S.draw_sample(1000, 100, seed=5).tolist()
    assert np.unique(a).size == 100 and a.min() >= 0 and a.max() < 1000
    assert np.all(np.diff(a) > 0)


def test_required_sample_size_by_hand():
    # z = 1.959964, p = 0.5, h = 0.05: n0 = 1.959964^2 * 0.25 / 0.0025 = 384.146
    # N = 10,000: n = n0 N / (n0 + N - 1) = 384.146 * 10000 / 10383.146 = 369.97 -> 370
    r = S.required_sample_size(population_size=10_000, half_width=0.05)
    assert r["n0"] == pytest.approx(384.1459, abs=1e-3)
    assert r["n_required"] == 370
    assert r["saved_pairs"] == 9630
    assert r["saved_fraction"] == pytest.approx(0.963)
    # p = 0.1, h = 0.02, 90%: z = 1.644854; n0 = 2.705543 * 0.09 / 0.0004 = 608.747
    # N = 2,000: n = 608.747 * 2000 / 2607.747 = 466.88 -> 467
    r = S.required_sample_size(population_size=2000, half_width=0.02, confidence=0.90, p=0.1)
    assert r["n_required"] == 467
    # A tiny pool needs (almost) everything.
    assert S.required_sample_size(population_size=50, half_width=0.01)["n_required"] == 50
    # The inverse gives back the target half-width at the (unrounded) n.
    hw = S.half_width_for_sample_size(sample_size=370, population_size=10_000)
    assert hw == pytest.approx(0.05, abs=2e-5) and hw <= 0.05


def test_wilson_fpc_limits():
    # Full census: exact.
    assert S.wilson_fpc_interval(30, 100, 100) == (0.3, 0.3)
    # FPC narrows the interval relative to an (almost) infinite population.
    lo1, hi1 = S.wilson_fpc_interval(30, 100, 10**9)
    lo2, hi2 = S.wilson_fpc_interval(30, 100, 200)
    assert hi2 - lo2 < hi1 - lo1
    # Without FPC it is the textbook Wilson interval: 30/100 -> [0.2189, 0.3958]
    assert lo1 == pytest.approx(0.21886, abs=1e-4) and hi1 == pytest.approx(0.39577, abs=1e-4)
    # Zero successes: lower end 0, upper end positive.
    lo, hi = S.wilson_fpc_interval(0, 50, 1000)
    assert lo == 0.0 and 0.0 < hi < 0.1
    assert all(math.isnan(x) for x in S.wilson_fpc_interval(0, 0, 10))


def _simulated_pool(rng, n_pairs=3000, n_runs=3):
    is_original = rng.random(n_pairs) < 0.1
    relevant = is_original | (rng.random(n_pairs) < 0.2)
    in_top = rng.random((n_pairs, n_runs)) < np.array([0.4, 0.3, 0.5])[:n_runs]
    return is_original, relevant, in_top


def test_coverage_by_simulation():
    # One fixed pool (known truth); 300 independent samples; the 95% intervals must cover the
    # true pool-wide false-negative count and each run's true precision about 95% of the time.
    is_original, relevant, in_top = _simulated_pool(np.random.default_rng(123))
    true_fn = int((relevant & ~is_original).sum())
    true_prec = [(relevant & in_top[:, j]).sum() / in_top[:, j].sum() for j in range(3)]
    n_seeds, n = 300, 400
    cover_fn = 0
    cover_run = np.zeros(3)
    for seed in range(n_seeds):
        idx = S.draw_sample(is_original.size, n, seed=seed)
        fn = S.estimate_false_negatives(is_original=is_original, sample_idx=idx, sample_relevant=relevant[idx])
        cover_fn += fn.total_low <= true_fn <= fn.total_high
        est = S.estimate_run_precision(
            in_run_topk=in_top, is_original=is_original, sample_idx=idx, sample_relevant=relevant[idx],
            run_names=["a", "b", "c"],
        )
        for j, name in enumerate("abc"):
            cover_run[j] += est[name]["precision_low"] <= true_prec[j] <= est[name]["precision_high"]
    assert 0.88 <= cover_fn / n_seeds <= 0.99
    for j in range(3):
        assert 0.88 <= cover_run[j] / n_seeds <= 0.99, (j, cover_run[j] / n_seeds)


def test_coverage_small_population_heavy_sampling():
    # FPC matters when the sample is a large share of the population (here 60%).
    rng = np.random.default_rng(9)
    N = 200
    truth = rng.random(N) < 0.15
    covered = 0
    for seed in range(300):
        idx = S.draw_sample(N, 120, seed=seed)
        lo, hi = S.wilson_fpc_interval(int(truth[idx].sum()), 120, N)
        covered += lo <= truth.mean() <= hi
    assert 0.88 <= covered / 300 <= 0.99


def test_run_precision_by_hand():
    # 6 pairs. Run r has pairs 0..3: pair 0 original (known relevant), 1..3 unknown.
    # Sample: pairs 1, 2, 4 with labels rel, not rel, rel. In r's domain: 1 of 2 sampled relevant.
    # M_r = 3 -> estimated 1.5 false negatives; precision = (1 + 3 * 0.5)/4 = 0.625.
    in_top = np.array([[1], [1], [1], [1], [0], [0]], dtype=bool)
    is_original = np.array([1, 0, 0, 0, 0, 0], dtype=bool)
    est = S.estimate_run_precision(
        in_run_topk=in_top, is_original=is_original, sample_idx=[1, 2, 4], sample_relevant=[1, 0, 1],
        run_names=["r"],
    )["r"]
    assert est["n_pairs"] == 4 and est["n_original"] == 1 and est["n_sampled"] == 2
    assert est["precision"] == pytest.approx(0.625)
    assert est["false_negatives"] == pytest.approx(1.5)
    # bounds: at least the 1 relevant seen, at most all but the 1 non-relevant seen
    assert est["false_negatives_low"] >= 1 - 1e-12 and est["false_negatives_high"] <= 2 + 1e-12
    assert est["precision_low"] <= 0.625 <= est["precision_high"]
    # pool-wide: non-original pairs 1..5 (5), sampled 3, 2 relevant -> 5 * 2/3
    fn = S.estimate_false_negatives(is_original=is_original, sample_idx=[1, 2, 4], sample_relevant=[1, 0, 1])
    assert fn.total == pytest.approx(10 / 3)
    assert fn.to_dict()["population_size"] == 5


def test_sample_validation():
    with pytest.raises(ValueError):
        S.estimate_false_negatives(is_original=[0, 0], sample_idx=[0, 0], sample_relevant=[1, 1])
    with pytest.raises(ValueError):
        S.draw_sample(5, 6, seed=0)
