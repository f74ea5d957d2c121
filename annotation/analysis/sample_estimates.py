"""Estimates from a labelled simple random sample of a pool, instead of labelling every pair.

Pure NumPy/SciPy; no Django.

Setting: a pool of N pairs (caption-clip). A simple random sample of n pairs, drawn uniformly
without replacement (:func:`draw_sample`, seeded), is labelled. Original positives are relevant
by convention whatever raters say, so they are never estimated: every estimate below is about the
pool's *non-original* pairs, whose relevance is unknown. Restricted to any subset ("domain") of
the pool, e.g. one run's top-10 pairs, the sampled pairs falling in it are again a simple random
sample of it (conditionally on their number), so the same interval applies per run.

Interval: Wilson score interval with a finite-population correction (FPC). Sampling without
replacement from N items shrinks the variance of the sample proportion by (N - n) / (N - 1); we
apply it through the effective sample size n_eff = n (N - 1) / (N - n) in Wilson's formula
(n_eff -> infinity, interval -> the exact value, when the whole domain is sampled). The ends are
then clipped to what is still possible given the sample: at least the relevant pairs seen, at
most all but the non-relevant pairs seen. Wilson rather than Wald because proportions of false
negatives are often small and Wald collapses to [p, p] at 0 successes; rather than a bootstrap
because it is exact to compute and behaves well at small domain sizes (coverage tested by
simulation).

Pairs already judged (imported judgments resolved them when the pool was built) are a census:
each is in the estimate with inclusion probability 1, so it is counted, not estimated, and the
proportion is estimated over the other pairs only (the sample must be drawn from those: a census
pair taken into the sample would stand for pairs it was not drawn among). With, in a domain,
``K`` relevant pairs among the census and ``M`` pairs left to estimate of which the sample gives
the share ``p``, the domain's relevant non-original pairs are ``K + M p`` (Horvitz-Thompson with
weights 1 and ``M / n``); the interval of ``p`` maps the same way. Without a census this is the
estimator above.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be in (0, 1)")
    return float(stats.norm.ppf(0.5 + confidence / 2.0))


def draw_sample(population_size: int, sample_size: int, *, seed: int) -> NDArray[np.int64]:
    """Sorted indices of a simple random sample without replacement (seeded, reproducible)."""
    if not 0 <= sample_size <= population_size:
        raise ValueError("need 0 <= sample_size <= population_size")
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(population_size, size=sample_size, replace=False)).astype(np.int64)


@dataclass
class ProportionEstimate:
    """Proportion p of a finite population of size N from n sampled items, k of them positive.

    ``estimate = k / n``; ``low``/``high`` the Wilson-FPC interval; ``total*`` the same scaled to
    a count (N p). NaN when n = 0.
    """

    successes: int
    sample_size: int
    population_size: int
    estimate: float
    low: float
    high: float
    total: float
    total_low: float
    total_high: float
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def wilson_fpc_interval(
    successes: int, sample_size: int, population_size: int, *, confidence: float = 0.95
) -> tuple[float, float]:
    """Wilson score interval for a proportion with finite-population correction (see module)."""
    k, n, N = int(successes), int(sample_size), int(population_size)
    if not 0 <= k <= n <= N:
        raise ValueError("need 0 <= successes <= sample_size <= population_size")
    if n == 0:
        return math.nan, math.nan
    p = k / n
    if n == N:
        return p, p
    z2 = _z(confidence) ** 2
    n_eff = n * (N - 1) / (N - n)
    centre = (p + z2 / (2 * n_eff)) / (1 + z2 / n_eff)
    half = math.sqrt(z2) / (1 + z2 / n_eff) * math.sqrt(p * (1 - p) / n_eff + z2 / (4 * n_eff**2))
    # The population holds at least the k positives seen and at most N - (n - k).
    low = max(centre - half, k / N)
    high = min(centre + half, (N - n + k) / N)
    return low, high


def estimate_proportion(
    successes: int, sample_size: int, population_size: int, *, confidence: float = 0.95
) -> ProportionEstimate:
    """Point estimate, Wilson-FPC interval, and the implied count in the population."""
    k, n, N = int(successes), int(sample_size), int(population_size)
    low, high = wilson_fpc_interval(k, n, N, confidence=confidence)
    est = k / n if n else math.nan
    return ProportionEstimate(
        successes=k,
        sample_size=n,
        population_size=N,
        estimate=est,
        low=low,
        high=high,
        total=N * est,
        total_low=N * low,
        total_high=N * high,
        confidence=confidence,
    )


def _sampled_mask(n_pairs: int, sample_idx: ArrayLike, sample_relevant: ArrayLike):
    idx = np.asarray(sample_idx, dtype=np.int64)
    rel = np.asarray(sample_relevant, dtype=bool)
    if idx.shape != rel.shape:
        raise ValueError("sample_relevant must be aligned to sample_idx")
    if idx.size and (idx.min() < 0 or idx.max() >= n_pairs or np.unique(idx).size != idx.size):
        raise ValueError("sample_idx must be distinct indices into the pool")
    sampled = np.zeros(n_pairs, dtype=bool)
    relevant = np.zeros(n_pairs, dtype=bool)
    sampled[idx] = True
    relevant[idx] = rel
    return sampled, relevant


def estimate_false_negatives(
    *,
    is_original: ArrayLike,
    sample_idx: ArrayLike,
    sample_relevant: ArrayLike,
    domain: ArrayLike | None = None,
    confidence: float = 0.95,
) -> ProportionEstimate:
    """Relevant non-original pairs (false negatives of the original labels) in the pool.

    ``is_original``: bool per pool pair; ``sample_idx``: indices of the sampled pairs;
    ``sample_relevant``: their resolved labels (bool; drop unresolved pairs from the sample
    beforehand, which assumes they are missing at random); ``domain``: optional bool mask
    restricting to a subset of the pool. The population is the domain's non-original pairs;
    ``total``/``total_low``/``total_high`` are the estimated false-negative count and interval.
    """
    orig = np.asarray(is_original, dtype=bool)
    sampled, relevant = _sampled_mask(orig.size, sample_idx, sample_relevant)
    pop = ~orig if domain is None else (~orig & np.asarray(domain, dtype=bool))
    return estimate_proportion(
        int((relevant & sampled & pop).sum()),
        int((sampled & pop).sum()),
        int(pop.sum()),
        confidence=confidence,
    )


def estimate_run_precision(
    *,
    in_run_topk: ArrayLike,
    is_original: ArrayLike,
    sample_idx: ArrayLike,
    sample_relevant: ArrayLike,
    run_names: list[str] | None = None,
    confidence: float = 0.95,
    census: ArrayLike | None = None,
    census_relevant: ArrayLike | None = None,
) -> dict[str, dict[str, Any]]:
    """Per run: share of its top-k pool pairs that are relevant, and its false negatives.

    ``in_run_topk``: bool matrix (n_pairs, n_runs), True where the pair is in that run's top-k
    (from the pool provenance). For run r with N_r top-k pairs, O_r of them original positives
    (known relevant) and M_r = N_r - O_r unknown, the estimate is
    ``precision = (O_r + M_r * p_r) / N_r`` with p_r the sampled relevant share among its
    non-original pairs, and the interval maps p_r's Wilson-FPC interval the same way. This is
    the mean precision@k over captions when every caption has k pool pairs in the run (pools are
    built from top-k lists, so normally yes). ``false_negatives`` is M_r * p_r with its interval.

    ``census`` (bool per pair) marks non-original pairs already judged (imported judgments) and
    ``census_relevant`` which of them are relevant: with C_r of the run's pairs in the census,
    K_r of them relevant, M_r = N_r - O_r - C_r and
    ``precision = (O_r + K_r + M_r * p_r) / N_r``, ``false_negatives = K_r + M_r * p_r`` (module
    docstring); ``sample_idx`` must not include census pairs.
    Returns ``{run: {"n_pairs", "n_original", "n_census", "census_relevant", "n_sampled",
    "precision", "precision_low", "precision_high", "false_negatives", "false_negatives_low",
    "false_negatives_high"}}``.
    """
    top = np.asarray(in_run_topk, dtype=bool)
    if top.ndim != 2:
        raise ValueError("in_run_topk must be (n_pairs, n_runs)")
    orig = np.asarray(is_original, dtype=bool)
    sampled, relevant = _sampled_mask(orig.size, sample_idx, sample_relevant)
    known = np.zeros(orig.size, dtype=bool) if census is None else np.asarray(census, dtype=bool) & ~orig
    known_relevant = known & (np.zeros(orig.size, dtype=bool) if census_relevant is None
                              else np.asarray(census_relevant, dtype=bool))
    if (sampled & known).any():
        raise ValueError("sample_idx includes census pairs: draw the sample from the other pairs")
    names = run_names if run_names is not None else [str(j) for j in range(top.shape[1])]
    out: dict[str, dict[str, Any]] = {}
    for j, name in enumerate(names):
        col = top[:, j]
        n_r = int(col.sum())
        o_r = int((col & orig).sum())
        c_r = int((col & known).sum())
        k_r = int((col & known_relevant).sum())
        m_r = n_r - o_r - c_r
        est = estimate_proportion(
            int((col & ~orig & sampled & relevant).sum()),
            int((col & ~orig & sampled).sum()),
            m_r,
            confidence=confidence,
        )
        if m_r == 0:
            # Nothing unknown: precision is exact (or undefined with no pairs at all).
            p_lo = p_hi = p_est = 0.0
        else:
            p_est, p_lo, p_hi = est.estimate, est.low, est.high

        def prec(x: float) -> float:
            return (o_r + k_r + m_r * x) / n_r if n_r else math.nan

        out[name] = {
            "n_pairs": n_r,
            "n_original": o_r,
            "n_census": c_r,
            "census_relevant": k_r,
            "n_sampled": est.sample_size,
            "precision": prec(p_est),
            "precision_low": prec(p_lo),
            "precision_high": prec(p_hi),
            "false_negatives": k_r + m_r * p_est,
            "false_negatives_low": k_r + m_r * p_lo,
            "false_negatives_high": k_r + m_r * p_hi,
            "confidence": confidence,
        }
    return out


def required_sample_size(
    *,
    population_size: int,
    half_width: float,
    confidence: float = 0.95,
    p: float = 0.5,
) -> dict[str, Any]:
    """Sample size for a proportion's interval half-width, and the labelling it saves.

    n0 = z^2 p (1 - p) / h^2 (infinite population; p = 0.5 is the worst case), then with the FPC
    n = n0 N / (n0 + N - 1), which solves z^2 p(1-p)/n * (N-n)/(N-1) = h^2 for n; rounded up.
    This is the normal-approximation size; Wilson intervals at this n have about the same
    half-width unless p is near 0 or 1. ``saved_fraction = 1 - n / N``.
    """
    N = int(population_size)
    if N < 1 or not 0 < half_width < 1 or not 0 < p < 1:
        raise ValueError("need population_size >= 1, 0 < half_width < 1, 0 < p < 1")
    z = _z(confidence)
    n0 = z * z * p * (1 - p) / half_width**2
    n_exact = n0 * N / (n0 + N - 1)
    n = min(N, math.ceil(n_exact - 1e-9))
    return {
        "population_size": N,
        "half_width": half_width,
        "confidence": confidence,
        "p": p,
        "z": z,
        "n0": n0,
        "n_required": n,
        "saved_pairs": N - n,
        "saved_fraction": 1 - n / N,
    }


def half_width_for_sample_size(
    *, sample_size: int, population_size: int, confidence: float = 0.95, p: float = 0.5
) -> float:
    """Inverse of :func:`required_sample_size`: z sqrt(p(1-p)/n * (N-n)/(N-1))."""
    n, N = int(sample_size), int(population_size)
    if not 1 <= n <= N:
        raise ValueError("need 1 <= sample_size <= population_size")
    if N == 1:
        return 0.0
    return _z(confidence) * math.sqrt(p * (1 - p) / n * (N - n) / (N - 1))
