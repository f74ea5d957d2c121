"""How similar two runs' rankings are: mean top-k overlap and rank-biased overlap.

Pure Python/NumPy; no Django. Runs are mappings ``caption_id -> sequence of clip_ids`` in rank
order (see ``retrieval_metrics``); a clip repeated in one list counts once, at its first rank.

Caption sets: by default the mean is over captions present (with a non-empty list) in *both*
runs, which measures how the runs differ where both answered. ``captions="union"`` also counts
captions only one run answered (overlap 0 there); an explicit list of caption ids fixes the set
(missing lists count as empty).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

Run = Mapping[Hashable, Sequence[Hashable]]
CaptionSet = Literal["intersection", "union"] | Sequence[Hashable]


def _dedup(xs: Sequence[Hashable] | None) -> list[Hashable]:
    return list(dict.fromkeys(xs)) if xs else []


def _caption_list(a: Run, b: Run, captions: CaptionSet) -> list[Hashable]:
    if isinstance(captions, str):
        if captions == "intersection":
            return [q for q in a if a[q] and b.get(q)]
        if captions == "union":
            return [q for q in a if a[q]] + [q for q in b if b[q] and not a.get(q)]
        raise ValueError("captions must be 'intersection', 'union' or a list of ids")
    return list(captions)


def topk_overlap(a: Sequence[Hashable], b: Sequence[Hashable], *, k: int = 10) -> float:
    """|top-k(a) ∩ top-k(b)| / k. Dividing by k (not by the list lengths) means short lists
    cannot reach 1, which matches FIRE's "/ 10"."""
    return len(set(_dedup(a)[:k]) & set(_dedup(b)[:k])) / k


def _rbo_batch(
    pairs: Sequence[tuple[Sequence[Hashable], Sequence[Hashable]]], p: float
) -> NDArray[np.float64]:
    """Extrapolated RBO for many list pairs at once (one NumPy pass per chunk of captions)."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must be in (0, 1)")
    n = len(pairs)
    s = np.zeros(n, dtype=np.int64)
    l = np.zeros(n, dtype=np.int64)
    rows: list[int] = []
    enter: list[int] = []
    for i, (a, b) in enumerate(pairs):
        S, L = _dedup(a), _dedup(b)
        if len(S) > len(L):
            S, L = L, S
        s[i], l[i] = len(S), len(L)
        rank_s = {x: r + 1 for r, x in enumerate(S)}
        # A shared item enters the overlap at depth max(rank in S, rank in L); for depths
        # beyond s the shorter list is exhausted and this still holds.
        for j, x in enumerate(L):
            r = rank_s.get(x)
            if r is not None:
                rows.append(i)
                enter.append(max(r, j + 1))
    out = np.full(n, np.nan)
    W = int(l.max()) if n else 0
    if W == 0:
        return out
    rows_a = np.asarray(rows, dtype=np.int64)
    enter_a = np.asarray(enter, dtype=np.int64)
    d = np.arange(1, W + 1, dtype=float)
    pd = p**d
    step = max(1, 2_000_000 // W)  # bound the (captions x depth) work arrays
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        m = (rows_a >= lo) & (rows_a < hi)
        C = np.bincount((rows_a[m] - lo) * (W + 1) + enter_a[m], minlength=(hi - lo) * (W + 1))
        X = np.cumsum(C.reshape(hi - lo, W + 1)[:, 1:], axis=1).astype(float)  # X[:, d-1]
        sc, lc = s[lo:hi], l[lo:hi]
        ss = np.maximum(sc, 1)
        idx = np.arange(hi - lo)
        x_s = X[idx, ss - 1]
        x_l = X[idx, np.maximum(lc, 1) - 1]
        valid = d[None, :] <= lc[:, None]
        tail = valid & (d[None, :] > sc[:, None])
        total = np.where(valid, X / d * pd, 0.0).sum(axis=1) + np.where(
            tail, x_s[:, None] * (d - ss[:, None]) / (ss[:, None] * d) * pd, 0.0
        ).sum(axis=1)
        val = (1.0 - p) / p * total + ((x_l - x_s) / np.maximum(lc, 1) + x_s / ss) * p ** lc
        val[sc == 0] = 0.0
        val[lc == 0] = np.nan
        out[lo:hi] = val
    return out


def rbo(a: Sequence[Hashable], b: Sequence[Hashable], *, p: float = 0.9) -> float:
    """Extrapolated rank-biased overlap, Webber, Moffat & Zobel (2010), Eq. 32.

    RBO_ext = (1-p)/p * [sum_{d=1..l} X_d/d p^d + sum_{d=s+1..l} X_s (d-s)/(s d) p^d]
              + [(X_l - X_s)/l + X_s/s] p^l
    for lists of lengths s <= l, X_d the overlap of the two prefixes of depth d (the shorter
    list whole once d > s). 1 for identical lists, 0 for disjoint ones; NaN if both are empty
    (undefined), 0 if only one is. ``p`` in (0, 1) is the persistence: smaller weighs the top
    more. (The ``rbo`` package's default p=1.0 is average overlap, not RBO.)
    """
    return float(_rbo_batch([(a, b)], p)[0])


def overlap_per_caption(
    run_a: Run,
    run_b: Run,
    *,
    measure: Literal["topk", "rbo"] = "topk",
    k: int = 10,
    p: float = 0.9,
    depth: int | None = None,
    captions: CaptionSet = "intersection",
) -> tuple[list[Hashable], NDArray[np.float64]]:
    """``(caption_ids, values)`` of top-k overlap or RBO per caption.

    ``depth`` cuts both lists before RBO (None = whole lists); top-k uses ``k``.
    """
    caps = _caption_list(run_a, run_b, captions)
    lists = [(run_a.get(q) or [], run_b.get(q) or []) for q in caps]
    if measure == "topk":
        vals = np.array([topk_overlap(la, lb, k=k) for la, lb in lists], dtype=float)
    elif measure == "rbo":
        if depth is not None:
            lists = [(_dedup(la)[:depth], _dedup(lb)[:depth]) for la, lb in lists]
        vals = _rbo_batch(lists, p)
    else:
        raise ValueError("measure must be 'topk' or 'rbo'")
    return caps, vals


def mean_overlap(run_a: Run, run_b: Run, **kwargs) -> float:
    """Mean of :func:`overlap_per_caption` (NaN entries, i.e. two empty lists, skipped; NaN if
    no caption). Keywords as for :func:`overlap_per_caption`."""
    _, vals = overlap_per_caption(run_a, run_b, **kwargs)
    vals = vals[np.isfinite(vals)]
    return float(vals.mean()) if vals.size else math.nan


def overlap_matrix(
    runs: Mapping[str, Run],
    *,
    measure: Literal["topk", "rbo"] = "topk",
    k: int = 10,
    p: float = 0.9,
    depth: int | None = None,
    captions: CaptionSet = "intersection",
) -> tuple[list[str], NDArray[np.float64]]:
    """``(names, M)`` with ``M[i, j]`` the mean overlap of runs i and j (symmetric; the diagonal
    is computed too, 1.0 for top-k only when every list has >= k clips)."""
    names = list(runs)
    M = np.empty((len(names), len(names)))
    kw = dict(measure=measure, k=k, p=p, depth=depth, captions=captions)
    for i, a in enumerate(names):
        for j in range(i, len(names)):
            M[i, j] = M[j, i] = mean_overlap(runs[a], runs[names[j]], **kw)
    return names, M
