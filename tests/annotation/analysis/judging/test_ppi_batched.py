"""The PPI++ report computes every query at once (C@K over padded top-K arrays, AP and nDCG through
one polynomial walk per group of equal shapes, judging/ppi.py). Checked here against the direct
per-query computation the module defines the estimator by (each query's corners through
``_expansion``, each query's C@K through ``c_at_k_moments`` over all its items), on random pools:
several runs of different lengths, runs missing queries, original positives, pairs judged with
pi = 1 and sampled with pi < 1, and a query with more sampled pairs than the exact variance takes."""
import numpy as np
import pytest

from annotation.analysis.judging import ppi as mod
from annotation.analysis.judging.ppi import c_at_k_floor, c_at_k_hull, c_at_k_moments, floored_se, ppi_estimates

MEASURES = ("C@1", "C@3", "C@10", "AP", "nDCG@5")


def random_pool(seed: int):
    rng = np.random.default_rng(seed)
    rankings = {f"run{r}": {} for r in range(3)}
    predictions, judged, inclusion, known = {}, {}, {}, {}
    for q in range(25):
        query = f"q{q}"
        clips = [f"c{c}" for c in range(int(rng.integers(3, 16)))]
        for run in rankings:
            if rng.random() < 0.15:
                continue                                   # this run has no list for the query
            depth = int(rng.integers(1, len(clips) + 1))
            rankings[run][query] = list(rng.permutation(clips)[:depth])
        if rng.random() < 0.3:
            known[query] = {clips[0]}
        many = q == 0                                      # more sampled pairs than the exact variance
        for clip in clips:
            predictions[(query, clip)] = float(rng.random())
            draw = rng.random()
            if many or draw < 0.4:
                pi = float(rng.uniform(0.2, 0.9))
                inclusion[(query, clip)] = pi
                judged[(query, clip)] = bool(rng.random() < 0.4)
            elif draw < 0.55:
                judged[(query, clip)] = bool(rng.random() < 0.4)   # pi = 1
    rankings[f"run{0}"]["q0"] = [f"c{c}" for c in range(12)]
    for c in range(12):
        predictions[("q0", f"c{c}")] = float(rng.random())
        inclusion[("q0", f"c{c}")] = 0.5
        judged[("q0", f"c{c}")] = bool(c % 3 == 0)
    return rankings, predictions, judged, inclusion, known


def direct(rankings, predictions, judged, inclusion, known, lam):
    """Per-query reference: (run, measure) -> (estimate, se, low, high) at a fixed lambda."""
    runs, queries, prepared = mod._prepare(rankings, predictions, judged, inclusion, known,
                                           float(np.mean(list(predictions.values()))))
    n_q, n_r, grid = len(queries), len(runs), np.asarray([lam])
    all_f = np.concatenate([qd.f[qd.sampled] for qd, _ in prepared.values()])
    all_pi = np.concatenate([qd.pi[qd.sampled] for qd, _ in prepared.values()])
    out = {}
    for name in MEASURES:
        kind, k = mod._parse_measure(name)
        est, var = np.zeros((1, n_q, n_r)), np.zeros((1, n_q, n_r))
        floor, jump_sum = np.zeros((1, n_q, n_r)), np.zeros((1, n_q, n_r))
        settled, jump_count = np.ones((n_q, n_r), dtype=bool), np.zeros((n_q, n_r))
        for qi, q in enumerate(queries):
            qd = prepared[q][0]
            x, v = mod._rectified(qd, lam)
            if kind != "C":
                e, c, _ = mod._expansion(kind, k, qd.lists, x, v)
                est[0, qi], var[0, qi] = e, np.diag(c)
                continue
            member = np.zeros((n_r, 1, len(x)), dtype=bool)
            for r, pos in enumerate(qd.lists):
                if pos is None:
                    continue
                top = pos[:k]
                member[r, 0, top] = True
                settled[qi, r] = bool((qd.certain[top] & (qd.y[top] > 0)).any() or qd.certain[top].all())
                drawn = top[qd.sampled[top]]
                jump_count[qi, r] = drawn.size
                jump_sum[0, qi, r] = ((1.0 - lam * qd.f[drawn]) / qd.pi[drawn]).sum()
            e, c = c_at_k_moments(x[None, None], v[None, None], member, full=False)
            est[0, qi], var[0, qi] = e[0, 0], c[0, 0]
            guess = np.where(qd.sampled | qd.certain, qd.y, qd.f)
            weight = np.where(qd.sampled, (1.0 - qd.pi) / qd.pi ** 2, 0.0)
            floor[:, qi] = c_at_k_floor(qd.f[None], guess[None], weight[None], member, grid)[:, 0]
        means = est.sum(axis=1) / n_q
        if kind == "C":
            fallback = np.asarray([((1.0 - lam * all_f) / all_pi).mean()])
            low, high = c_at_k_hull(est, var, settled, jump_sum, np.broadcast_to(jump_count, jump_sum.shape),
                                    fallback, n_q, 0.95, floor)
            se = floored_se(var, floor, n_q)
        else:
            _, se, half = mod.tune(means, var, n_q, 0.95)
            low, high = means - half, means + half
        for r, run in enumerate(runs):
            out[(run, name)] = (means[0, r], se[0, r], low[0, r], high[0, r])
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("lam", [0.0, 0.6])
def test_report_equals_the_direct_per_query_computation(seed, lam):
    pool = random_pool(seed)
    report = ppi_estimates(*pool[:4], known_relevant=pool[4], measures=MEASURES, fixed_lambda=lam)
    reference = direct(*pool, lam)
    assert len(report.runs) == len(reference)
    for e in report.runs:
        assert (e.estimate, e.se, e.ci_low, e.ci_high) == pytest.approx(reference[(e.run, e.measure)], abs=1e-12), \
            (e.run, e.measure)
    # at lambda > 0 every sampled pair of q0 has a residual: more than the exact variance takes
    assert ("first_order_variance" in report.conventions) == (lam > 0)


def test_batched_expansions_equal_one_query_at_a_time():
    """Random queries of every shape: same estimates and covariances as _expansion, to 1e-12."""
    rng = np.random.default_rng(9)
    for kind, k in (("AP", None), ("nDCG", 4), ("P", 3)):
        cases = []
        for _ in range(60):
            n = int(rng.integers(1, 9))
            lists = [None if rng.random() < 0.2 else rng.permutation(n)[:int(rng.integers(0, n + 1))]
                     for _ in range(2)]
            x = rng.uniform(-0.5, 2.0, n)
            v = np.where(rng.random(n) < 0.4, rng.uniform(0.0, 1.5, n), 0.0)
            cases.append((lists, x, v))
        for (lists, x, v), (e, c, ok) in zip(cases, mod._expansions(kind, k, cases)):
            e0, c0, ok0 = mod._expansion(kind, k, lists, x, v)
            np.testing.assert_allclose(e, e0, atol=1e-12, rtol=0)
            np.testing.assert_allclose(c, c0, atol=1e-12, rtol=0)
            assert ok == ok0


def test_rare_hit_widening_hand_worked():
    """Ten queries alike: the run lists a (a hole, drawn with pi = 0.5, judged not relevant) then b
    (relevant in the release, pi = 1). At lambda = 0: x_a = 0, AP = 1/2 with variance 0 (nothing
    caught: the plain interval is the point 0.5). Had a been relevant, AP = (1 + 1)/2 = 1: the
    change d_a = 0.5, the weight of a hit d_a / pi = 1 per query. Sum over queries: base 5, hits
    y = 0, v = 0, w = 1: Fay-Feuer's upper end with no event is w chi2_0.975(2)/2 = 3.6889 (below
    the cap 10 - 5), so AP's interval is [5, 5 + 3.6889] / 10. nDCG@2: base 1/log2(3) = 0.63093,
    with a relevant (1 + 0.63093)/(1 + 0.63093) = 1, d_a = 0.36907, weight 0.73814."""
    queries = [f"q{i}" for i in range(10)]
    rankings = {"run": {q: ["a", "b"] for q in queries}}
    judged = {(q, "b"): True for q in queries} | {(q, "a"): False for q in queries}
    inclusion = {(q, "a"): 0.5 for q in queries}
    predictions = {(q, "a"): 0.1 for q in queries}
    plain = {e.measure: e for e in ppi_estimates(rankings, predictions, judged, inclusion, measures=("AP", "nDCG@2"),
                                                 fixed_lambda=0.0).runs}
    assert (plain["AP"].ci_low, plain["AP"].ci_high) == pytest.approx((0.5, 0.5), abs=1e-12)
    wide = {e.measure: e for e in ppi_estimates(rankings, predictions, judged, inclusion, measures=("AP", "nDCG@2"),
                                                fixed_lambda=0.0, rare_hits=True).runs}
    gamma = 7.377758908227871 / 2          # chi2_0.975 with 2 degrees of freedom, halved
    assert wide["AP"].estimate == pytest.approx(0.5, abs=1e-12)
    assert (wide["AP"].ci_low, wide["AP"].ci_high) == pytest.approx((0.5, (5 + gamma) / 10), abs=1e-9)
    base = 1 / np.log2(3)
    assert (wide["nDCG@2"].ci_low, wide["nDCG@2"].ci_high) == pytest.approx(
        (base, (10 * base + gamma * 2 * (1 - base)) / 10), abs=1e-9)
