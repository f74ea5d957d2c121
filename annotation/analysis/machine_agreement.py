"""How far an automatic judge agrees with people: Cohen's kappa and the confusion matrix over pairs,
and Kendall's tau and tau_AP between the system rankings the two sets of judgments produce.

Pure NumPy and SciPy; no Django.

Intervals are bootstrap percentile intervals, seeded: over pairs for kappa (pairs are the unit a
judge labels), over queries for tau and tau_AP (queries are the sampled unit of a test
collection; each replicate re-averages every system's per-query scores over the resampled
queries, then ranks the systems).

tau_AP is the AP rank correlation of Yilmaz, Aslam & Robertson (SIGIR 2008):

    tau_AP = 2 / (N - 1) * sum_{i=2..N} C(i) / (i - 1)  -  1

where the systems are ordered by the *estimated* ranking (here: machine judgments), and C(i) is
the number of systems above rank i in it that the *true* ranking (human judgments) also puts
above the system at rank i. Unlike Kendall's tau it is asymmetric and weighs swaps near the top
more. Ties in the estimated scores are broken by system order given (stable), ties in the true
scores count as not correctly ordered (a tie is not "above").
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats


@dataclass
class KappaResult:
    kappa: float
    observed_agreement: float
    expected_agreement: float
    n: int
    confusion: list[list[int]]  # rows human label, columns machine label
    interval: list[float]
    n_boot: int
    confidence: float


def confusion_matrix(human: ArrayLike, machine: ArrayLike, *, n_values: int = 2) -> NDArray[np.int64]:
    h = np.asarray(human, dtype=np.int64)
    m = np.asarray(machine, dtype=np.int64)
    if h.shape != m.shape or h.ndim != 1:
        raise ValueError("human and machine must be 1-D arrays of the same length")
    if h.size and (min(h.min(), m.min()) < 0 or max(h.max(), m.max()) >= n_values):
        raise ValueError(f"labels must be codes 0..{n_values - 1}")
    return np.bincount(h * n_values + m, minlength=n_values * n_values).reshape(n_values, n_values)


def _kappa_from_confusion(c: NDArray) -> tuple[float, float, float]:
    """kappa = (p_o - p_e) / (1 - p_e); NaN when p_e = 1 (both judges constant and equal) or no pair."""
    c = np.asarray(c, dtype=float)
    n = c.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        p_o = np.trace(c, axis1=-2, axis2=-1) / n
        p_e = (c.sum(axis=-1) * c.sum(axis=-2)).sum(axis=-1) / n ** 2
        kappa = (p_o - p_e) / (1 - p_e)
    return kappa, p_o, p_e


def cohen_kappa(human: ArrayLike, machine: ArrayLike, *, n_values: int = 2, n_boot: int = 1000, seed: int = 0,
                confidence: float = 0.95) -> KappaResult:
    """Cohen's kappa with a bootstrap percentile interval over pairs."""
    h = np.asarray(human, dtype=np.int64)
    m = np.asarray(machine, dtype=np.int64)
    c = confusion_matrix(h, m, n_values=n_values)
    kappa, p_o, p_e = (float(x) for x in _kappa_from_confusion(c))
    interval = [math.nan, math.nan]
    if n_boot > 0 and h.size:
        rng = np.random.default_rng(seed)
        codes = h * n_values + m
        draws = rng.integers(0, h.size, size=(n_boot, h.size))
        counts = np.stack([np.bincount(codes[row], minlength=n_values * n_values) for row in draws])
        boot, _, _ = _kappa_from_confusion(counts.reshape(n_boot, n_values, n_values))
        boot = boot[np.isfinite(boot)]
        if boot.size:
            tail = (1 - confidence) / 2
            interval = [float(np.quantile(boot, tail)), float(np.quantile(boot, 1 - tail))]
    return KappaResult(kappa, p_o, p_e, int(h.size), c.tolist(), interval, n_boot, confidence)


def tau_ap(true_scores: ArrayLike, estimated_scores: ArrayLike) -> float:
    """Yilmaz, Aslam & Robertson's AP correlation of the estimated ranking against the true one
    (higher score = better system; see the module docstring for ties)."""
    t = np.asarray(true_scores, dtype=float)
    e = np.asarray(estimated_scores, dtype=float)
    if t.shape != e.shape or t.ndim != 1:
        raise ValueError("true and estimated scores must be 1-D arrays of the same length")
    n = t.size
    if n < 2:
        return math.nan
    order = np.argsort(-e, kind="stable")  # the estimated ranking, best first
    ranked_true = t[order]
    total = 0.0
    for i in range(1, n):  # 0-based position i is rank i + 1
        total += float((ranked_true[:i] > ranked_true[i]).sum()) / i
    return 2.0 * total / (n - 1) - 1.0


def kendall_tau(a: ArrayLike, b: ArrayLike) -> float:
    """Kendall's tau-b (SciPy) between two score vectors over the same systems."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.size < 2:
        return math.nan
    return float(stats.kendalltau(a, b).statistic)


@dataclass
class RankCorrelation:
    measure: str
    systems: list[str]
    human_scores: list[float]
    machine_scores: list[float]
    tau: float
    tau_interval: list[float]
    tau_ap: float
    tau_ap_interval: list[float]
    n_queries: int
    n_boot: int
    confidence: float


def system_rank_correlation(systems: list[str], human_per_query: ArrayLike, machine_per_query: ArrayLike, *,
                            measure: str, n_boot: int = 1000, seed: int = 0,
                            confidence: float = 0.95) -> RankCorrelation:
    """Kendall's tau and tau_AP (machine ranking against the human one) between the systems'
    mean scores, with bootstrap intervals over queries. Inputs are systems x queries arrays."""
    H = np.asarray(human_per_query, dtype=float)
    M = np.asarray(machine_per_query, dtype=float)
    if H.shape != M.shape or H.ndim != 2 or H.shape[0] != len(systems):
        raise ValueError("per-query scores must be systems x queries arrays of the same shape")
    n_queries = H.shape[1]
    h_mean = H.mean(axis=1) if n_queries else np.full(len(systems), math.nan)
    m_mean = M.mean(axis=1) if n_queries else np.full(len(systems), math.nan)
    tau = kendall_tau(h_mean, m_mean)
    tap = tau_ap(h_mean, m_mean)
    tau_iv, tap_iv = [math.nan, math.nan], [math.nan, math.nan]
    if n_boot > 0 and n_queries and len(systems) >= 2:
        rng = np.random.default_rng(seed)
        taus, taps = [], []
        for _ in range(n_boot):
            pick = rng.integers(0, n_queries, size=n_queries)
            hb, mb = H[:, pick].mean(axis=1), M[:, pick].mean(axis=1)
            taus.append(kendall_tau(hb, mb))
            taps.append(tau_ap(hb, mb))
        tail = (1 - confidence) / 2
        for values, out in ((np.asarray(taus), tau_iv), (np.asarray(taps), tap_iv)):
            values = values[np.isfinite(values)]
            if values.size:
                out[:] = [float(np.quantile(values, tail)), float(np.quantile(values, 1 - tail))]
    return RankCorrelation(measure, list(systems), h_mean.tolist(), m_mean.tolist(), tau, tau_iv, tap, tap_iv,
                           n_queries, n_boot, confidence)


def relevance_probability(relevant: ArrayLike, score: ArrayLike) -> NDArray[np.float64]:
    """The machine's probability that a pair is relevant, from its verdict and its score
    (element-wise; score nan = none): a score in [0, 1] gives the certainty ``|score - 0.5|``
    and the verdict the side, ``0.5 +- |score - 0.5|``, so a file that scores the probability of
    relevance and one that scores the confidence in its own verdict read the same; a verdict
    without a score in [0, 1] counts as certain (1 or 0)."""
    rel = np.asarray(relevant, dtype=bool)
    s = np.asarray(score, dtype=np.float64)
    usable = np.isfinite(s) & (s >= 0) & (s <= 1)
    certainty = np.where(usable, np.abs(np.where(usable, s, 0.5) - 0.5), 0.5)
    return np.where(rel, 0.5 + certainty, 0.5 - certainty)


def reliability(probability: ArrayLike, human: ArrayLike, *, n_bins: int = 10, groups: ArrayLike | None = None) -> dict:
    """Reliability curve and expected calibration error of a machine's probabilities of relevance
    against the human labels (0/1) of the same pairs.

    Equal-width bins over [0, 1] (bin ``b`` holds ``b / n_bins <= p < (b + 1) / n_bins``, the last
    one closed at 1); per bin the pair count, the mean probability and the observed share of
    relevant pairs (None for an empty bin). ECE (Guo et al. 2017) is the count-weighted mean of
    ``|mean probability - observed share|`` over the bins: 0 for a calibrated judge, at most 1.
    With ``groups`` (a label per pair, e.g. a query type) the same per group, in
    ``by_group``."""
    p = np.asarray(probability, dtype=np.float64).reshape(-1)
    h = np.asarray(human, dtype=np.float64).reshape(-1)
    if p.shape != h.shape:
        raise ValueError("probability and human must have the same length")
    if n_bins < 1:
        raise ValueError("n_bins must be >= 1")
    if p.size and (np.any(~np.isfinite(p)) or p.min() < 0 or p.max() > 1):
        raise ValueError("probabilities must be in [0, 1]")
    if h.size and np.any((h != 0) & (h != 1)):
        raise ValueError("human labels must be 0 or 1")

    def curve(pp, hh):
        index = np.minimum((pp * n_bins).astype(np.int64), n_bins - 1)
        count = np.bincount(index, minlength=n_bins)
        conf = np.bincount(index, weights=pp, minlength=n_bins)
        rel = np.bincount(index, weights=hh, minlength=n_bins)
        bins = []
        for b in range(n_bins):
            n = int(count[b])
            bins.append({"low": b / n_bins, "high": (b + 1) / n_bins, "count": n,
                         "mean_probability": float(conf[b] / n) if n else None,
                         "observed_relevant": float(rel[b] / n) if n else None})
        ece = float(np.abs(conf - rel).sum() / pp.size) if pp.size else math.nan
        return {"n": int(pp.size), "ece": ece, "bins": bins}

    out = curve(p, h) | {"n_bins": n_bins}
    if groups is not None:
        g = np.asarray(groups, dtype=object).reshape(-1)
        if g.shape != p.shape:
            raise ValueError("groups must give one label per pair")
        out["by_group"] = {str(name): curve(p[g == name], h[g == name]) for name in sorted(set(g.tolist()), key=str)}
    return out
