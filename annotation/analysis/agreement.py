"""Inter-rater agreement, label resolution and per-rater quality (methodology section 5).

Pure NumPy (plus the ``krippendorff`` package for the reference alpha); no Django.

Input convention, shared by every function here: labels arrive as parallel 1-D arrays, one entry
per label,

- ``unit``: the pair (caption-clip) the label is about, as an integer id;
- ``value``: the label code, a non-negative integer (e.g. 0 = not relevant, 1 = relevant, or a
  graded 0-4 scale). Codes index count matrices, so keep them small;
- ``order`` (optional): the label's sequence number within its unit by submission time. Only its
  order inside a unit matters; when omitted, the position in the input arrays is used;
- ``rater``, ``seconds`` where needed.

Which labels count is the caller's decision: pass verdicts only (technical "broken clip" reports
are not verdicts). An "ambiguous" verdict, if passed, is just another nominal code.

Krippendorff's alpha depends only on the multiset of values each unit received, not on who gave
them, so nothing here needs rater identity for alpha. This also keeps data where the same rater
labelled a unit twice (the public TVR-Ranking raw file has ~16K such rows) well defined: both
values count. The usual rule keeps one label per (unit, rater), the last: apply it first with
``repeats.resolve_repeats``, which also counts the repeats (``manage.py agreement`` does).

Undefined quantities are ``float('nan')`` (e.g. alpha with no multiply-labelled unit, or when all
pairable values are identical so that expected disagreement is 0). Note that ``json.dumps`` writes
NaN as the non-standard token ``NaN``; use ``to_dict(nan_as_none=True)`` for strict JSON.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import krippendorff
import numpy as np
from numpy.typing import ArrayLike, NDArray

Level = Literal["nominal", "ordinal", "interval"]

#: Sentinel in resolved arrays: the unit has labels but no strict majority.
UNRESOLVED = -1
#: Sentinel in resolved arrays: the unit has no label at all.
NO_LABELS = -2

_LEVELS = ("nominal", "ordinal", "interval")
# Bootstrap weight matrices are built in batches of about this many entries (memory bound).
_BOOT_BATCH_ENTRIES = 4_000_000


def _nan_to_none(obj: Any) -> Any:
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: _nan_to_none(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_nan_to_none(v) for v in obj]
    return obj


class _Serialisable:
    def to_dict(self, *, nan_as_none: bool = False) -> dict[str, Any]:
        """Plain dict of Python ints/floats/lists; NaN becomes None if ``nan_as_none``."""
        d = asdict(self)  # type: ignore[call-overload]
        return _nan_to_none(d) if nan_as_none else d


# --------------------------------------------------------------------------------------------
# input helpers


def _as_labels(unit: ArrayLike, value: ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    u = np.asarray(unit)
    v = np.asarray(value)
    if u.ndim != 1 or v.shape != u.shape:
        raise ValueError("unit and value must be 1-D arrays of the same length")
    if v.dtype.kind not in "iu" and v.size:
        vf = v.astype(float)
        if not np.all(np.isfinite(vf)) or np.any(vf % 1 != 0):
            raise ValueError("value must hold integer codes (filter out missing labels first)")
    # No copy of columns that are int64 already (nothing here writes to them): at 1.33M votes the
    # copies made in agreement() and again in value_counts_matrix() were 42 MB (issue 40).
    v = v.astype(np.int64, copy=False)
    if v.size and v.min() < 0:
        raise ValueError("value codes must be non-negative integers")
    return u.astype(np.int64, copy=False), v


def label_positions(unit: ArrayLike, *, order: ArrayLike | None = None) -> NDArray[np.int64]:
    """0-based position of each label within its unit, by ``order`` (ties: input position).

    Used to select "the first two labels" of each unit. ``order`` need not be contiguous: only its
    ranking inside a unit matters, so gaps left by deleted labels are harmless.
    """
    u = np.asarray(unit, dtype=np.int64)
    n = u.size
    key = np.arange(n) if order is None else np.asarray(order)
    if key.shape != u.shape:
        raise ValueError("order must have the same length as unit")
    idx = np.lexsort((np.arange(n), key, u))  # stable: unit, then order, then input position
    su = u[idx]
    starts = np.flatnonzero(np.r_[True, su[1:] != su[:-1]]) if n else np.zeros(0, np.int64)
    counts = np.diff(np.r_[starts, n])
    pos = np.empty(n, dtype=np.int64)
    pos[idx] = np.arange(n) - np.repeat(starts, counts)
    return pos


def value_counts_matrix(
    unit: ArrayLike, value: ArrayLike, *, n_values: int | None = None
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Units x values count matrix (the input form Krippendorff calls ``value_counts``).

    Returns ``(unit_ids, counts)`` where ``unit_ids`` are the sorted distinct units and
    ``counts[i, c]`` the number of labels with value ``c`` on ``unit_ids[i]``.
    """
    u, v = _as_labels(unit, value)
    V = int(n_values) if n_values is not None else (int(v.max()) + 1 if v.size else 1)
    ids, inv = np.unique(u, return_inverse=True)
    counts = np.bincount(inv * V + v, minlength=ids.size * V).reshape(ids.size, V)
    return ids, counts


# --------------------------------------------------------------------------------------------
# alpha from the coincidence matrix


def _distance_matrices(n_v: NDArray[np.float64], level: str) -> NDArray[np.float64]:
    """Squared distance delta^2(c, k) for a batch of value marginals ``n_v`` of shape (B, V).

    Ordinal uses Krippendorff's rank-based metric, which depends on the marginals; that is why
    the distances are per replicate.
    """
    B, V = n_v.shape
    c = np.arange(V)
    if level == "nominal":
        return np.broadcast_to((c[:, None] != c[None, :]).astype(float), (B, V, V))
    if level == "interval":
        return np.broadcast_to(((c[:, None] - c[None, :]) ** 2).astype(float), (B, V, V))
    if level == "ordinal":
        lo = np.minimum(c[:, None], c[None, :])
        hi = np.maximum(c[:, None], c[None, :])
        cum = np.cumsum(n_v, axis=1)
        # sum_{g=lo}^{hi} n_g - (n_lo + n_hi) / 2
        between = cum[:, hi] - cum[:, lo] + n_v[:, lo]
        return (between - (n_v[:, lo] + n_v[:, hi]) / 2.0) ** 2
    raise ValueError(f"level must be one of {_LEVELS}, got {level!r}")


def _alpha_from_coincidences(o: NDArray[np.float64], level: str) -> NDArray[np.float64]:
    """alpha = 1 - D_o / D_e for a batch of coincidence matrices ``o`` of shape (B, V, V)."""
    n_v = o.sum(axis=2)
    n = n_v.sum(axis=1)
    d = _distance_matrices(n_v, level)
    d_o = (o * d).sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        e = (n_v[:, :, None] * n_v[:, None, :] - n_v[:, :, None] * np.eye(n_v.shape[1])) / (
            n - 1.0
        )[:, None, None]
        d_e = (e * d).sum(axis=(1, 2))
        alpha = 1.0 - d_o / d_e
    alpha[~(d_e > 0)] = np.nan
    return alpha


def _unit_coincidences(counts: NDArray[np.int64]) -> NDArray[np.float64]:
    """Per-unit contribution to the coincidence matrix, shape (U, V*V), for units with m_u >= 2.

    o_ck = sum_u n_uc (n_uk - [c == k]) / (m_u - 1): every ordered pair of values within a unit,
    weighted so that each unit contributes m_u pairable values in total.
    """
    U, V = counts.shape
    m = counts.sum(axis=1).astype(float)
    a = counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(V, dtype=np.int64)
    return (a / (m - 1.0)[:, None, None]).reshape(U, V * V)


def alpha_from_value_counts(counts: ArrayLike, *, level: Level) -> float:
    """Krippendorff's alpha from a units x values count matrix, computed via coincidences.

    Units with fewer than two values are not pairable and are ignored. Values are the column
    indices (so ordinal/interval treat column order / column index as the scale). Returns NaN when
    there is no pairable unit or the expected disagreement is 0 (a single value). This is the
    implementation the bootstrap uses; tests check it equals the ``krippendorff`` package.
    """
    c = np.asarray(counts, dtype=np.int64)
    c = c[c.sum(axis=1) >= 2]
    if c.shape[0] == 0:
        return float("nan")
    o = _unit_coincidences(c).sum(axis=0).reshape(1, c.shape[1], c.shape[1])
    return float(_alpha_from_coincidences(o, level)[0])


def krippendorff_alpha(
    unit: ArrayLike,
    value: ArrayLike,
    *,
    level: Level,
    order: ArrayLike | None = None,
    first_two: bool = False,
) -> float:
    """Krippendorff's alpha via the ``krippendorff`` package (the reference implementation).

    Only multiply-labelled units are handed to the package: single labels are not pairable and
    do not change alpha, and dropping them keeps 600K-label inputs fast. The data go in as the
    package's ``value_counts`` (units x values) rather than a raters x units matrix, because alpha
    is defined on values per unit and a rater may legitimately appear twice in a unit.
    ``level`` is required because the package silently defaults to "interval".
    """
    if level not in _LEVELS:
        raise ValueError(f"level must be one of {_LEVELS}, got {level!r}")
    u, v = _as_labels(unit, value)
    if first_two:
        keep = label_positions(u, order=order) < 2
        u, v = u[keep], v[keep]
    _, counts = value_counts_matrix(u, v)
    return _package_alpha(counts[counts.sum(axis=1) >= 2], level)


def _package_alpha(counts: NDArray[np.int64], level: Level) -> float:
    """The ``krippendorff`` package's alpha of a multiply-labelled units x values count matrix."""
    if counts.shape[0] == 0 or np.count_nonzero(counts.sum(axis=0)) < 2:
        return float("nan")
    return float(
        krippendorff.alpha(
            value_counts=counts,
            value_domain=np.arange(counts.shape[1]),
            level_of_measurement=level,
        )
    )


# --------------------------------------------------------------------------------------------
# agreement with bootstrap intervals


@dataclass
class AgreementResult(_Serialisable):
    """Agreement over the multiply-labelled units.

    - ``percent_agreement``: share (0-1, as FIRE reports 0.931) of multiply-labelled units whose
      labels are all identical. For graded scales this is exact equality.
    - ``alpha``: Krippendorff's alpha at ``level`` (package value).
    - ``*_ci``: bootstrap percentile interval at ``confidence``, resampling multiply-labelled units
      with replacement (``n_boot`` replicates, ``seed``); replicates where alpha is undefined are
      skipped. [nan, nan] when ``n_boot`` is 0 or nothing is defined.
    - ``labels``: "first_two" or "all".
    """

    labels: str
    level: str
    n_units_labelled: int
    n_units_multi: int
    n_pairable_labels: int
    percent_agreement: float
    alpha: float
    percent_agreement_ci: list[float] = field(default_factory=lambda: [math.nan, math.nan])
    alpha_ci: list[float] = field(default_factory=lambda: [math.nan, math.nan])
    n_boot: int = 0
    confidence: float = 0.95
    seed: int | None = None


def percent_agreement(
    unit: ArrayLike, value: ArrayLike, *, order: ArrayLike | None = None, first_two: bool = False
) -> float:
    """Share of units with >= 2 labels whose labels all agree; NaN without such units."""
    u, v = _as_labels(unit, value)
    if first_two:
        keep = label_positions(u, order=order) < 2
        u, v = u[keep], v[keep]
    _, counts = value_counts_matrix(u, v)
    m = counts.sum(axis=1)
    multi = m >= 2
    if not multi.any():
        return float("nan")
    return float(np.mean(counts[multi].max(axis=1) == m[multi]))


def agreement(
    unit: ArrayLike,
    value: ArrayLike,
    *,
    level: Level = "nominal",
    order: ArrayLike | None = None,
    first_two: bool = False,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> AgreementResult:
    """Percent agreement and Krippendorff's alpha, with unit-bootstrap percentile intervals.

    ``first_two=True`` keeps only each unit's first two labels (by ``order``). Bootstrap
    replicates compute alpha from the coincidence matrix directly (a replicate's matrix is a
    weighted sum of per-unit contributions), because calling the package 1000 times at 60K
    units would take minutes; tests check this alpha equals the package's.
    """
    if level not in _LEVELS:
        raise ValueError(f"level must be one of {_LEVELS}, got {level!r}")
    u, v = _as_labels(unit, value)
    if first_two:
        keep = label_positions(u, order=order) < 2
        u, v = u[keep], v[keep]
    ids, counts = value_counts_matrix(u, v)
    m = counts.sum(axis=1)
    multi = m >= 2
    counts_multi = counts[multi]
    n_multi = int(multi.sum())
    res = AgreementResult(
        labels="first_two" if first_two else "all",
        level=level,
        n_units_labelled=int(ids.size),
        n_units_multi=n_multi,
        n_pairable_labels=int(m[multi].sum()),
        percent_agreement=float("nan"),
        alpha=float("nan"),
        n_boot=int(n_boot),
        confidence=float(confidence),
        seed=seed,
    )
    if n_multi == 0:
        return res
    agree = (counts_multi.max(axis=1) == m[multi]).astype(float)
    res.percent_agreement = float(agree.mean())
    res.alpha = _package_alpha(counts_multi, level)  # krippendorff_alpha's, from the counts at hand
    if n_boot <= 0:
        return res

    # Units with the same value counts contribute identically to both statistics, so drawing
    # n_multi units with replacement is the same as drawing how many units of each distinct
    # count pattern ("type") a replicate holds: Multinomial(n_multi, type frequencies). This is
    # exactly the unit bootstrap, at a cost independent of the number of units (a binary pool
    # with <= 3 labels per unit has fewer than 10 types).
    V = counts_multi.shape[1]
    types, type_freq = np.unique(counts_multi, axis=0, return_counts=True)
    per_type = _unit_coincidences(types)
    agree_type = (types.max(axis=1) == types.sum(axis=1)).astype(float)
    rng = np.random.default_rng(seed)
    pa_boot = np.empty(n_boot)
    alpha_boot = np.empty(n_boot)
    batch = max(1, _BOOT_BATCH_ENTRIES // types.shape[0])
    for start in range(0, n_boot, batch):
        b = min(batch, n_boot - start)
        w = rng.multinomial(n_multi, type_freq / n_multi, size=b).astype(float)
        pa_boot[start : start + b] = w @ agree_type / n_multi
        alpha_boot[start : start + b] = _alpha_from_coincidences(
            (w @ per_type).reshape(b, V, V), level
        )
    tail = (1.0 - confidence) / 2.0 * 100.0
    q = [tail, 100.0 - tail]
    res.percent_agreement_ci = [float(x) for x in np.percentile(pa_boot, q)]
    if np.isfinite(alpha_boot).any():
        res.alpha_ci = [float(x) for x in np.nanpercentile(alpha_boot, q)]
    return res


def agreement_report(
    unit: ArrayLike,
    value: ArrayLike,
    *,
    level: Level = "nominal",
    order: ArrayLike | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, AgreementResult]:
    """Both variants, ``{"first_two": ..., "all": ...}``; report both.

    When a third label is requested only after the first two disagree, the extra labels mostly
    land on units that then agree 2-of-3, which inflates alpha over "all labels" relative to the
    unbiased first-two estimate (the random second label is the real reliability sample).
    """
    kw = dict(level=level, n_boot=n_boot, seed=seed, confidence=confidence)
    return {
        "first_two": agreement(unit, value, order=order, first_two=True, **kw),  # type: ignore
        "all": agreement(unit, value, order=order, first_two=False, **kw),  # type: ignore
    }


# --------------------------------------------------------------------------------------------
# resolution


@dataclass
class Resolution(_Serialisable):
    """Strict-majority resolution of every unit.

    ``resolved[i]`` is the value of unit ``i`` (unit ids are indices 0..n_units-1), or
    ``UNRESOLVED`` (-1, no value held by more than half the labels) or ``NO_LABELS`` (-2).
    ``percent_resolved`` = 100 * resolved / labelled units (NaN if none labelled).
    ``resolved`` and ``unresolved_units`` are NumPy arrays; ``to_dict`` turns them into lists.
    """

    resolved: NDArray[np.int64]
    n_labelled: int
    n_relevant: int
    n_not_relevant: int
    n_other: int
    n_unresolved: int
    percent_resolved: float
    unresolved_units: NDArray[np.int64]

    def to_dict(self, *, nan_as_none: bool = False) -> dict[str, Any]:
        d = {
            k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in self.__dict__.items()
        }
        return _nan_to_none(d) if nan_as_none else d


def resolve_majority(
    unit: ArrayLike,
    value: ArrayLike,
    *,
    n_units: int | None = None,
    relevant_value: int = 1,
    not_relevant_value: int = 0,
) -> Resolution:
    """Resolve each unit by strict majority over all its labels.

    A single label decides its unit; with several labels the value held by more than half of
    them wins, otherwise the unit is unresolved (1-1 and 2-2 splits, 1-1-1 triples). ``unit``
    must be indices in ``[0, n_units)`` so results align with the caller's pair table.
    ``n_other`` counts units resolved to any other code (e.g. a majority "ambiguous").
    """
    u, v = _as_labels(unit, value)
    N = int(n_units) if n_units is not None else (int(u.max()) + 1 if u.size else 0)
    if u.size and (u.min() < 0 or u.max() >= N):
        raise ValueError("unit must be indices in [0, n_units)")
    V = int(v.max()) + 1 if v.size else 1
    counts = np.bincount(u * V + v, minlength=N * V).reshape(N, V)
    m = counts.sum(axis=1)
    top = counts.max(axis=1) if V else np.zeros(N, np.int64)
    resolved = np.where(2 * top > m, counts.argmax(axis=1), UNRESOLVED).astype(np.int64)
    resolved[m == 0] = NO_LABELS
    n_labelled = int((m > 0).sum())
    n_unres = int((resolved == UNRESOLVED).sum())
    n_rel = int((resolved == relevant_value).sum())
    n_not = int((resolved == not_relevant_value).sum())
    return Resolution(
        resolved=resolved,
        n_labelled=n_labelled,
        n_relevant=n_rel,
        n_not_relevant=n_not,
        n_other=n_labelled - n_unres - n_rel - n_not,
        n_unresolved=n_unres,
        percent_resolved=(100.0 * (n_labelled - n_unres) / n_labelled) if n_labelled else math.nan,
        unresolved_units=np.flatnonzero(resolved == UNRESOLVED),
    )


# --------------------------------------------------------------------------------------------
# per rater


def _group_median(groups: NDArray[np.int64], x: NDArray[np.float64], n_groups: int) -> NDArray:
    ok = np.isfinite(x)
    g, xs = groups[ok], x[ok]
    xs = xs[np.lexsort((xs, g))]  # by group, then value; the groups' sizes need no sorting
    cnt = np.bincount(g, minlength=n_groups)
    del g
    start = np.r_[0, np.cumsum(cnt)[:-1]]
    med = np.full(n_groups, np.nan)
    has = cnt > 0
    lo = start[has] + (cnt[has] - 1) // 2
    hi = start[has] + cnt[has] // 2
    med[has] = (xs[lo] + xs[hi]) / 2.0
    return med


def rater_stats(
    unit: ArrayLike,
    rater: ArrayLike,
    value: ArrayLike,
    *,
    resolved: ArrayLike,
    gold: ArrayLike | None = None,
    seconds: ArrayLike | None = None,
) -> list[dict[str, Any]]:
    """Per-rater quality figures, one dict per distinct rater id (sorted).

    - ``n_labels``: labels given.
    - ``agreement_with_resolved`` over ``n_compared`` labels: share equal to the resolved value,
      counted only on units with >= 2 labels that resolved. Single-label units are excluded
      because there the rater's label *is* the resolution (it would score 1 by construction).
      The rater's own label is part of the majority, as in FIRE-style reporting.
    - ``gold_accuracy`` over ``n_gold``: share of the rater's labels on gold units equal to the
      gold value. ``gold`` is aligned to unit indices; NaN or negative means "not gold".
    - ``median_seconds``: median of ``seconds`` (aligned to labels; NaN ignored).
    Undefined figures are NaN. ``unit`` are indices into ``resolved`` (and ``gold``).
    """
    u, v = _as_labels(unit, value)
    r = np.asarray(rater)
    if r.shape != u.shape:
        raise ValueError("rater must be aligned to unit")
    res = np.asarray(resolved, dtype=np.int64)
    rater_ids, rc = np.unique(r, return_inverse=True)
    R = rater_ids.size
    n_labels = np.bincount(rc, minlength=R)

    m = np.bincount(u, minlength=res.size)
    comparable = (res[u] >= 0) & (m[u] >= 2)
    n_cmp = np.bincount(rc[comparable], minlength=R)
    n_agree = np.bincount(rc[comparable & (v == res[u])], minlength=R)

    if gold is not None:
        g = np.asarray(gold, dtype=float)[u]
        is_gold = np.isfinite(g) & (g >= 0)
        n_gold = np.bincount(rc[is_gold], minlength=R)
        n_gold_ok = np.bincount(rc[is_gold & (v == np.where(is_gold, g, -1))], minlength=R)
    else:
        n_gold = np.zeros(R, np.int64)
        n_gold_ok = np.zeros(R, np.int64)

    if seconds is not None:
        s = np.asarray(seconds, dtype=float)
        if s.shape != u.shape:
            raise ValueError("seconds must be aligned to labels")
        med = _group_median(rc, s, R)
    else:
        med = np.full(R, np.nan)

    with np.errstate(divide="ignore", invalid="ignore"):
        agr = np.where(n_cmp > 0, n_agree / np.maximum(n_cmp, 1), np.nan)
        acc = np.where(n_gold > 0, n_gold_ok / np.maximum(n_gold, 1), np.nan)
    return [
        {
            "rater": rater_ids[i].item(),
            "n_labels": int(n_labels[i]),
            "n_compared": int(n_cmp[i]),
            "agreement_with_resolved": float(agr[i]),
            "n_gold": int(n_gold[i]),
            "gold_accuracy": float(acc[i]),
            "median_seconds": float(med[i]),
        }
        for i in range(R)
    ]
