"""Prediction-powered estimates (PPI++ with power tuning) of per-run C@K, AP and nDCG@K and of
their differences between runs, from a machine judge's prediction on every pooled pair and the
human labels of a Poisson sample with known inclusion probabilities (issue 25).

Inputs per pair ``i`` of query ``q``: the machine's prediction ``f_i`` in [0, 1] (probability
that the pair is relevant), and, when the design drew it (``I_i = 1``, probability ``pi_i``,
independent across pairs: uniform, stratified by machine confidence or active, the estimator only
needs ``pi_i``), the human label ``y_i``. Original positives are relevant, never estimated.

Rectified label (one tuning parameter ``lambda`` per reported number)::

    x_i(lambda) = lambda f_i + (I_i / pi_i) (y_i - lambda f_i)

``E[x_i] = y_i`` for every ``lambda`` and every ``f``, so a machine that is wrong biases nothing;
it only changes the variance. ``lambda = 0`` gives ``x_i = I_i y_i / pi_i``: the human-only
Horvitz-Thompson estimator of :mod:`.estimates` (same estimate, same variance estimate);
``lambda = 1`` is plain PPI (the machine's value corrected by the HT mean of its residuals).

Metrics: a query's C@K, AP and nDCG@K are functions of its binary labels, hence multilinear
polynomials ``M(y) = sum_S c_S prod_{i in S} y_i``. With independent inclusions, products over
distinct pairs of the ``x_i`` are unbiased for the products of the ``y_i``, so ``M(x)`` (the
multilinear extension evaluated at the rectified labels) is exactly unbiased for ``M(y)``:

- C@K: ``1 - prod_{top K} (1 - x_i)``;
- AP and nDCG@K: ``M(x)`` is a formal expectation over independent "Bernoulli(x_i)" labels, with
  the number of relevant pairs ``R`` in a denominator; :func:`_measure_rows` carries the
  generating polynomial of ``R`` (coefficients: the formal distribution of R) through the run's
  list in rank order and applies ``1/R`` (AP) or ``1/IDCG(min(R, K))`` (nDCG) at the end, in
  ``O(n^2)`` per query and run.

Variance: ``x_i`` has variance ``(1 - pi_i)/pi_i (y_i - lambda f_i)^2``, estimated unbiasedly by
``v_i = I_i (1 - pi_i) / pi_i^2 (y_i - lambda f_i)^2``. For multilinear ``M`` and independent
``x_i``, ``M(x)^2 - sum_{S} prod_{i in S} (-v_i) (d_S M(x))^2`` (the sum over every subset S, the
empty one included, ``d_S`` the mixed finite difference over S with the other pairs at x) is
unbiased for ``M(y)^2``, so the variance estimate is

    Var_hat M = sum_{S nonempty} (-1)^(|S|+1) prod_{i in S} v_i (d_S M(x))^2

(and for the covariance of two runs ``d_S M_a d_S M_b``), over the subsets of the sampled pairs
with ``v_i > 0``. For C@K this is the closed form ``T_a T_b - prod_{A and B} (Z^2 - v)
prod_{A xor B} Z``, ``Z = 1 - x``, ``T = prod Z``. For AP and nDCG with more than
``MAX_EXACT_VARIANCE_PAIRS`` such pairs in a query, only the first-order term (the linearised
variance, ``sum_i v_i (d_i M(x))^2``) is used and the report says so.

Power tuning (PPI++, Angelopoulos, Duchi & Zrnic 2023): one ``lambda`` for the whole report, the
minimiser of the estimated variance of the pair-level mean (the PPI++ optimum for a mean under this
design, :func:`pooled_lambda`): ``sum_s w_i y_i f_i / sum_s w_i f_i^2``, ``w_i = (1 - pi_i)/pi_i^2``
over the pairs sampled with pi < 1, clipped to [0, 1]. It rests on every sampled pair, so it hardly
depends on any one run's few informative queries. Choosing lambda per run to minimise that run's
estimated interval width (tried first) picked a large lambda exactly when the sample had caught no
large residual, whose variance estimate is then too small: 95% C@10 intervals of the strong runs
covered 62-80% in the bench. Then, per reported number, the interval is never wider than the
human-only one: where it would be, ``lambda = 0`` and the human-only interval are kept (the caller
passes :mod:`.estimates`' intervals on the same labels; without them this construction's own at
lambda = 0). A lambda chosen from the data makes the estimator unbiased only asymptotically, as in
PPI++; at a fixed lambda it is exactly unbiased (tested by enumeration).

Interval: C@K as the judging estimates' (:func:`.estimates.c_at_k_interval`: the normal interval
widened by a Fay-Feuer gamma interval on the unsettled queries, against a sample that catches
none of a strong run's few misses), with the weight of one more hit ``(1 - lambda f)/pi`` (the
jump a caught relevant pair adds; ``1/pi`` at lambda = 0, where the interval is the human-only
one); at lambda > 0 the normal interval's variance is floored by the design's first-order
variance with each residual ``(y - lambda f)^2`` replaced by its expectation under the machine's
belief, ``f (1 - f) + (1 - lambda)^2 f^2`` (:func:`c_at_k_floor`: the unbiased estimate reads only
the rare large residuals the sample caught, and is small exactly when it caught none); AP, nDCG and differences: estimate +- t se, t the Student quantile at Satterthwaite's
effective degrees of freedom over the per-query variance estimates, ``(sum v_q)^2 / sum v_q^2``
(as :mod:`.estimates` for AP and nDCG). With ``rare_hits`` (a frame whose relevant pairs are
rare: a submitted run's holes) AP and nDCG get C@K's rare-event side too, :func:`rare_hit_interval`.

Computation: every query at once. C@K reads only the items in some run's top K, padded to a common
width; AP / nDCG corners of the queries with the same shape (sampled pairs, items, list lengths)
go through one polynomial walk (:func:`_expansions`); ``x`` and ``v`` are computed once per query
and lambda. Same numbers as the per-query definitions above (tested to 1e-12), a quarter of the CPU.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats

from .estimates import c_at_k_interval, pooled_queries, str_pair_keys

__all__ = ["PPIEstimate", "PPIDifference", "PPIReport", "PPIMean", "ppi_estimates", "ppi_mean",
           "ppi_linear_mean", "c_at_k_moments", "c_at_k_hull", "c_at_k_floor", "floored_se", "tune",
           "satterthwaite_quantile", "rare_hit_interval", "MEASURES",
           "ESTIMATOR_NAME", "INTERVAL_NAME", "MAX_EXACT_VARIANCE_PAIRS", "pooled_lambda"]

MEASURES = ("C@1", "C@5", "C@10", "AP", "nDCG@10")
# AP / nDCG evaluate 2^m corners per query and lambda; with more sampled pairs than this the
# variance estimate keeps its first-order term only.
MAX_EXACT_VARIANCE_PAIRS = 10
ESTIMATOR_NAME = (
    "PPI++ (prediction-powered, power-tuned; Angelopoulos, Duchi & Zrnic 2023) over a Horvitz-Thompson "
    "rectifier: each pair's label is replaced by lambda f + (I/pi)(y - lambda f), f the machine's "
    "probability of relevant, and each query's metric is its multilinear extension at those values "
    "(exactly unbiased at fixed lambda; lambda = 0 is the human-only Horvitz-Thompson estimator); "
    "variance: exact unbiased subset expansion (first-order term only for a query with more than "
    f"{MAX_EXACT_VARIANCE_PAIRS} sampled pairs, AP and nDCG); lambda the PPI++ optimum of the pair-level "
    "mean, sum w y f / sum w f^2 over the sampled pairs (w = (1 - pi)/pi^2), clipped to [0, 1]; lambda = 0 "
    "wherever the interval would be wider than the human-only one")
INTERVAL_NAME = ("C@K: hull of the normal interval and a Fay-Feuer gamma interval on the unsettled queries "
                 "(the judging estimates' construction, one more hit weighing (1 - lambda f)/pi; at lambda > 0 the "
                 "normal interval's variance floored by the design's first-order variance with each residual "
                 "(y - lambda f)^2 replaced by f (1 - f) + (1 - lambda)^2 f^2, its expectation if the machine's f "
                 "is calibrated); AP, nDCG and "
                 "differences: estimate +- t se, t at Satterthwaite's effective degrees of freedom over the "
                 "per-query variance estimates; where wider than the human-only interval, lambda = 0 and the "
                 "human-only interval")
RARE_HITS_INTERVAL = ("; with rare_hits (a submitted run's holes), AP, nDCG and P intervals also hull a Fay-Feuer gamma "
                      "interval on the part of the estimate the sample's draws make, one more hit weighing the mean over "
                      "the drawn pairs the run lists of max(0, d_i M)(1 - lambda f)/pi (d_i M the query's change if "
                      "pair i turns relevant), its upper end at most every query scoring 1; the human-only interval "
                      "the guard compares with is widened the same way at lambda = 0")


@dataclass(frozen=True)
class PPIEstimate:
    run: str
    measure: str
    estimate: float
    se: float
    ci_low: float
    ci_high: float
    lam: float
    human_estimate: float       # lambda = 0: the human-only HT estimate on the same labels
    human_se: float


@dataclass(frozen=True)
class PPIDifference:
    measure: str
    better: str                  # higher PPI estimate
    worse: str
    estimate: float              # better - worse
    se: float
    ci_low: float
    ci_high: float
    lam: float
    human_estimate: float
    human_se: float
    human_ci_low: float
    human_ci_high: float


@dataclass(frozen=True)
class PPIReport:
    runs: list[PPIEstimate]
    differences: list[PPIDifference]
    estimator: str
    design: str
    interval: str
    conventions: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"estimator": self.estimator, "design": self.design, "interval": self.interval,
                "conventions": dict(self.conventions), "runs": [asdict(r) for r in self.runs],
                "differences": [asdict(d) for d in self.differences]}


# ------------------------------------------------------------------ plain means (ppi-python's setting)

@dataclass(frozen=True)
class PPIMean:
    estimate: float
    se: float
    ci_low: float
    ci_high: float
    lam: float


def ppi_mean(y, f_labeled, f_unlabeled, *, lam: float | None = None, confidence: float = 0.95) -> PPIMean:
    """PPI++ mean of an i.i.d. labelled sample ``(y, f_labeled)`` and unlabelled predictions
    ``f_unlabeled`` (ppi-python's ``ppi_mean_pointestimate`` / ``ppi_mean_ci``):
    ``lam mean(f_unlabeled) + mean(y - lam f_labeled)``; ``lam=None`` tunes it,
    ``cov(y, f) / ((1 + n/N) var(f over both sets))`` clipped to [0, 1]; normal interval."""
    y, fl, fu = (np.asarray(a, dtype=np.float64).ravel() for a in (y, f_labeled, f_unlabeled))
    if y.shape != fl.shape or not y.size or not fu.size:
        raise ValueError("y and f_labeled must have the same non-zero length; f_unlabeled must not be empty")
    n, big_n = y.size, fu.size
    if lam is None:
        cov = float(((y - y.mean()) * (fl - fl.mean())).sum()) / n
        var = float(np.var(np.concatenate([fl, fu]), ddof=1))
        lam = float(np.clip(cov / ((1.0 + n / big_n) * var), 0.0, 1.0)) if var > 0 else 0.0
    estimate = float(lam * fu.mean() + (y - lam * fl).mean())
    se = float(np.sqrt(np.var(lam * fu) / big_n + np.var(y - lam * fl) / n))
    z = float(stats.norm.ppf(0.5 + confidence / 2.0))
    return PPIMean(estimate, se, estimate - z * se, estimate + z * se, float(lam))


def ppi_linear_mean(f, sampled, y, pi, *, lam: float | None = None, confidence: float = 0.95) -> PPIMean:
    """Design-based PPI++ mean of ``y`` over ``N`` units under Poisson sampling: ``f`` (N,) every
    unit's prediction, ``sampled`` (N,) bool, ``y`` (N,) labels (read where sampled), ``pi`` (N,).
    ``(1/N)(lam sum f + sum_sampled (y - lam f)/pi)``, variance estimate
    ``(1/N^2) sum_sampled (1 - pi)/pi^2 (y - lam f)^2``; ``lam=None``: its minimiser in [0, 1].
    With ``pi = n/N`` and ``n`` sampled, the estimate is ppi-python's at the same lam."""
    f, y, pi = (np.asarray(a, dtype=np.float64).ravel() for a in (f, y, pi))
    s = np.asarray(sampled, dtype=bool).ravel()
    if not (f.shape == y.shape == pi.shape == s.shape) or not f.size:
        raise ValueError("f, sampled, y and pi must have the same non-zero length")
    if np.any(~((pi > 0) & (pi <= 1))):
        raise ValueError("every pi must be in (0, 1]")
    w = np.where(s, (1.0 - pi) / pi**2, 0.0)
    if lam is None:
        den = float((w * f * f).sum())
        lam = float(np.clip((w * f * y).sum() / den, 0.0, 1.0)) if den > 0 else 0.0
    big_n = f.size
    r = np.where(s, y - lam * f, 0.0)
    estimate = float((lam * f.sum() + (r / pi).sum()) / big_n)
    se = float(np.sqrt((w * r * r).sum())) / big_n
    z = float(stats.norm.ppf(0.5 + confidence / 2.0))
    return PPIMean(estimate, se, estimate - z * se, estimate + z * se, float(lam))


# ------------------------------------------------------------------ per-query machinery

def _parse_measure(measure: str) -> tuple[str, int | None]:
    if measure == "AP":
        return "AP", None
    for prefix in ("C@", "nDCG@", "P@"):
        rest = measure[len(prefix):]
        if measure.startswith(prefix) and rest.isdigit() and int(rest) > 0:
            return prefix[:-1], int(rest)
    raise ValueError(f"unknown measure {measure!r}; expected C@K, AP, nDCG@K or P@K")


def _discounts(k: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))


def _times_g(p: np.ndarray, x: np.ndarray) -> np.ndarray:
    """p(t) (1 - x + x t) for each row: p (W, D), x (W,)."""
    out = p * (1.0 - x)[:, None]
    out[:, 1:] += p[:, :-1] * x[:, None]
    return out


def _shift(p: np.ndarray) -> np.ndarray:
    out = np.zeros_like(p)
    out[:, 1:] = p[:, :-1]
    return out


def _measure_rows(kind: str, k: int | None, pos: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Multilinear extension of AP / nDCG@k / P@k of one run's list ``pos`` (item positions in
    rank order) at each row of ``rows`` (W x n real "labels"): the formal expectation under
    independent Bernoulli(x_i) labels. A polynomial in t carries the formal distribution of the
    number of relevant pairs R (coefficient m: P(R = m)); ``acc`` holds E[numerator t^R]."""
    w, n = rows.shape
    if kind == "P":
        top = pos[:k]
        return rows[:, top].sum(axis=1) / k
    listed = pos if kind == "AP" else pos[:k]
    s0 = np.zeros((w, n + 1))
    s0[:, 0] = 1.0
    s1 = np.zeros_like(s0)
    acc = np.zeros_like(s0)
    d = _discounts(k) if kind == "nDCG" else None
    for r, i in enumerate(listed, start=1):
        x = rows[:, i]
        t_s0 = _shift(s0)
        if kind == "AP":
            t_s1 = _shift(s1)
            acc = _times_g(acc, x) + (x / r)[:, None] * (t_s0 + t_s1)
            s1 = _times_g(s1, x) + x[:, None] * t_s0
        else:
            acc = _times_g(acc, x) + (d[r - 1] * x)[:, None] * t_s0
        s0 = _times_g(s0, x)
    rest = np.ones(n, dtype=bool)
    rest[listed] = False
    for i in np.flatnonzero(rest):
        acc = _times_g(acc, rows[:, i])
    m = np.arange(n + 1, dtype=np.float64)
    if kind == "AP":
        h = np.where(m > 0, 1.0 / np.where(m > 0, m, 1.0), 0.0)
    else:
        ideal = np.concatenate([[0.0], np.cumsum(_discounts(k))])[np.minimum(m, k).astype(np.int64)]
        h = np.where(ideal > 0, 1.0 / np.where(ideal > 0, ideal, 1.0), 0.0)
    return acc @ h


def _expansion(kind: str, k: int | None, lists: list, x: np.ndarray, v: np.ndarray):
    """(estimates (runs,), covariance estimate (runs, runs), exact?) of one query at one lambda for
    AP / nDCG / P: corners of the sampled pairs with v > 0, then per coordinate (interpolate at x,
    finite difference) so entry S holds d_S M(x)."""
    runs = len(lists)
    open_ = np.flatnonzero(v > 0)
    m = len(open_)
    if m <= MAX_EXACT_VARIANCE_PAIRS:
        bits = ((np.arange(2 ** m)[:, None] >> np.arange(m)[None, :]) & 1).astype(np.float64)
        rows = np.repeat(x[None, :], 2 ** m, axis=0)
        rows[:, open_] = bits
        values = np.zeros((runs, 2 ** m))
        for r, pos in enumerate(lists):
            if pos is not None and len(pos):
                values[r] = _measure_rows(kind, k, pos, rows)
        # coordinate j is bit j of the row index: reshape so that axis -(j+1) is bit j
        cube = values.reshape((runs,) + (2,) * m) if m else values
        for j in range(m):
            axis = m - j                      # bit j of the index is axis (m - j) of the cube
            lo = np.take(cube, 0, axis=axis)
            hi = np.take(cube, 1, axis=axis)
            xj = x[open_[j]]
            cube = np.stack([(1.0 - xj) * lo + xj * hi, hi - lo], axis=axis)
        d = cube.reshape(runs, 2 ** m)
        sizes = bits.sum(axis=1)
        weight = np.where(sizes % 2 == 1, 1.0, -1.0) * np.prod(np.where(bits > 0, v[open_][None, :], 1.0), axis=1)
        weight[0] = 0.0
        cov = (d * weight[None, :]) @ d.T
        return d[:, 0], cov, True
    # first-order term only: d_i M(x) = M(x; x_i = 1) - M(x; x_i = 0)
    rows = np.repeat(x[None, :], 2 * m + 1, axis=0)
    rows[1 + np.arange(m), open_] = 1.0
    rows[1 + m + np.arange(m), open_] = 0.0
    values = np.zeros((runs, 2 * m + 1))
    for r, pos in enumerate(lists):
        if pos is not None and len(pos):
            values[r] = _measure_rows(kind, k, pos, rows)
    grad = values[:, 1:1 + m] - values[:, 1 + m:]
    return values[:, 0], (grad * v[open_][None, :]) @ grad.T, False


def _expansions(kind: str, k: int | None, cases: Sequence) -> list:
    """:func:`_expansion` of many queries at once, ``cases`` a sequence of ``(lists, x, v)``: the
    same (estimates, covariance, exact?) per case, to rounding.

    Why: called per query and lambda, the polynomial walk of :func:`_measure_rows` cost ~0.5 ms of
    numpy overhead on a handful of numbers (49.8 s of CPU for a FIRE-scale submission). Here the
    cases with the same number of sampled pairs ``m``, of items ``n`` and list lengths share one
    walk: each case's corner rows are gathered into rank order (listed items first, the rest
    after), so :func:`_measure_rows` runs once over all their rows with the list ``0..L-1``; the
    finite differences and the covariance are taken over the batch axis too. A case whose ``x`` is
    fixed (no sampled pair with ``v > 0``) has one row and covariance 0. Cases with more than
    ``MAX_EXACT_VARIANCE_PAIRS`` sampled pairs go through :func:`_expansion` one by one."""
    out: list = [None] * len(cases)
    groups: dict = {}
    for ci, (lists, x, v) in enumerate(cases):
        open_ = np.flatnonzero(v > 0)
        if len(open_) > MAX_EXACT_VARIANCE_PAIRS:
            out[ci] = _expansion(kind, k, lists, x, v)
            continue
        lengths = tuple(0 if pos is None else len(pos) for pos in lists)
        groups.setdefault((len(open_), len(x), lengths), []).append((ci, open_))
    for (m, n, lengths), members in groups.items():
        index = [ci for ci, _ in members]
        batch = len(index)
        runs = len(lengths)
        x = np.stack([cases[ci][1] for ci in index])                       # (B, n)
        v = np.stack([cases[ci][2] for ci in index])
        opened = np.asarray([o for _, o in members], dtype=np.int64).reshape(batch, m)
        corners = 2 ** m
        bits = ((np.arange(corners)[:, None] >> np.arange(m)[None, :]) & 1).astype(np.float64)
        rows = np.repeat(x[:, None, :], corners, axis=1)                   # (B, 2^m, n)
        if m:
            rows[np.arange(batch)[:, None, None], np.arange(corners)[None, :, None], opened[:, None, :]] = bits[None]
        values = np.zeros((batch, runs, corners))
        for r, length in enumerate(lengths):
            if not length:
                continue
            listed = np.stack([cases[ci][0][r] for ci in index])          # (B, L)
            rest = np.ones((batch, n), dtype=bool)
            rest[np.arange(batch)[:, None], listed] = False
            order = np.concatenate([listed, np.nonzero(rest)[1].reshape(batch, n - length)], axis=1)
            ranked = np.take_along_axis(rows, order[:, None, :], axis=2).reshape(batch * corners, n)
            values[:, r] = _measure_rows(kind, k, np.arange(length), ranked).reshape(batch, corners)
        # coordinate j is bit j of the corner index: axis (m - j) of a case's cube, +1 for the batch
        cube = values.reshape((batch, runs) + (2,) * m)
        x_open = np.take_along_axis(x, opened, axis=1)                     # (B, m)
        v_open = np.take_along_axis(v, opened, axis=1)
        for j in range(m):
            axis = m - j + 1
            lo = np.take(cube, 0, axis=axis)
            hi = np.take(cube, 1, axis=axis)
            xj = x_open[:, j].reshape((batch,) + (1,) * (lo.ndim - 1))
            cube = np.stack([(1.0 - xj) * lo + xj * hi, hi - lo], axis=axis)
        d = cube.reshape(batch, runs, corners)
        sign = np.where(bits.sum(axis=1) % 2 == 1, 1.0, -1.0)
        weight = sign[None, :] * np.prod(np.where(bits[None] > 0, v_open[:, None, :], 1.0), axis=2)
        weight[:, 0] = 0.0
        cov = np.einsum("brc,bc,bsc->brs", d, weight, d)
        for b, ci in enumerate(index):
            out[ci] = (d[b, :, 0], cov[b], True)
    return out


def _first_differences(kind: str, k: int | None, cases: Sequence) -> list:
    """Per case ``(lists, x0, drawn)``: (each run's measure at ``x0`` (runs,), and the change of it
    when each drawn pair turns from 0 to 1, the others at ``x0`` (runs, len(drawn))): the multilinear
    ``M`` is linear in each coordinate, so that change is ``M(x0; x_i = 1) - M(x0; x_i = 0)``.
    Batched as :func:`_expansions` (one polynomial walk per group of equal shapes)."""
    out: list = [None] * len(cases)
    groups: dict = {}
    for ci, (lists, x0, drawn) in enumerate(cases):
        lengths = tuple(0 if pos is None else len(pos) for pos in lists)
        groups.setdefault((len(drawn), len(x0), lengths), []).append(ci)
    for (m, n, lengths), index in groups.items():
        batch, runs, width = len(index), len(lengths), 1 + 2 * m
        drawn = np.asarray([cases[ci][2] for ci in index], dtype=np.int64).reshape(batch, m)
        rows = np.repeat(np.stack([cases[ci][1] for ci in index])[:, None, :], width, axis=1)   # (B, 1 + 2m, n)
        if m:
            at = np.arange(batch)[:, None]
            rows[at, 1 + np.arange(m)[None, :], drawn] = 1.0
            rows[at, 1 + m + np.arange(m)[None, :], drawn] = 0.0
        values = np.zeros((batch, runs, width))
        for r, length in enumerate(lengths):
            if not length:
                continue
            listed = np.stack([cases[ci][0][r] for ci in index])
            rest = np.ones((batch, n), dtype=bool)
            rest[np.arange(batch)[:, None], listed] = False
            order = np.concatenate([listed, np.nonzero(rest)[1].reshape(batch, n - length)], axis=1)
            ranked = np.take_along_axis(rows, order[:, None, :], axis=2).reshape(batch * width, n)
            values[:, r] = _measure_rows(kind, k, np.arange(length), ranked).reshape(batch, width)
        for b, ci in enumerate(index):
            out[ci] = (values[b, :, 0], values[b, :, 1:1 + m] - values[b, :, 1 + m:])
    return out


def _rare_hit_weights(kind: str, k: int | None, lists: Sequence, drawn: np.ndarray, f: np.ndarray,
                      pi: np.ndarray, lam: float, change: np.ndarray):
    """One query's part of the weight of a hit in :func:`rare_hit_interval`, per run: the sum and
    number of ``max(0, change_i) (1 - lambda f_i)/pi_i`` over the drawn pairs the run's measure
    lists (its whole list for AP, its top k for nDCG and P). ``change`` (runs, len(drawn)) from
    :func:`_first_differences`."""
    jump = (1.0 - lam * f[drawn]) / pi[drawn]
    total, count = np.zeros(len(lists)), np.zeros(len(lists))
    for r, pos in enumerate(lists):
        if pos is None or not len(pos) or not len(drawn):
            continue
        listed = np.isin(drawn, pos if kind == "AP" else pos[:k])
        total[r] = float((np.maximum(change[r], 0.0) * jump)[listed].sum())
        count[r] = int(listed.sum())
    return total, count


def rare_hit_interval(base_sum, estimate_sum, variance_sum, weight_sum, weight_count, n_queries: int,
                      confidence: float):
    """The AP / nDCG interval's rare-event side: :func:`.estimates.c_at_k_interval` (the Fay-Feuer
    gamma interval, C@K's widening) applied to the part of the summed estimate the sample's draws
    make, ``y = estimate_sum - base_sum`` (``base_sum``: the measure summed over queries with every
    drawn pair at its undrawn value, lambda f; the human-only one's: the fixed labels only), with
    its variance estimate ``variance_sum`` and the weight of one more hit ``w = weight_sum /
    weight_count``, the mean over the drawn pairs the run lists of what catching one relevant adds
    to the sum, ``max(0, d_i M) (1 - lambda f_i)/pi_i`` (``d_i M``: the query's change when pair i
    turns relevant). The gamma interval's upper end is capped at ``n - base_sum`` (a query's measure
    is at most 1). Returns (low, high) of the mean; where no drawn pair is listed, w = 0 and the
    gamma interval is the point ``y`` (no widening).

    Why: a few relevant pairs among thousands of sampled-frame pairs (a weak run's holes) are often
    all missed by a 20% sample. Then the unbiased variance estimate reads no residual, the judging
    estimates' floor reads a relevant share of zero, and AP's interval had almost no width: 95%
    intervals covered 0.80 of the samples in bench_submissions (MSR-VTT's worse run). As for C@K,
    the estimate's sampled part is a sum of rare weighted events; the gamma interval on it with
    one more event of the mean weight reaches ``3.69 w`` (at 95%) above the estimate when nothing
    was caught. Approximate where C@K's is exact: a hit's effect on AP varies with its rank and
    the query's other relevant pairs (the mean weight stands for it, Tiwari et al. 2006's
    mean-weight variant) and can be negative (a relevant pair the run ranks low, or does not rank,
    lowers AP: those count 0 in the weight, the normal interval carries them)."""
    base_sum, estimate_sum, variance_sum, weight_sum, weight_count = (
        np.asarray(a, dtype=np.float64) for a in (base_sum, estimate_sum, variance_sum, weight_sum, weight_count))
    weight = np.where(weight_count > 0, weight_sum / np.maximum(weight_count, 1.0), 0.0)
    # a query's measure is at most 1, so the draws' part of the true sum is at most n - base
    return c_at_k_interval(base_sum, estimate_sum - base_sum, variance_sum, weight,
                           np.clip(n_queries - base_sum, 0.0, None), n_queries, confidence)


def c_at_k_moments(x: np.ndarray, v: np.ndarray, member: np.ndarray, full: bool = True):
    """C@K of every run and query, vectorised: ``x``, ``v`` (..., Q, N) rectified labels and their
    variance estimates over padded items (padding: x = v = 0), ``member`` (R, Q, N) bool, pair in
    the run's top K. Returns (estimates (..., Q, R), covariance estimates (..., Q, R, R) when
    ``full`` else variances (..., Q, R)). A run with no list for a query has no members: C@K 0."""
    z = 1.0 - x
    zz = z * z - v
    mem = member.astype(bool)
    t = np.stack([np.prod(np.where(mem[r], z, 1.0), axis=-1) for r in range(mem.shape[0])], axis=-1)
    has = mem.any(axis=-1).T                                  # (Q, R)
    est = np.where(has, 1.0 - t, 0.0)
    if not full:
        sq = np.stack([np.prod(np.where(mem[r], zz, 1.0), axis=-1) for r in range(mem.shape[0])], axis=-1)
        return est, np.where(has, t * t - sq, 0.0)
    runs = mem.shape[0]
    cov = np.zeros(est.shape + (runs,))
    for a in range(runs):
        for b in range(a, runs):
            both, either = mem[a] & mem[b], mem[a] | mem[b]
            cross = np.prod(np.where(both, zz, np.where(either, z, 1.0)), axis=-1)
            value = np.where(has[:, a] & has[:, b], t[..., a] * t[..., b] - cross, 0.0)
            cov[..., a, b] = value
            cov[..., b, a] = value
    return est, cov


def satterthwaite_quantile(query_variances, confidence: float, axis=-1) -> np.ndarray:
    """Student t quantile at df = (sum v_q)^2 / sum v_q^2 over ``axis`` (negative v_q count as 0;
    normal quantile when the variance is 0)."""
    v = np.clip(np.asarray(query_variances, dtype=np.float64), 0.0, None)
    total, squares = v.sum(axis=axis), (v * v).sum(axis=axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(squares > 0, total * total / np.where(squares > 0, squares, 1.0), np.inf)
    return np.where(np.isfinite(df), stats.t.ppf(0.5 + confidence / 2.0, np.where(np.isfinite(df), df, 1.0)),
                    stats.norm.ppf(0.5 + confidence / 2.0))


def c_at_k_floor(f: np.ndarray, guess: np.ndarray, weight: np.ndarray, member: np.ndarray,
                 lams) -> np.ndarray:
    """The design's first-order variance of each run's C@K on each query with each pair's residual
    ``(y - lambda f)^2`` replaced by its expectation when ``y ~ Bernoulli(f)`` (the machine's
    belief), ``f (1 - f) + (1 - lambda)^2 f^2``, as a Horvitz-Thompson sum over the sampled pairs:
    ``sum_{i sampled, pi_i < 1} (1 - pi_i)/pi_i^2 (f_i (1 - f_i) + (1 - lambda)^2 f_i^2) d_i^2``,
    ``d_i = prod_{j in top K, j != i} (1 - guess_j)`` the change in C@K when pair i turns relevant,
    the other pairs at their best guess (label when judged or known, else f).

    ``f``, ``guess``, ``weight`` (Q, N): ``weight`` = ``(1 - pi)/pi^2`` on the pairs sampled with
    pi < 1, else 0 (padding: 0); ``member`` (R, Q, N); ``lams`` (G,). Returns (G, Q, R); rows at
    lambda = 0 are 0 (the human-only interval is the judging estimates', unchanged).

    Why: with lambda near 1 and a good judge, the unbiased variance estimate rests on the rare
    large residuals (a confident machine miss caught at a small pi). A sample that catches none
    reports a small variance exactly when its estimate is off: 95% C@10 intervals covered 88-90%
    in the bench (the weakest run with the active design, the strongest on today's design, kappa
    0.8). The floor reads every sampled pair's f, so it does not shrink with the catch; for a
    calibrated judge it is the variance the design expects."""
    lams = np.atleast_1d(np.asarray(lams, dtype=np.float64))
    f, guess, weight = (np.asarray(a, dtype=np.float64) for a in (f, guess, weight))
    mem = np.asarray(member, dtype=bool)
    z = np.clip(1.0 - guess, 0.0, 1.0)
    resid = f * (1.0 - f) + ((1.0 - lams) ** 2)[:, None, None] * (f * f)[None]   # (G, Q, N)
    out = np.zeros((lams.size,) + f.shape[:-1] + (mem.shape[0],))
    for r in range(mem.shape[0]):
        zr = np.where(mem[r], z, 1.0)
        zero = zr <= 0.0
        n_zero = zero.sum(axis=-1, keepdims=True)
        nonzero_prod = np.prod(np.where(zero, 1.0, zr), axis=-1, keepdims=True)
        # the product over the other top-K pairs: 0 when another pair is surely relevant
        d = np.where(n_zero == 0, nonzero_prod / np.where(zero, 1.0, zr),
                     np.where((n_zero == 1) & zero, nonzero_prod, 0.0))
        out[..., r] = (np.where(mem[r], weight * d * d, 0.0)[None] * resid).sum(axis=-1)
    out[lams == 0.0] = 0.0
    return out


def c_at_k_hull(est: np.ndarray, var: np.ndarray, settled: np.ndarray, jump_sum: np.ndarray,
                jump_count: np.ndarray, fallback: np.ndarray, n_queries: int, confidence: float,
                floor: np.ndarray | None = None):
    """C@K interval per lambda and run, as the judging estimates' (hull of the normal interval and
    the Fay-Feuer gamma interval on the unsettled queries) with the weight of one more hit at
    lambda: a relevant pair the sample catches adds ``(1 - lambda f)/pi`` (``1/pi`` at lambda = 0,
    where this is exactly the human-only interval). ``est``, ``var`` (G, Q, R) per query;
    ``settled`` (Q, R): a certain relevant pair (original, or judged relevant with pi = 1) in the
    top K, or no top-K pair left to the sample; ``jump_sum``, ``jump_count`` (G, Q, R): sum and
    number of ``(1 - lambda f)/pi`` over the top-K pairs sampled with pi < 1; ``fallback`` (G,):
    its mean over every pair sampled with pi < 1; ``floor`` (G, Q, R), :func:`c_at_k_floor`: the
    normal interval's summed variance is at least the summed floor (the Fay-Feuer interval, which
    reaches for the hits a sample misses above the estimate, keeps the unbiased variance: flooring
    it too widened the upper side with no coverage gained in the bench). Returns (low, high), (G, R)."""
    floor = np.zeros_like(var) if floor is None else np.asarray(floor, dtype=np.float64)
    uns = ~settled[None]
    settled_sum = np.where(uns, 0.0, est).sum(axis=1)
    hits = np.where(uns, est, 0.0).sum(axis=1)
    hits_var = np.where(uns, var, 0.0).sum(axis=1)
    count = np.where(uns, jump_count, 0).sum(axis=1)
    total = np.where(uns, jump_sum, 0.0).sum(axis=1)
    weight = np.where(count > 0, total / np.maximum(count, 1), np.asarray(fallback)[:, None])
    n_uns = (~settled).sum(axis=0)[None, :]
    z = float(stats.norm.ppf(0.5 + confidence / 2.0))
    mean = est.sum(axis=1) / n_queries
    se = floored_se(var, floor, n_queries)
    low, high = c_at_k_interval(settled_sum, hits, hits_var, weight, n_uns, n_queries, confidence)
    return np.minimum(mean - z * se, low), np.maximum(mean + z * se, high)


def floored_se(var: np.ndarray, floor: np.ndarray, n_queries: int) -> np.ndarray:
    """se of a mean over queries from per-query variances (G, Q, ...), the sum floored by the
    summed floor."""
    return np.sqrt(np.clip(np.maximum(var.sum(axis=1), floor.sum(axis=1)), 0.0, None)) / n_queries


def pooled_lambda(f, y, pi) -> float:
    """PPI++'s lambda for the mean of the labels under the Poisson design, from the pairs sampled
    with pi < 1 (arrays over them): the minimiser of ``sum w (y - lambda f)^2``, ``w = (1 - pi)/pi^2``
    (the variance estimate of the HT rectifier), clipped to [0, 1]; 0 without such pairs."""
    f, y, pi = (np.asarray(a, dtype=np.float64) for a in (f, y, pi))
    w = (1.0 - pi) / pi**2
    den = float((w * f * f).sum())
    return float(np.clip((w * y * f).sum() / den, 0.0, 1.0)) if den > 0 else 0.0


def tune(estimates: np.ndarray, query_variances: np.ndarray, n_queries: int, confidence: float):
    """Power tuning over the lambda grid: ``estimates`` (G, ...) means over queries, per lambda;
    ``query_variances`` (G, Q, ...) per-query variance estimates of the sums. Returns (index of
    the chosen lambda (...), se (G, ...), half-width (G, ...)): the lambda of smallest half-width,
    the smallest lambda among ties (so lambda = 0 when the machine does not help)."""
    var = np.clip(query_variances.sum(axis=1), 0.0, None)
    se = np.sqrt(var) / max(n_queries, 1)
    half = satterthwaite_quantile(np.moveaxis(query_variances, 1, -1), confidence) * se
    return np.argmin(half, axis=0), se, half


# ------------------------------------------------------------------ the report's estimator

@dataclass
class _Q:
    f: np.ndarray
    y: np.ndarray
    sampled: np.ndarray        # judged with pi < 1
    certain: np.ndarray        # known relevant or judged with pi = 1: x = y whatever lambda
    pi: np.ndarray
    lists: list                # per run: positions in rank order, or None


def _prepare(rankings, predictions, judged, inclusion, known_relevant, default_prediction):
    known, queries = pooled_queries(rankings, known_relevant)
    judged_of: dict[str, list] = {q: [] for q in queries}
    for (q, item), relevant in judged.items():
        if q in judged_of:
            judged_of[q].append((item, bool(relevant)))
    runs = sorted(rankings)
    by_run = {run: {str(q): items for q, items in rankings[run].items()} for run in runs}
    out = {}
    for q in queries:
        index: dict[str, int] = {}
        lists = []
        for run in runs:
            ranked = by_run[run].get(q)
            if not ranked:
                lists.append(None)
                continue
            seen, positions = set(), []
            for item in ranked:
                item = str(item)
                if item not in seen:
                    seen.add(item)
                    positions.append(index.setdefault(item, len(index)))
            lists.append(np.asarray(positions, dtype=np.int64))
        for item, _ in judged_of[q]:
            index.setdefault(item, len(index))
        for item in known.get(q, ()):
            index.setdefault(item, len(index))
        n = len(index)
        f = np.full(n, np.nan)
        y = np.zeros(n)
        sampled = np.zeros(n, dtype=bool)
        certain = np.zeros(n, dtype=bool)
        pi = np.ones(n)
        for item, i in index.items():
            value = predictions.get((q, item))
            if value is not None:
                value = float(value)
                if not 0.0 <= value <= 1.0:
                    raise ValueError(f"prediction of ({q!r}, {item!r}) is {value}; must be in [0, 1]")
                f[i] = value
        for item, relevant in judged_of[q]:
            i = index[item]
            p = float(inclusion.get((q, item), 1.0))
            if not 0.0 < p <= 1.0:
                raise ValueError(f"inclusion probability of ({q!r}, {item!r}) is {p}; must be in (0, 1]")
            y[i], pi[i] = float(relevant), p
            sampled[i], certain[i] = p < 1.0, p >= 1.0
        for item in known.get(q, ()):
            i = index[item]
            y[i], sampled[i], certain[i] = 1.0, False, True
        missing = np.isnan(f)
        f[missing] = default_prediction
        out[q] = (_Q(f, y, sampled, certain, pi, lists), int((missing & ~certain).sum()))
    return runs, list(queries), out


def _rectified(qd: _Q, lam: float):
    x = np.where(qd.certain, qd.y, lam * qd.f)
    r = qd.y - lam * qd.f
    x = np.where(qd.sampled, lam * qd.f + r / qd.pi, x)
    v = np.where(qd.sampled, (1.0 - qd.pi) / qd.pi**2 * r * r, 0.0)
    return x, v


def _top_items(prepared: Mapping, query_ids: Sequence[str], n_runs: int, depth: int, rectified: Mapping,
               n_lambdas: int):
    """Every query's items in some run's top ``depth`` (the only ones a C@K up to that depth reads),
    padded to a common width so that C@K is computed for all queries at once: ``rank`` (R, Q, N),
    each item's rank in each run (``depth`` where it is not in that run's top ``depth``), the
    query's ``f``, ``y``, ``pi``, ``sampled``, ``certain`` (Q, N) and the rectified ``x``, ``v``
    (G, Q, N) at those items. Padding: ``x = v = f = y = 0``, ``pi = 1``, never a member."""
    chosen = []
    for q in query_ids:
        qd = prepared[q][0]
        tops = [pos[:depth] for pos in qd.lists if pos is not None]
        chosen.append(np.unique(np.concatenate(tops)) if tops else np.zeros(0, dtype=np.int64))
    width = max([len(c) for c in chosen] + [1])
    n_q, n_g = len(query_ids), n_lambdas
    rank = np.full((n_runs, n_q, width), depth, dtype=np.int64)
    f, y = np.zeros((n_q, width)), np.zeros((n_q, width))
    pi = np.ones((n_q, width))
    sampled, certain = np.zeros((n_q, width), dtype=bool), np.zeros((n_q, width), dtype=bool)
    x, v = np.zeros((n_g, n_q, width)), np.zeros((n_g, n_q, width))
    for qi, (q, items) in enumerate(zip(query_ids, chosen)):
        qd, n = prepared[q][0], len(items)
        if not n:
            continue
        f[qi, :n], y[qi, :n], pi[qi, :n] = qd.f[items], qd.y[items], qd.pi[items]
        sampled[qi, :n], certain[qi, :n] = qd.sampled[items], qd.certain[items]
        for g, (xg, vg) in enumerate(rectified[q]):
            x[g, qi, :n], v[g, qi, :n] = xg[items], vg[items]
        for r, pos in enumerate(qd.lists):
            if pos is not None:
                top = pos[:depth]
                rank[r, qi, np.searchsorted(items, top)] = np.arange(len(top))
    return {"rank": rank, "f": f, "y": y, "pi": pi, "sampled": sampled, "certain": certain, "x": x, "v": v}


def ppi_estimates(rankings: Mapping[str, Mapping[str, Sequence[str]]],   # run -> query -> ranked items
                  predictions: Mapping[tuple[str, str], float],          # (query, item) -> f in [0, 1]
                  judged: Mapping[tuple[str, str], bool],                # (query, item) -> human label
                  inclusion: Mapping[tuple[str, str], float],            # (query, item) -> pi (judged)
                  *, known_relevant: Mapping[str, set[str]] | None = None,
                  measures: Sequence[str] = MEASURES, confidence: float = 0.95,
                  human_intervals: Mapping[tuple[str, str], tuple[float, float]] | None = None,
                  fixed_lambda: float | None = None,
                  default_prediction: float | None = None, design: str | None = None,
                  rare_hits: bool = False) -> PPIReport:
    """PPI++ estimates of each measure for each run and of the differences of runs adjacent in
    the PPI ranking (see module). Same conventions as :func:`.estimates.estimate_metrics`
    (queries, known relevant, unjudged pairs, a judged pair missing from ``inclusion`` has
    pi = 1). ``predictions`` should cover every pooled pair; a pair without one gets
    ``default_prediction`` (default: the mean of the given predictions; any value keeps the
    estimator unbiased). ``human_intervals`` ((run, measure) -> (low, high), the human-only
    report's): where the PPI interval would be wider, lambda = 0 and that interval are kept.
    ``fixed_lambda``: no tuning (the enumeration tests). ``rare_hits``: AP, nDCG and P intervals
    widened by :func:`rare_hit_interval` (the human-only one too, before the guard compares), for a
    sample frame whose relevant pairs are rare (a submitted run's holes)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be in (0, 1)")
    parsed = [(m, *_parse_measure(m)) for m in measures]
    predictions = str_pair_keys(predictions, "prediction")
    judged = str_pair_keys(judged, "judged")
    inclusion = str_pair_keys(inclusion, "inclusion")
    if default_prediction is None:
        given = [float(v) for v in predictions.values()]
        default_prediction = float(np.mean(given)) if given else 0.5
    if fixed_lambda is not None and not 0.0 <= fixed_lambda <= 1.0:
        raise ValueError("fixed_lambda must lie in [0, 1]")
    runs, query_ids, prepared = _prepare(rankings, predictions, judged, inclusion, known_relevant,
                                         default_prediction)
    n_q = max(len(query_ids), 1)
    n_runs = len(runs)
    all_f = np.concatenate([qd.f[qd.sampled] for qd, _ in prepared.values()] or [np.zeros(0)])
    all_y = np.concatenate([qd.y[qd.sampled] for qd, _ in prepared.values()] or [np.zeros(0)])
    all_pi = np.concatenate([qd.pi[qd.sampled] for qd, _ in prepared.values()] or [np.zeros(0)])
    lam_hat = fixed_lambda if fixed_lambda is not None else pooled_lambda(all_f, all_y, all_pi)
    # lambda = 0 is always evaluated: the human-only numbers on the same labels
    grid = np.unique([0.0, lam_hat])
    chosen = int(np.flatnonzero(grid == lam_hat)[0])
    guard = fixed_lambda is None
    out_runs: list[PPIEstimate] = []
    out_diffs: list[PPIDifference] = []
    fallback_queries = 0
    # x and v depend on the query and lambda only, not on the measure
    rectified = {q: [_rectified(prepared[q][0], lam) for lam in grid] for q in query_ids}
    c_depths = [k for _, kind, k in parsed if kind == "C"]
    top = _top_items(prepared, query_ids, n_runs, max(c_depths), rectified, len(grid)) if c_depths \
        else None
    for name, kind, k in parsed:
        est = np.zeros((len(grid), len(query_ids), n_runs))
        cov = np.zeros((len(grid), len(query_ids), n_runs, n_runs))
        settled = np.ones((len(query_ids), n_runs), dtype=bool)
        jump_sum = np.zeros((len(grid), len(query_ids), n_runs))
        jump_count = np.zeros((len(query_ids), n_runs))
        floor = np.zeros((len(grid), len(query_ids), n_runs))
        if kind == "C":
            member = top["rank"] < k                                                   # (R, Q, N)
            sampled, certain = top["sampled"][None], top["certain"][None]
            settled = ((member & certain & (top["y"][None] > 0)).any(axis=-1) | (~member | certain).all(axis=-1)).T
            drawn = member & sampled
            jump_count = drawn.sum(axis=-1).T.astype(np.float64)
            jumps = (1.0 - grid[:, None, None] * top["f"][None]) / top["pi"][None]       # (G, Q, N)
            jump_sum = np.stack([np.where(drawn[r][None], jumps, 0.0).sum(axis=-1) for r in range(n_runs)], axis=-1)
            est, cov = c_at_k_moments(top["x"], top["v"], member)
            guess = np.where(top["sampled"] | top["certain"], top["y"], top["f"])
            weight = np.where(top["sampled"], (1.0 - top["pi"]) / top["pi"] ** 2, 0.0)
            floor = c_at_k_floor(top["f"], guess, weight, member, grid)
        if kind != "C":
            cases = [(prepared[q][0].lists, x, v) for q in query_ids for x, v in rectified[q]]
            results = iter(_expansions(kind, k, cases))
            for qi in range(len(query_ids)):
                exact = True
                for g in range(len(grid)):
                    e, c, ok = next(results)
                    est[g, qi], cov[g, qi] = e, c
                    exact &= ok
                fallback_queries += not exact
        if kind != "C" and rare_hits:
            # the rare-event side: each query with its draws undone, and each draw's effect
            probes, owners = [], []
            for q in query_ids:
                qd = prepared[q][0]
                drawn = np.flatnonzero(qd.sampled)
                for g, (x, _) in enumerate(rectified[q]):
                    x0 = x.copy()
                    x0[drawn] = grid[g] * qd.f[drawn]
                    probes.append((qd.lists, x0, drawn))
                    owners.append((qd, drawn, g))
            base_sum, weight_sum = np.zeros((len(grid), n_runs)), np.zeros((len(grid), n_runs))
            weight_count = np.zeros((len(grid), n_runs))
            for (qd, drawn, g), (base, change) in zip(owners, _first_differences(kind, k, probes)):
                total, count = _rare_hit_weights(kind, k, qd.lists, drawn, qd.f, qd.pi, grid[g], change)
                base_sum[g] += base
                weight_sum[g] += total
                weight_count[g] += count
        means = est.sum(axis=1) / n_q                                   # (G, R)
        variances = np.diagonal(cov, axis1=2, axis2=3)                  # (G, Q, R)
        _, se, half = tune(means, variances, n_q, confidence)
        lows, highs = means - half, means + half
        rare = None
        if kind != "C" and rare_hits:
            rare = rare_hit_interval(base_sum, est.sum(axis=1), np.clip(variances, 0.0, None).sum(axis=1),
                                     weight_sum, weight_count, n_q, confidence)
            lows, highs = np.minimum(lows, rare[0]), np.maximum(highs, rare[1])
        if kind == "C":
            fallback = np.asarray([(1.0 - lam * all_f) / all_pi for lam in grid]).mean(axis=1) if all_pi.size \
                else np.zeros(len(grid))
            lows, highs = c_at_k_hull(est, variances, settled, jump_sum,
                                      np.broadcast_to(jump_count, jump_sum.shape), fallback, n_q, confidence, floor)
            se = floored_se(variances, floor, n_q)
        zero = 0
        final = {}
        for r, run in enumerate(runs):
            g = chosen
            low, high = lows[g, r], highs[g, r]
            lam = float(grid[g])
            human = (human_intervals or {}).get((run, name), (lows[zero, r], highs[zero, r]))
            if rare is not None:         # the human-only interval with its rare-event side (lambda 0)
                human = (min(human[0], rare[0][zero, r]), max(human[1], rare[1][zero, r]))
            if guard and high - low > human[1] - human[0]:
                g, lam, (low, high) = zero, 0.0, human
            final[run] = means[g, r]
            out_runs.append(PPIEstimate(run, name, float(means[g, r]), float(se[g, r]), float(low), float(high), lam,
                                        float(means[zero, r]), float(se[zero, r])))
        order = sorted(range(n_runs), key=lambda r: (-final[runs[r]], runs[r]))
        for a, b in zip(order, order[1:]):
            c = np.zeros(n_runs)
            c[a], c[b] = 1.0, -1.0
            d_means = means @ c                                          # (G,)
            d_vars = np.einsum("gqrs,r,s->gq", cov, c, c)
            _, d_se, d_half = tune(d_means, d_vars, n_q, confidence)
            g, h = chosen, zero
            if guard and d_half[g] > d_half[h]:
                g = h
            out_diffs.append(PPIDifference(
                name, runs[a], runs[b], float(d_means[g]), float(d_se[g]), float(d_means[g] - d_half[g]),
                float(d_means[g] + d_half[g]), float(grid[g]), float(d_means[h]), float(d_se[h]),
                float(d_means[h] - d_half[h]), float(d_means[h] + d_half[h])))
    sampled_pis = [qd.pi[qd.sampled] for qd, _ in prepared.values()]
    sampled_pis = np.concatenate(sampled_pis) if sampled_pis else np.zeros(0)
    if design is None:
        design = (f"poisson sample: {sampled_pis.size} pairs judged with pi < 1 (pi {sampled_pis.min():.3g} to "
                  f"{sampled_pis.max():.3g}), weighted by 1/pi; independent inclusions"
                  if sampled_pis.size else "census: every judged pair has pi = 1")
    conventions = {
        "lambda": f"{lam_hat:.4g} (" + ("fixed" if fixed_lambda is not None else
                                        f"PPI++ optimum of the pair-level mean over {all_pi.size} pairs sampled "
                                        "with pi < 1") + "); 0 is the human-only Horvitz-Thompson estimator (the "
                  "judging estimates'), 1 plain PPI; 0 is kept wherever the interval would be wider",
        "prediction": "the machine's score when it gives one, else 1 for 'relevant' and 0 for 'not relevant'",
        "pairs_without_prediction": f"{sum(m for _, m in prepared.values())} (given {default_prediction:.3g})",
        "differences": "runs adjacent in the PPI ranking, better - worse",
    }
    if fallback_queries:
        conventions["first_order_variance"] = (
            f"{fallback_queries} query-measure cases have more than {MAX_EXACT_VARIANCE_PAIRS} sampled pairs: "
            "their AP / nDCG variance keeps its first-order term only (approximate)")
    return PPIReport(out_runs, out_diffs, ESTIMATOR_NAME, design,
                     INTERVAL_NAME + (RARE_HITS_INTERVAL if rare_hits else ""), conventions)
