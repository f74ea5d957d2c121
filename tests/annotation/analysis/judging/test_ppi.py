"""PPI++ estimates (issue 25): checked against ppi-python, by exact enumeration over every
inclusion pattern, and on a hand-worked example."""
import itertools

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

from annotation.analysis.judging.estimates import estimate_metrics
from annotation.analysis.judging.ppi import (c_at_k_floor, c_at_k_moments, ppi_estimates, ppi_linear_mean,
                                             ppi_mean, satterthwaite_quantile)


def test_ppi_mean_matches_ppi_python_with_power_tuning():
    rng = np.random.default_rng(3)
    truth = rng.random(400) < 0.3
    f_all = np.clip(0.3 * truth + 0.7 * rng.random(400), 0, 1)
    lab = rng.choice(400, size=60, replace=False)
    y, fl = truth[lab].astype(float), f_all[lab]
    mine = ppi_mean(y, fl, f_all, confidence=0.9)
    assert mine.estimate == pytest.approx(float(ppi_mean_pointestimate(y, fl, f_all)[0]), abs=1e-9)
    low, high = ppi_mean_ci(y, fl, f_all, alpha=0.1)
    assert (mine.ci_low, mine.ci_high) == pytest.approx((float(low[0]), float(high[0])), abs=1e-9)
    assert 0 < mine.lam < 1
    for lam in (0.0, 0.4, 1.0):
        fixed = ppi_mean(y, fl, f_all, lam=lam, confidence=0.9)
        low, high = ppi_mean_ci(y, fl, f_all, alpha=0.1, lam=lam)
        assert (fixed.ci_low, fixed.ci_high) == pytest.approx((float(low[0]), float(high[0])), abs=1e-9)


def test_design_based_linear_mean_and_precision_match_ppi_python_at_the_same_lambda():
    """With pi = n/N and n pairs drawn, the Horvitz-Thompson rectifier is ppi-python's
    lam mean(f) + mean over the sample of (y - lam f); P@K (linear) through the report's path
    is the same number."""
    rng = np.random.default_rng(5)
    queries, k = 30, 4
    rankings = {"r": {f"q{q}": [f"c{q}_{j}" for j in range(k)] for q in range(queries)}}
    pairs = [(q, i) for q, items in rankings["r"].items() for i in items]
    truth = {p: bool(rng.random() < 0.4) for p in pairs}
    f = {p: float(np.clip(0.6 * truth[p] + 0.4 * rng.random(), 0, 1)) for p in pairs}
    n = 36
    pi = n / len(pairs)
    drawn = set(rng.choice(len(pairs), size=n, replace=False).tolist())
    judged = {pairs[i]: truth[pairs[i]] for i in drawn}
    y = np.array([float(truth[p]) for p in pairs])
    fa = np.array([f[p] for p in pairs])
    s = np.array([i in drawn for i in range(len(pairs))])
    linear = ppi_linear_mean(fa, s, y, np.full(len(pairs), pi))
    assert 0 < linear.lam <= 1
    reference = float(ppi_mean_pointestimate(y[s], fa[s], fa, lam=linear.lam)[0])
    assert linear.estimate == pytest.approx(reference, abs=1e-9)
    report = ppi_estimates(rankings, f, judged, {p: pi for p in judged}, measures=("P@4",), fixed_lambda=0.35)
    assert report.runs[0].estimate == pytest.approx(float(ppi_mean_pointestimate(y[s], fa[s], fa, lam=0.35)[0]),
                                                    abs=1e-9)


# A small pool: two queries, three or four pairs each, two runs; one original positive.
RANKINGS = {"a": {"q1": ["x", "y", "z"], "q2": ["u", "v", "w", "t"]},
            "b": {"q1": ["z", "x"], "q2": ["w", "u", "t"]}}
KNOWN = {"q2": {"t"}}
TRUTH = {("q1", "x"): True, ("q1", "y"): False, ("q1", "z"): True,
         ("q2", "u"): False, ("q2", "v"): True, ("q2", "w"): True}
PRED = {("q1", "x"): 0.8, ("q1", "y"): 0.6, ("q1", "z"): 0.3,
        ("q2", "u"): 0.2, ("q2", "v"): 0.9, ("q2", "w"): 0.5, ("q2", "t"): 0.7}
PI = {("q1", "x"): 0.5, ("q1", "y"): 0.3, ("q1", "z"): 1.0,
      ("q2", "u"): 0.4, ("q2", "v"): 0.6, ("q2", "w"): 0.25}
MEASURES = ("C@1", "C@2", "AP", "nDCG@3")


def _enumerate(lam):
    """Every inclusion pattern with its probability: the estimator's exact mean and variance."""
    pairs = sorted(TRUTH)
    out = []
    for take in itertools.product((False, True), repeat=len(pairs)):
        prob = np.prod([PI[p] if t else 1 - PI[p] for p, t in zip(pairs, take)])
        if prob == 0:
            continue
        judged = {p: TRUTH[p] for p, t in zip(pairs, take) if t}
        report = ppi_estimates(RANKINGS, PRED, judged, {p: PI[p] for p in judged}, known_relevant=KNOWN,
                               measures=MEASURES, fixed_lambda=lam)
        out.append((prob, report))
    return out


@pytest.mark.parametrize("lam", [0.0, 0.6, 1.0])
def test_ranking_metrics_and_their_variance_are_unbiased_by_enumeration(lam):
    full = {(e.run, e.measure): e.estimate for e in
            estimate_metrics(RANKINGS, TRUTH, {}, known_relevant=KNOWN, measures=MEASURES).runs}
    outcomes = _enumerate(lam)
    assert sum(p for p, _ in outcomes) == pytest.approx(1.0, abs=1e-12)
    for key in full:
        values = np.array([next(e.estimate for e in r.runs if (e.run, e.measure) == key) for _, r in outcomes])
        var_hat = np.array([next(e.se for e in r.runs if (e.run, e.measure) == key) ** 2 * 4 for _, r in outcomes])
        probs = np.array([p for p, _ in outcomes])
        mean = float(probs @ values)
        assert mean == pytest.approx(full[key], abs=1e-12), key
        true_var = float(probs @ (values - mean) ** 2) * 4      # variance of the sum over 2 queries
        # se^2 is the variance estimate clipped at 0: its mean is at least the true variance
        assert float(probs @ var_hat) >= true_var - 1e-12
    # the unclipped covariance estimate is exactly unbiased: check the differences' variance too
    diffs = [(p, d) for p, r in outcomes for d in r.differences]
    assert diffs


@pytest.mark.parametrize("lam", [0.0, 0.7])
def test_per_query_variance_estimate_is_exactly_unbiased(lam):
    """The per-query covariance matrix estimate (before any clipping) averages to the true one."""
    from annotation.analysis.judging import ppi as mod
    pairs = sorted(TRUTH)
    runs, queries, prepared = mod._prepare(RANKINGS, {k: v for k, v in PRED.items()}, TRUTH, PI,
                                           KNOWN, 0.5)
    for kind, k in (("AP", None), ("nDCG", 3), ("C", 2)):
        for q in queries:
            base = prepared[q][0]
            items = [p for p in pairs if p[0] == q]
            mean_e, mean_c, second = 0.0, 0.0, 0.0
            for take in itertools.product((False, True), repeat=len(items)):
                prob = np.prod([PI[p] if t else 1 - PI[p] for p, t in zip(items, take)])
                if prob == 0:
                    continue
                judged = {p: TRUTH[p] for p, t in zip(items, take) if t}
                _, _, prep = mod._prepare(RANKINGS, PRED, judged, PI, KNOWN, 0.5)
                qd = prep[q][0]
                x, v = mod._rectified(qd, lam)
                if kind == "C":
                    member = np.zeros((len(runs), 1, len(x)), dtype=bool)
                    for r, pos in enumerate(qd.lists):
                        if pos is not None:
                            member[r, 0, pos[:k]] = True
                    e, c = c_at_k_moments(x[None, :], v[None, :], member)
                    e, c = e[0], c[0]
                else:
                    e, c, exact = mod._expansion(kind, k, qd.lists, x, v)
                    assert exact
                mean_e = mean_e + prob * e
                mean_c = mean_c + prob * c
                second = second + prob * np.outer(e, e)
            true_cov = second - np.outer(mean_e, mean_e)
            np.testing.assert_allclose(mean_c, true_cov, atol=1e-12, err_msg=f"{kind} {q}")
            assert base is not None


def test_lambda_zero_is_the_human_only_estimator():
    judged = {("q1", "x"): True, ("q1", "z"): True, ("q2", "v"): True, ("q2", "u"): False}
    inclusion = {("q1", "x"): 0.5, ("q1", "z"): 1.0, ("q2", "v"): 0.6, ("q2", "u"): 0.4}
    human = {(e.run, e.measure): e for e in estimate_metrics(RANKINGS, judged, inclusion, known_relevant=KNOWN,
                                                              measures=MEASURES).runs}
    ppi = ppi_estimates(RANKINGS, PRED, judged, inclusion, known_relevant=KNOWN, measures=MEASURES,
                        fixed_lambda=0.0)
    for e in ppi.runs:
        assert e.estimate == pytest.approx(human[(e.run, e.measure)].estimate, abs=1e-12)
        if not e.measure.startswith("C@"):
            # the judging estimates floor the AP / nDCG se by their design variance (from the
            # judged pairs' stratum rates); PPI at lambda = 0 reports the unbiased estimate, and
            # the report's guard uses the human-only interval itself
            assert e.se <= human[(e.run, e.measure)].se + 1e-12
            continue
        assert e.se == pytest.approx(human[(e.run, e.measure)].se, abs=1e-12)
        if e.measure.startswith("C@"):   # the same interval too (normal hull Fay-Feuer)
            assert (e.ci_low, e.ci_high) == pytest.approx((human[(e.run, e.measure)].ci_low,
                                                           human[(e.run, e.measure)].ci_high), abs=1e-12)


def test_hand_worked_example():
    """One query, one run listing p1, p2; C@1 and C@2. f = (0.8, 0.2); p1 sampled with pi = 0.5
    and relevant, p2 not sampled. At lambda = 0.5:
    x1 = 0.4 + (1 - 0.4)/0.5 = 1.6, x2 = 0.1; v1 = 0.5/0.25 * 0.36 = 0.72.
    C@1 = x1 = 1.6, var = (1 - x1)^2 - ((1 - x1)^2 - v1) = 0.72.
    C@2 = 1 - (1 - 1.6)(1 - 0.1) = 1.54, var = 0.54^2 - (0.36 - 0.72) * 0.81 = 0.2916 + 0.2916 = 0.5832."""
    rankings = {"r": {"q": ["p1", "p2"]}}
    report = ppi_estimates(rankings, {("q", "p1"): 0.8, ("q", "p2"): 0.2}, {("q", "p1"): True},
                           {("q", "p1"): 0.5}, measures=("C@1", "C@2"), fixed_lambda=0.5)
    c1, c2 = report.runs
    assert c1.estimate == pytest.approx(1.6, abs=1e-12) and c1.se == pytest.approx(np.sqrt(0.72), abs=1e-12)
    assert c2.estimate == pytest.approx(1.54, abs=1e-12) and c2.se == pytest.approx(np.sqrt(0.5832), abs=1e-12)
    assert c1.human_estimate == pytest.approx(2.0, abs=1e-12)   # 1/pi
    # C@K interval: hull of the normal one (1.6 +- 1.96 sqrt(0.72) = [-0.063, 3.263]) and the
    # Fay-Feuer one on the unsettled query (upper bound capped at 1 query): the normal one here
    assert (c1.ci_low, c1.ci_high) == pytest.approx((1.6 - 1.959964 * np.sqrt(0.72), 1.6 + 1.959964 * np.sqrt(0.72)),
                                                    rel=1e-6)


def test_design_variance_floor_hand_worked():
    """One query; run "a" lists A, B, C, run "b" lists A, C (C@3). A sampled (pi 0.5, f 0.2, not
    relevant), B sampled (pi 0.25, f 0.5, relevant), C not sampled (f 0.4). HT weights
    (1 - pi)/pi^2: A 2, B 12. Best guesses: A 0, B 1, C 0.4, so d = prod of (1 - guess) over the
    run's other pairs: run a: d_A = 0 (B is relevant), d_B = 1 * 0.6; run b: d_A = 0.6.
    Expected residual f (1 - f) + (1 - lambda)^2 f^2 at lambda = 1: A 0.16, B 0.25; at 0.5: A 0.17,
    B 0.3125. Floor at 1: a 12 * 0.25 * 0.36 = 1.08, b 2 * 0.16 * 0.36 = 0.1152; at 0.5: a 1.35,
    b 0.1224; at 0: none (the human-only interval)."""
    f = np.array([[0.2, 0.5, 0.4]])
    guess = np.array([[0.0, 1.0, 0.4]])
    weight = np.array([[2.0, 12.0, 0.0]])
    member = np.array([[[True, True, True]], [[True, False, True]]])
    floor = c_at_k_floor(f, guess, weight, member, [0.0, 0.5, 1.0])
    assert floor.shape == (3, 1, 2)
    assert floor[:, 0] == pytest.approx(np.array([[0.0, 0.0], [1.35, 0.1224], [1.08, 0.1152]]), abs=1e-12)
    # in the report: run b's unbiased variance estimate at lambda = 1 is T^2 - prod(Z^2 - v) =
    # 0.72^2 - (1.2^2 - 0.08) * 0.6^2 = 0.0288 (x_A = 0.2 - 0.2/0.5 = -0.2, v_A = 2 * 0.04 = 0.08),
    # below the floor: se = sqrt(0.1152); run a's (x_B = 2.5, v_B = 3) is above it
    rankings = {"a": {"q": ["A", "B", "C"]}, "b": {"q": ["A", "C"]}}
    pred = {("q", "A"): 0.2, ("q", "B"): 0.5, ("q", "C"): 0.4}
    judged, inclusion = {("q", "A"): False, ("q", "B"): True}, {("q", "A"): 0.5, ("q", "B"): 0.25}
    report = {e.run: e for e in ppi_estimates(rankings, pred, judged, inclusion, measures=("C@3",),
                                               fixed_lambda=1.0).runs}
    assert report["b"].estimate == pytest.approx(1.0 - 1.2 * 0.6, abs=1e-12)
    assert report["b"].se == pytest.approx(np.sqrt(0.1152), abs=1e-12)
    var_a = (1.2 * -1.5 * 0.6) ** 2 - (1.44 - 0.08) * (2.25 - 3.0) * 0.36
    assert var_a > 1.08 and report["a"].se == pytest.approx(np.sqrt(var_a), abs=1e-12)
    assert report["b"].ci_low == pytest.approx(0.28 - 1.959964 * np.sqrt(0.1152), rel=1e-6)


def test_tuning_never_widens_and_picks_the_machine_when_it_is_good():
    rng = np.random.default_rng(11)
    rankings = {r: {f"q{q}": [f"c{(q * 7 + r * 3 + j) % 40}" for j in range(10)] for q in range(40)}
                for r in range(3)}
    rankings = {f"run{r}": v for r, v in rankings.items()}
    pairs = {(q, i) for per in rankings.values() for q, items in per.items() for i in items}
    truth = {p: bool(rng.random() < 0.15) for p in sorted(pairs)}
    good = {p: 0.9 if truth[p] else 0.05 for p in truth}
    noise = {p: float(rng.random()) for p in truth}
    drawn = {p for p in sorted(truth) if rng.random() < 0.3}
    judged = {p: truth[p] for p in drawn}
    inclusion = {p: 0.3 for p in drawn}
    human = {(e.run, e.measure): (e.ci_low, e.ci_high) for e in
             estimate_metrics(rankings, judged, inclusion, measures=("C@10", "AP")).runs}
    for pred, helps in ((good, True), (noise, False)):
        report = ppi_estimates(rankings, pred, judged, inclusion, measures=("C@10", "AP"), human_intervals=human)
        for e in report.runs:
            low, high = human[(e.run, e.measure)]
            assert e.ci_high - e.ci_low <= high - low + 1e-12
            if helps:
                assert e.lam > 0.5 and e.ci_high - e.ci_low < 0.8 * (high - low)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="prediction of"):
        ppi_estimates({"r": {"q": ["a"]}}, {("q", "a"): 1.5}, {}, {})
    with pytest.raises(ValueError, match="inclusion probability"):
        ppi_estimates({"r": {"q": ["a"]}}, {("q", "a"): 0.5}, {("q", "a"): True}, {("q", "a"): 0.0})
    with pytest.raises(ValueError, match="unknown measure"):
        ppi_estimates({"r": {"q": ["a"]}}, {}, {}, {}, measures=("MRR",))


def test_satterthwaite_quantile_is_normal_for_many_equal_queries():
    assert float(satterthwaite_quantile(np.ones(100000), 0.95)) == pytest.approx(1.95996, abs=1e-3)
    assert float(satterthwaite_quantile(np.r_[1.0, np.zeros(9)], 0.95)) == pytest.approx(12.7062, abs=1e-3)
