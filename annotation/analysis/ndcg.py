"""Graded nDCG of a similarity matrix against a (proxy) relevance matrix, and proxy statistics.

Definition (methodology §7, Wray et al. 2021). For a query q ranking the items of the other
modality by similarity (descending), with graded relevance rel(q, z) in [0, 1]:

    R_q     = items with rel(q, z) > 0
    DCG(q)  = sum_{k=1..|R_q|} gain(rel(q, z_k)) / log2(k + 1)     (z_k = item at rank k)
    IDCG(q) = the same sum over the items sorted by relevance (the ideal ordering)
    nDCG(q) = DCG(q) / IDCG(q)

Only the first |R_q| ranks count. ``gain="linear"`` uses rel itself (the reference evaluation
code of EPIC-KITCHENS-100 / Wray et al.); ``gain="exponential"`` uses 2^rel - 1.
Video-to-text: queries are the rows (clips), items the columns (captions); text-to-video: the
transpose. The overall score is the mean of the two directions' means:
nDCG(X, Y) = 1/(2|X|) sum_x nDCG(x) + 1/(2|Y|) sum_y nDCG(y).

Ties in similarity: items are ordered by a *stable* argsort of -similarity, so equal scores keep
their column order (lower index ranked first). The reference code reverses an ascending,
unstable argsort instead; results differ only where similarities tie across items of different
relevance.

Queries with no relevant item (IDCG = 0) have no defined nDCG (the reference code yields NaN):
``empty="skip"`` (default) leaves them out of the mean and counts them; ``empty="zero"`` scores
them 0 and averages them in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

Gain = Literal["linear", "exponential"]
Empty = Literal["skip", "zero"]


def _gain(rel: np.ndarray, gain: Gain) -> np.ndarray:
    if gain == "linear":
        return rel
    if gain == "exponential":
        return np.exp2(rel) - 1.0
    raise ValueError(f"gain must be 'linear' or 'exponential', not {gain!r}")


def descending_order(similarity: np.ndarray) -> np.ndarray:
    """Row-wise ``argsort(-similarity, kind="stable")``: best first, ties in column order.

    A stable sort of floats is several times slower than NumPy's default one, and full-ranking
    runs (model scores) rarely tie: rows are sorted the fast way first, and only rows where equal
    values meet are sorted again stably. Rows holding more than one -inf (cells a run does not
    rank) are certain to tie and go straight to the stable sort.
    """
    s = np.asarray(similarity)
    neg = -s
    order = np.empty(s.shape, dtype=np.intp)
    certain = np.isneginf(s).sum(axis=1) > 1
    if certain.any():
        order[certain] = np.argsort(neg[certain], axis=1, kind="stable")
    rest = np.flatnonzero(~certain)
    if rest.size:
        part = neg[rest]
        fast = np.argsort(part, axis=1)
        ranked = np.take_along_axis(part, fast, axis=1)
        tied = (ranked[:, 1:] == ranked[:, :-1]).any(axis=1)
        if tied.any():
            fast[tied] = np.argsort(part[tied], axis=1, kind="stable")
        order[rest] = fast
    return order


def ndcg_per_query_many(
    similarity: np.ndarray,
    relevances: Sequence[np.ndarray],
    *,
    gain: Gain = "linear",
    block_rows: int = 1024,
) -> list[np.ndarray]:
    """``ndcg_per_query`` of one similarity matrix against several relevance matrices (proxies),
    sorting each block of similarity rows once for all of them."""
    sim = np.asarray(similarity)
    rels = [np.asarray(r) for r in relevances]
    for rel in rels:
        if sim.shape != rel.shape or sim.ndim != 2:
            raise ValueError(f"similarity {sim.shape} and relevance {rel.shape} must be equal 2-D shapes")
        if np.any(rel < 0):
            raise ValueError("relevance must be >= 0")
    if gain not in ("linear", "exponential"):
        raise ValueError(f"gain must be 'linear' or 'exponential', not {gain!r}")
    n, m = sim.shape
    outs = [np.full(n, np.nan) for _ in rels]
    discount = 1.0 / np.log2(np.arange(m, dtype=np.float64) + 2.0)  # rank k=1..m -> 1/log2(k+1)
    ranks = np.arange(m)
    for start in range(0, n, block_rows):
        stop = min(n, start + block_rows)
        order = descending_order(sim[start:stop])
        for rel, out in zip(rels, outs):
            r = rel[start:stop].astype(np.float64, copy=False)
            k = (r > 0).sum(axis=1)  # |R_q|
            in_top = ranks[None, :] < k[:, None]  # only the first |R_q| ranks count
            dcg = (_gain(np.take_along_axis(r, order, axis=1), gain) * discount * in_top).sum(axis=1)
            ideal = -np.sort(-r, axis=1)
            idcg = (_gain(ideal, gain) * discount * in_top).sum(axis=1)
            ok = idcg > 0
            out[start:stop][ok] = dcg[ok] / idcg[ok]
    return outs


def ndcg_per_query(
    similarity: np.ndarray,
    relevance: np.ndarray,
    *,
    gain: Gain = "linear",
    block_rows: int = 1024,
) -> np.ndarray:
    """nDCG of each row of ``similarity`` (queries) against the same row of ``relevance``.

    Returns float64 (n_rows,), NaN for rows without any relevance > 0. Rows are processed in
    blocks to bound memory (a block needs a few dense copies of block_rows x n_cols).
    """
    return ndcg_per_query_many(similarity, [relevance], gain=gain, block_rows=block_rows)[0]


def _mean(values: np.ndarray, empty: Empty) -> tuple[float, int]:
    missing = int(np.isnan(values).sum())
    if empty == "zero":
        return (float(np.nan_to_num(values, nan=0.0).mean()) if values.size else float("nan")), missing
    if empty != "skip":
        raise ValueError(f"empty must be 'skip' or 'zero', not {empty!r}")
    kept = values[~np.isnan(values)]
    return (float(kept.mean()) if kept.size else float("nan")), missing


@dataclass(frozen=True)
class NDCGResult:
    """Graded nDCG in both directions. ``mean`` = (video_to_text + text_to_video) / 2."""

    video_to_text: float
    text_to_video: float
    mean: float
    gain: str
    empty: str
    v2t_per_query: np.ndarray = field(repr=False)
    t2v_per_query: np.ndarray = field(repr=False)
    v2t_empty_queries: int = 0
    t2v_empty_queries: int = 0


def ndcg(
    similarity: np.ndarray,
    relevance: np.ndarray,
    *,
    gain: Gain = "linear",
    empty: Empty = "skip",
) -> NDCGResult:
    """Graded nDCG of a clips x captions similarity matrix against a relevance matrix.

    video_to_text: each clip (row) ranks the captions; text_to_video: each caption (column) ranks
    the clips; mean: their average. See the module docstring for ties and empty queries.
    """
    return ndcg_many(similarity, [relevance], gain=gain, empty=empty)[0]


def ndcg_many(
    similarity: np.ndarray,
    relevances: Sequence[np.ndarray],
    *,
    gain: Gain = "linear",
    empty: Empty = "skip",
) -> list[NDCGResult]:
    """``ndcg`` against several relevance matrices (e.g. the four proxies) at the cost of sorting
    the similarity matrix once per direction."""
    if empty not in ("skip", "zero"):
        raise ValueError(f"empty must be 'skip' or 'zero', not {empty!r}")
    sim = np.asarray(similarity)
    rels = [np.asarray(r) for r in relevances]
    v2t = ndcg_per_query_many(sim, rels, gain=gain)
    # Transposed views, not copies: each block is copied (contiguous) as it is worked on anyway.
    t2v = ndcg_per_query_many(sim.T, [r.T for r in rels], gain=gain)
    results = []
    for a_per, b_per in zip(v2t, t2v):
        a, na = _mean(a_per, empty)
        b, nb = _mean(b_per, empty)
        results.append(NDCGResult(a, b, (a + b) / 2.0, gain, empty, a_per, b_per, na, nb))
    return results


@dataclass(frozen=True)
class RandomRankingNDCG:
    """The nDCG of random rankings against one relevance matrix (the baseline of Wray et al.'s
    tables): ``draws`` seeded uniformly random similarity matrices, each scored as ``ndcg`` scores
    a run, and the exact expectation over all rankings for comparison."""

    draws: int
    seed: int
    gain: str
    empty: str
    mean: float  # over draws, of the two directions' average
    std: float  # sample standard deviation over draws (ddof=1; 0 for one draw)
    minimum: float
    maximum: float
    video_to_text: float  # means over draws
    text_to_video: float
    expected: float  # exact expectation over uniformly random rankings (see expected_random_ndcg_per_query)


def expected_random_ndcg_per_query(relevance: np.ndarray, *, gain: Gain = "linear") -> np.ndarray:
    """Exact E[nDCG(q)] when each row ranks its items in a uniformly random order.

    Every rank k holds each item with probability 1/m, so E[DCG(q)] = mean_z gain(rel(q, z)) *
    sum_{k=1..|R_q|} 1/log2(k + 1), and IDCG(q) does not depend on the order. NaN where |R_q| = 0,
    as in ``ndcg_per_query``."""
    r = np.asarray(relevance, dtype=np.float64)
    m = r.shape[1]
    discount = 1.0 / np.log2(np.arange(m, dtype=np.float64) + 2.0)
    k = (r > 0).sum(axis=1)
    prefix = np.concatenate([[0.0], np.cumsum(discount)])  # prefix[j] = sum of the first j discounts
    g = _gain(r, gain)
    ideal = _gain(-np.sort(-r, axis=1), gain)
    idcg = (ideal * discount * (np.arange(m)[None, :] < k[:, None])).sum(axis=1)
    out = np.full(r.shape[0], np.nan)
    ok = idcg > 0
    out[ok] = g[ok].mean(axis=1) * prefix[k[ok]] / idcg[ok]
    return out


def random_ranking_ndcg(relevances: Sequence[np.ndarray], *, draws: int = 10, seed: int = 0,
                        gain: Gain = "linear", empty: Empty = "skip") -> list[RandomRankingNDCG]:
    """nDCG of ``draws`` random rankings against each relevance matrix (clips x captions, all of one
    shape). Each draw is one matrix of uniform [0, 1) scores from ``numpy.random.default_rng(seed)``
    (ties have probability ~0), shared by all the relevance matrices, so their baselines compare
    on the same rankings."""
    if draws < 1:
        raise ValueError("draws must be at least 1")
    rels = [np.asarray(r) for r in relevances]
    rng = np.random.default_rng(seed)
    per_draw = []
    for _ in range(draws):
        per_draw.append(ndcg_many(rng.random(rels[0].shape), rels, gain=gain, empty=empty))
    out = []
    for k, rel in enumerate(rels):
        means = np.array([draw[k].mean for draw in per_draw])
        v2t = _mean(expected_random_ndcg_per_query(rel, gain=gain), empty)[0]
        t2v = _mean(expected_random_ndcg_per_query(rel.T, gain=gain), empty)[0]
        out.append(RandomRankingNDCG(
            draws=draws, seed=seed, gain=gain, empty=empty, mean=float(means.mean()),
            std=float(means.std(ddof=1)) if draws > 1 else 0.0, minimum=float(means.min()),
            maximum=float(means.max()),
            video_to_text=float(np.mean([draw[k].video_to_text for draw in per_draw])),
            text_to_video=float(np.mean([draw[k].text_to_video for draw in per_draw])),
            expected=(v2t + t2v) / 2.0))
    return out


def relevant_count_curve(
    relevance: np.ndarray, thresholds: Sequence[float] | np.ndarray
) -> np.ndarray:
    """Mean over clips (rows) of the number of captions with relevance >= t, for each threshold t.

    Use it to draw, per proxy, how many captions count as relevant to a clip as the threshold
    rises (at t <= 0 every caption counts; at t = 1 typically only the own caption).
    """
    rel = np.asarray(relevance)
    t = np.asarray(thresholds, dtype=np.float64)
    if rel.ndim != 2:
        raise ValueError("relevance must be 2-D")
    if rel.shape[0] == 0:
        return np.full(t.shape, np.nan)
    # Sorting each row once turns every threshold into a binary search: O(n m log m + n T log m).
    srt = np.sort(rel.astype(np.float64, copy=False), axis=1)
    m = rel.shape[1]
    counts = np.stack([m - np.searchsorted(row, t, side="left") for row in srt])
    return counts.mean(axis=0)


@dataclass(frozen=True)
class PearsonResult:
    """Row-wise Pearson correlation between two proxies, averaged over rows (clips)."""

    mean: float
    rows_used: int
    rows_skipped: int  # rows where either proxy has zero variance (r undefined)
    per_row: np.ndarray = field(repr=False)  # NaN where skipped


def rowwise_pearson(a: np.ndarray, b: np.ndarray) -> PearsonResult:
    """Pearson r between row i of ``a`` and row i of ``b`` for every row, then the mean.

    r_i = sum((a_ij - mean a_i)(b_ij - mean b_i)) / sqrt(sum (a_ij - mean a_i)^2 sum (b_ij - mean b_i)^2).
    Rows where either side is constant are skipped (not averaged) and counted in rows_skipped.
    """
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 2:
        raise ValueError("a and b must be 2-D arrays of one shape")
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    sxx = (xc * xc).sum(axis=1)
    syy = (yc * yc).sum(axis=1)
    sxy = (xc * yc).sum(axis=1)
    # Treat variance below float noise as zero: a row of identical float32 values can leave ~1e-30.
    tiny = 1e-24 * max(1, x.shape[1])
    ok = (sxx > tiny) & (syy > tiny)
    r = np.full(x.shape[0], np.nan)
    r[ok] = sxy[ok] / np.sqrt(sxx[ok] * syy[ok])
    used = int(ok.sum())
    return PearsonResult(float(r[ok].mean()) if used else float("nan"), used, int((~ok).sum()), r)
