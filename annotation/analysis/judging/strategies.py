"""Judging orders over one query's pool pairs (issue 15, methodology section 3).

A *query* here is one caption of a pool. Its pool pairs are numbered ``0..n-1`` by the caller;
``run_lists[r]`` holds the pair numbers that run ``r`` ranked, best first (a pair proposed by
several runs appears in several lists, once per run). ``judged`` maps a pair number to its
resolved label (True = relevant) for pairs already resolved.

Strategies (``STRATEGIES``):

- ``pool_order``: today's order, a seeded random permutation of the pairs (the queue finishes
  started pairs first; that is the queue's business, not this module's).
- ``shallow_first``: depth by depth, a pair's depth being its best (minimum) rank over the runs;
  ties broken by a seeded key. Interleaved over queries this is the round robin of depth-k pools.
- ``move_to_front``: Cormack, Palmer & Clarke (SIGIR 1998). The runs stand in a line (a seeded
  order); the next pair is the first unjudged pair of the first run in the line that has one.
  A non-relevant label sends every run containing that pair to the back of the line (keeping
  their relative order); a relevant one moves nothing, so a run keeps being judged while it yields
  relevant pairs. Labels are replayed in ``judged``'s iteration order, which must be the order in
  which they arrived (a ``dict`` keeps insertion order).
- ``bandit``: Losada, Parapar & Barreiro (IP&M 2017), runs as arms of a Bernoulli bandit, reward =
  the relevance of the run's next pair. Each run has a Beta(1 + a, 1 + b) posterior where ``a``
  (``b``) counts the judged relevant (non-relevant) pairs the run contains -- a judged pair
  updates EVERY run containing it, whichever run it was picked for.
  ``bandit_variant="mm_ns"`` (the default, NIST's choice for TREC 2017 Common Core): maximum
  posterior mean, non-stationary: a run's outcomes are discounted by ``bandit_discount`` per more
  recent outcome of the same run, "recent" meaning deeper in the run (a run is consumed top down,
  so its deepest judged pairs are its latest outcomes; using rank rather than arrival time keeps
  the choice independent of which rater happened to finish first). ``"thompson"``: one draw per
  run from its (undiscounted) posterior, seeded by (seed, query_key, number of judged pairs); the
  run with the largest draw wins. Ties between runs go to the smaller seeded run key.
- ``sampled``: a probability sample for unbiased estimates (Li & Kanoulas 2017 style active
  sampling, but with inclusion probabilities known in advance). Pairs whose best rank is
  ``<= top_stratum_depth`` have inclusion probability 1 and come first (shallow first). Every
  other pair ``i`` has a weight ``w_i`` (``sample_weights="ap_prior"``: the mean over runs of the
  AP-prior of its rank in that run, Aslam, Pavlu & Yilmaz 2006: ``(1 + H_D - H_k) / (2 D)`` at
  rank ``k`` of a depth-``D`` list, 0 where the run does not rank it; ``"uniform"``: 1) and a
  seeded uniform ``u_i``; pairs are judged in
  increasing ``u_i / w_i`` (sequential Poisson sampling, Ohlsson 1998). Any prefix of that order
  is then a Poisson sample with ``pi_i = min(1, c w_i)``, ``c`` being the key of the first pair
  not taken (see :func:`prefix_inclusion_probabilities`), so judging can stop anywhere and the
  estimates stay valid. The full sample stops at the ``c`` that makes the expected sample size
  ``sample_rate * n`` (top stratum included). ``sample_weights="c_at_k"`` weighs pairs by how
  many runs' C@K they can still decide (see :func:`sample_weights`). Known relevant pairs (the
  caption's original positive, ``known=``) are never sampled: they are relevant by convention.

Warm-up: with ``warmup_depth > 0`` every pair whose best rank is ``<= warmup_depth`` comes first,
shallow first (ties by the seeded key), whatever the strategy (``sampled`` uses its top stratum
instead). The adaptive strategies learn from the warm-up labels.

The returned order is the order to judge the not-yet-judged pairs *if no further label arrived*:
its first element is the next pair; for adaptive strategies the rest is the projection with the
current state frozen (the queue recomputes the query's order when a label arrives).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from annotation.analysis.params import Param

__all__ = [
    "SAMPLE_RATE",
    "STRATEGIES",
    "BANDIT_VARIANTS",
    "StrategyParams",
    "query_order",
    "inclusion_probabilities",
    "prefix_inclusion_probabilities",
    "interleave",
    "pair_depths",
    "ap_prior_weights",
    "seeded_uniform",
    "run_line",
    "sampled_design",
    "sample_weights",
    "SAMPLE_WEIGHTS",
    "DESIGN_STRATEGIES",
    "REPLAYABLE_STRATEGIES",
    "active_weights",
    "active_scale",
    "active_pi",
    "active_pool_scale",
    "active_design",
]

STRATEGIES = ("pool_order", "shallow_first", "move_to_front", "bandit", "sampled", "active")
# Strategies whose order is a probability sample: pairs outside it are never judged, and each
# judged pair carries its inclusion probability into the estimates.
DESIGN_STRATEGIES = ("sampled", "active")
# What the judging simulation can replay: "active" needs a machine judge's verdicts.
REPLAYABLE_STRATEGIES = tuple(s for s in STRATEGIES if s != "active")
BANDIT_VARIANTS = ("mm_ns", "thompson")
SAMPLE_WEIGHTS = ("ap_prior", "uniform", "c_at_k")


#: The expected share of a pool the "sampled" and "active" designs judge: declared once, here, and
#: read by the Pool column's default, the judging settings (services/judging/plan.py), the
#: simulation's parameters and the API. Above 0 (a design that judges nothing has no inclusion
#: probabilities to weigh by) and at most 1 (everything).
# At least 0.001: the estimators weight a judged pair by 1/pi (and its variance by 1/pi^2), which a
# share near 0 takes past any float (a rate of 1e-300 made intervals of inf and NaN).
SAMPLE_RATE = Param(float, 0.3, "'sampled' and 'active': expected share of the pool judged", 0.001, 1)


@dataclass(frozen=True)
class StrategyParams:
    """Options of a judging strategy (all strategies accept all fields; each uses its own)."""

    warmup_depth: int = 0          # every pair at rank <= warmup_depth in any run is judged first, shallow first
    seed: int = 0
    bandit_variant: str = "mm_ns"  # "mm_ns" | "thompson"
    sample_rate: float = SAMPLE_RATE.default  # "sampled", "active": expected share of the pool to judge
    top_stratum_depth: int = 0     # "sampled": ranks <= this get inclusion probability 1
    bandit_discount: float = 0.9   # "mm_ns": weight of an outcome per more recent outcome of the run
    sample_weights: str = "ap_prior"  # "sampled": "ap_prior" (favours top ranks: AP, nDCG) or "uniform" (C@K)
    # "active": share of the uniform design in its mixture with Neyman's allocation; every pair
    # outside the top stratum keeps pi >= this share x the design's scale c (active_scale)
    active_uniform_share: float = 0.05


_DEPTH_SENTINEL = 1 << 30  # depth of a pair no run ranks: after every real depth

# Tags keep the seeded streams of the different random choices apart.
_TAG_PAIR, _TAG_RUN, _TAG_SAMPLE, _TAG_THOMPSON = 1, 2, 3, 4
_MASK64 = (1 << 64) - 1  # 64-bit two's complement of a Python int: v & _MASK64


# SplitMix64's constants as NumPy scalars made once: making them on every call cost about as much
# as the arithmetic on a query's few dozen pairs.
_GOLDEN, _MIX1, _MIX2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_SHIFT11, _SHIFT27, _SHIFT30, _SHIFT31 = np.uint64(11), np.uint64(27), np.uint64(30), np.uint64(31)


def _splitmix(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser, element-wise on uint64 (wraps modulo 2^64 by design)."""
    with np.errstate(over="ignore"):
        x = x + _GOLDEN
        x = (x ^ (x >> _SHIFT30)) * _MIX1
        x = (x ^ (x >> _SHIFT27)) * _MIX2
        return x ^ (x >> _SHIFT31)


def _splitmix_int(x: int) -> int:
    """_splitmix of one number, in Python ints (0 <= x < 2^64)."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def seeded_uniform(seed, query_key, index, tag: int, extra=0) -> np.ndarray:
    """Uniform [0, 1) numbers that depend only on (seed, query_key, index, tag, extra), element-wise
    over broadcast arrays. A counter-based hash rather than a Generator, so that the one-query
    order and the simulation engine (vectorised over queries and replays) draw the same numbers:
    h = splitmix(tag), then h = splitmix(h ^ v) for v = seed, query_key, index, extra (as 64-bit
    two's complement)."""
    if np.ndim(seed) == 0 and np.ndim(query_key) == 0 and np.ndim(extra) == 0:
        # One query (the label hook's case): the (tag, seed, query_key) prefix is the same for
        # every element, so it is hashed once, in Python ints, and not as arrays.
        prefix = _splitmix_int(int(tag) & _MASK64)
        for v in (seed, query_key):
            prefix = _splitmix_int(prefix ^ (int(np.int64(v)) & _MASK64))
        h = _splitmix(np.asarray(index, dtype=np.int64).astype(np.uint64) ^ np.uint64(prefix))
        h = _splitmix(h ^ np.uint64(int(np.int64(extra)) & _MASK64))
        return (h >> _SHIFT11).astype(np.float64) * (1.0 / 9007199254740992.0)
    parts = np.broadcast_arrays(*(np.asarray(v, dtype=np.int64) for v in (seed, query_key, index, extra)))
    h = _splitmix(np.full(parts[0].shape, np.uint64(tag)))
    for part in parts:
        h = _splitmix(h ^ part.astype(np.uint64))
    return (h >> _SHIFT11).astype(np.float64) * (1.0 / 9007199254740992.0)


def _n_pairs(run_lists: Sequence[np.ndarray], n_pairs: int | None) -> int:
    biggest = max((int(np.max(r)) for r in run_lists if len(r)), default=-1)
    if n_pairs is None:
        return biggest + 1
    if biggest >= n_pairs:
        raise ValueError(f"run_lists hold pair index {biggest} but n_pairs is {n_pairs}")
    return int(n_pairs)


def _lists(run_lists) -> list[np.ndarray]:
    return [np.asarray(r, dtype=np.int64).reshape(-1) for r in run_lists]


def pair_depths(run_lists: Sequence[np.ndarray], n_pairs: int | None = None) -> np.ndarray:
    """Best (minimum, 1-based) rank of each pair over the runs; pairs no run ranks get a large
    sentinel (they are judged last by depth-based orders)."""
    lists = _lists(run_lists)
    n = _n_pairs(lists, n_pairs)
    depth = np.full(n, _DEPTH_SENTINEL, dtype=np.int64)
    for lst in lists:
        if len(lst):
            np.minimum.at(depth, lst, np.arange(1, len(lst) + 1))
    return depth


def ap_prior_weights(run_lists: Sequence[np.ndarray], n_pairs: int | None = None) -> np.ndarray:
    """Mean over runs of the AP-prior of each pair's rank (Aslam, Pavlu & Yilmaz 2006):
    ``(1 + H_D - H_k) / (2 D)`` at rank k of a run listing D pairs, 0 where the run does not rank
    the pair. It is the share of a run's AP that rank k carries on average, so sampling in
    proportion to it spends judgments where the metrics are sensitive. A pair no run ranks gets
    the smallest positive weight of the query (it must keep a chance to be drawn)."""
    lists = _lists(run_lists)
    n = _n_pairs(lists, n_pairs)
    w = np.zeros(n)
    for lst in lists:
        d = len(lst)
        if not d:
            continue
        harmonic = np.cumsum(1.0 / np.arange(1, d + 1))
        np.add.at(w, lst, (1.0 + harmonic[-1] - harmonic) / (2.0 * d))
    w /= max(len(lists), 1)
    positive = w[w > 0]
    w[w <= 0] = positive.min() if positive.size else 1.0
    return w


def sample_weights(run_lists, n_pairs: int | None, kind: str, known: np.ndarray | None = None) -> np.ndarray:
    """Relative inclusion weights of the "sampled" design.

    - "ap_prior": :func:`ap_prior_weights` (top ranks weigh more: AP, nDCG);
    - "uniform": the same weight for every pair (C@K gives every rank of the top K the same say);
    - "c_at_k": 1 + the number of runs that rank the pair and rank no known relevant pair. A run
      whose list holds the caption's original positive has C@K = 1 settled (for K reaching it),
      so its pairs matter less; a run without it can have its C@K decided by any of its pairs.
      Without ``known`` this is 1 + the number of runs ranking the pair.
    """
    lists = _lists(run_lists)
    n = _n_pairs(lists, n_pairs)
    if kind == "uniform":
        return np.ones(n)
    if kind == "c_at_k":
        known = np.zeros(n, dtype=bool) if known is None else np.asarray(known, dtype=bool)
        w = np.ones(n)
        for lst in lists:
            if len(lst) and not known[lst].any():
                np.add.at(w, np.unique(lst), 1.0)
        return w
    return ap_prior_weights(lists, n)


def _first_by_depth(depth: np.ndarray, tie: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    return pairs[np.lexsort((tie[pairs], depth[pairs]))]


def _validate(strategy: str, params: StrategyParams) -> None:
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
    if params.bandit_variant not in BANDIT_VARIANTS:
        raise ValueError(f"unknown bandit_variant {params.bandit_variant!r}; expected mm_ns or thompson")
    SAMPLE_RATE.check(params.sample_rate, name="sample_rate")
    if not 0.0 < params.bandit_discount <= 1.0:
        raise ValueError("bandit_discount must be in (0, 1]")
    if params.sample_weights not in SAMPLE_WEIGHTS:
        raise ValueError(f"unknown sample_weights {params.sample_weights!r}; expected ap_prior or uniform")
    if not 0.0 < params.active_uniform_share <= 1.0:
        raise ValueError("active_uniform_share must be in (0, 1]")
    if params.warmup_depth < 0 or params.top_stratum_depth < 0:
        raise ValueError("warmup_depth and top_stratum_depth must be >= 0")


def run_line(n_runs: int, *, seed: int, query_key: int) -> np.ndarray:
    """The seeded order of runs: move_to_front's initial line, and the tie-break between runs
    (earlier in the line wins) for the bandit."""
    return np.argsort(seeded_uniform(seed, query_key, np.arange(n_runs), _TAG_RUN), kind="stable")


def _move_to_front_line(lists, judged: Mapping[int, bool], line: np.ndarray) -> list[int]:
    line = [int(r) for r in line]
    member = [set(lst.tolist()) for lst in lists]
    for pair, relevant in judged.items():
        if relevant:
            continue
        moved = [r for r in line if pair in member[r]]
        if moved:
            line = [r for r in line if pair not in member[r]] + moved
    return line


def bandit_counts(lists, judged_mask: np.ndarray, relevant_mask: np.ndarray,
                  discount: float) -> tuple[np.ndarray, np.ndarray]:
    """Per run: (discounted relevant count a, discounted non-relevant count b) over the run's
    judged pairs; the judged pair at a given rank weighs ``discount ** m``, m = the number of
    judged pairs of the run at deeper ranks."""
    a = np.zeros(len(lists))
    b = np.zeros(len(lists))
    for r, lst in enumerate(lists):
        if not len(lst):
            continue
        j = judged_mask[lst]
        deeper = np.cumsum(j[::-1])[::-1] - j  # judged pairs below each rank
        w = np.where(j, discount ** deeper, 0.0)
        rel = relevant_mask[lst]
        a[r] = float((w * rel).sum())
        b[r] = float((w * ~rel).sum())
    return a, b


def bandit_scores(lists, judged: Mapping[int, bool], n: int, *, params: StrategyParams,
                  query_key: int) -> np.ndarray:
    """Each run's bandit score (posterior mean for mm_ns, a posterior draw for thompson)."""
    judged_mask = np.zeros(n, dtype=bool)
    relevant_mask = np.zeros(n, dtype=bool)
    for pair, relevant in judged.items():
        judged_mask[pair] = True
        relevant_mask[pair] = bool(relevant)
    if params.bandit_variant == "mm_ns":
        a, b = bandit_counts(lists, judged_mask, relevant_mask, params.bandit_discount)
        return (1.0 + a) / (2.0 + a + b)
    from scipy.special import betaincinv

    a, b = bandit_counts(lists, judged_mask, relevant_mask, 1.0)
    u = seeded_uniform(params.seed, query_key, np.arange(len(lists)), _TAG_THOMPSON, extra=len(judged))
    return betaincinv(1.0 + a, 1.0 + b, u)


def sampling_threshold(weights: np.ndarray, top: np.ndarray, sample_rate: float,
                       known: np.ndarray | None = None) -> float:
    """``c`` such that the expected sample size ``|top| + sum_{not top} min(1, c w_i)`` is
    ``sample_rate * n`` (0 when the top stratum alone reaches it). Known relevant pairs are
    neither sampled nor counted in ``n``.

    Solved exactly, not by bisection: ``f(c) = sum min(1, c w_i)`` is piecewise linear. With the
    ``k`` largest weights capped at 1 it is ``k + c R_k`` (``R_k`` the sum of the other weights),
    so ``c_k = (need - k) / R_k``; the answer is ``c_k`` for the smallest ``k`` at which the
    largest uncapped weight stays uncapped (``c_k w_(k) <= 1``). A query has a few dozen pairs,
    and the label hook draws its design on every judged pair: a hundred bisection steps of NumPy
    calls cost more than the rest of the hook."""
    known = np.zeros(len(weights), dtype=bool) if known is None else np.asarray(known, dtype=bool)
    n = int((~known).sum())
    need = sample_rate * n - int((top & ~known).sum())
    w = weights[~top & ~known]
    if need <= 0 or not w.size:
        return 0.0
    if need >= w.size:
        return float(1.0 / w.min())
    descending = np.sort(w)[::-1]
    rest = np.cumsum(descending[::-1])[::-1]  # rest[k]: the sum of all but the k largest weights
    candidates = (need - np.arange(w.size)) / rest
    # Some k < need always qualifies (at k = ceil(need) - 1, c_k w_(k) = (need - k) w_(k) / R_k <= 1).
    k = int(np.argmax(candidates * descending <= 1.0))
    return float(candidates[k])


def _known_mask(known, n: int) -> np.ndarray:
    """Pair indices (or a boolean mask of the n pairs) -> boolean mask."""
    mask = np.zeros(n, dtype=bool)
    if isinstance(known, np.ndarray) and known.dtype == bool:
        if known.shape != (n,):
            raise ValueError(f"known mask has shape {known.shape} for {n} pairs")
        return known.copy()
    if known is not None:
        idx = np.asarray(list(known), dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            raise ValueError(f"known pair index outside 0..{n - 1}")
        mask[idx] = True
    return mask


def sampled_design(run_lists, *, params: StrategyParams, query_key: int = 0,
                   n_pairs: int | None = None, known=None) -> dict:
    """The "sampled" design of one query: weights, top stratum, keys, threshold c, the sample in
    judging order, and each pair's inclusion probability in the complete sample. ``known``
    (pair indices, e.g. the caption's original positive) are relevant by convention: never
    sampled, inclusion probability 1."""
    lists = _lists(run_lists)
    n = _n_pairs(lists, n_pairs)
    known_mask = _known_mask(known, n)
    depth = pair_depths(lists, n)
    weights = sample_weights(lists, n, params.sample_weights, known_mask)
    top = (depth <= params.top_stratum_depth) & ~known_mask
    u = seeded_uniform(params.seed, query_key, np.arange(n), _TAG_SAMPLE)
    key = u / weights
    c = sampling_threshold(weights, top, params.sample_rate, known_mask)
    tie = seeded_uniform(params.seed, query_key, np.arange(n), _TAG_PAIR)
    top_order = _first_by_depth(depth, tie, np.flatnonzero(top))
    rest = np.flatnonzero(~top & ~known_mask & (key < c))
    order = np.concatenate([top_order, rest[np.argsort(key[rest], kind="stable")]]).astype(np.int64)
    pi = np.where(top | known_mask, 1.0, np.minimum(1.0, c * weights))
    return {"weights": weights, "top": top | known_mask, "n_top": len(top_order), "key": key, "c": c,
            "order": order, "pi": pi}


def query_order(strategy: str, run_lists: Sequence[np.ndarray], judged: Mapping[int, bool], *,
                params: StrategyParams, query_key: int = 0, n_pairs: int | None = None,
                known=None, inclusion=None, design: dict | None = None) -> np.ndarray:
    """One query. run_lists[r] = the query's pool-pair indices (0..n-1) that run r ranked, best
    first (a pair may be in several runs). judged = pair index -> relevant? for pairs already
    resolved (in the order the labels arrived: move_to_front replays them). Returns the
    not-yet-judged pair indices in the order to judge them next (for "sampled": only the pairs in
    the sample). Deterministic for (params.seed, query_key, judged).

    ``n_pairs`` (optional) is the number of pool pairs of the query; by default 1 + the largest
    index in ``run_lists``. ``query_key`` should be a stable integer per query (e.g. the caption's
    database id) so that queries get different random orders. ``known`` (optional pair indices:
    the caption's original positive) is used by "sampled" and "active" only: known pairs are
    relevant by convention, so they are never sampled (the other strategies still queue them, as
    a check on raters). ``inclusion`` ("active" only, required there): each pair's inclusion probability
    in the complete sample, as :func:`active_design` drew them (the pool stores them), so the
    order needs no machine verdicts once the design is drawn. ``design`` ("sampled" only,
    optional): :func:`sampled_design` of these same run lists, params, query key, pair count and
    known pairs, when the caller has drawn it already (the label hook needs its order and its pi).
    """
    _validate(strategy, params)
    lists = _lists(run_lists)
    n = _n_pairs(lists, n_pairs)
    done = np.zeros(n, dtype=bool)
    for pair in judged:
        if not 0 <= int(pair) < n:
            raise ValueError(f"judged pair index {pair} outside 0..{n - 1}")
        done[int(pair)] = True
    if strategy == "sampled":
        if design is None:
            design = sampled_design(lists, params=params, query_key=query_key, n_pairs=n, known=known)
        order = design["order"]
        return order[~done[order]]
    if strategy == "active":
        if inclusion is None:
            raise ValueError("the active strategy's order needs the pairs' inclusion probabilities")
        order = _active_from_pi(lists, inclusion, params=params, query_key=query_key, n=n,
                                known=_known_mask(known, n))["order"]
        return order[~done[order]]
    tie = seeded_uniform(params.seed, query_key, np.arange(n), _TAG_PAIR)
    depth = pair_depths(lists, n)
    open_pairs = np.flatnonzero(~done)
    if strategy == "pool_order":
        tail = open_pairs[np.argsort(tie[open_pairs], kind="stable")]
    elif strategy == "shallow_first":
        tail = _first_by_depth(depth, tie, open_pairs)
    else:
        if strategy == "move_to_front":
            runs = _move_to_front_line(lists, judged, run_line(len(lists), seed=params.seed,
                                                                 query_key=query_key))
        else:
            scores = bandit_scores(lists, judged, n, params=params, query_key=query_key)
            line_pos = np.empty(len(lists), dtype=np.int64)
            line_pos[run_line(len(lists), seed=params.seed, query_key=query_key)] = np.arange(len(lists))
            runs = list(np.lexsort((line_pos, -scores)))
        placed = done.copy()
        parts = []
        for r in runs:
            fresh = _first_occurrences(lists[r], placed)
            if len(fresh):
                placed[fresh] = True
                parts.append(fresh)
        leftover = np.flatnonzero(~placed)
        parts.append(leftover[np.argsort(tie[leftover], kind="stable")])
        tail = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    if params.warmup_depth > 0:
        warm = tail[depth[tail] <= params.warmup_depth]
        if len(warm):
            tail = np.concatenate([_first_by_depth(depth, tie, warm),
                                   tail[depth[tail] > params.warmup_depth]])
    return tail.astype(np.int64)


def _first_occurrences(lst: np.ndarray, placed: np.ndarray) -> np.ndarray:
    """The run's not-yet-placed pairs in rank order, each once."""
    out = []
    seen = set()
    for p in lst.tolist():
        if not placed[p] and p not in seen:
            seen.add(p)
            out.append(p)
    return np.asarray(out, dtype=np.int64)


def active_weights(run_lists, n_pairs: int | None, confidence, known=None) -> np.ndarray:
    """Each pair's Neyman score for the "active" design (Zrnic & Candes 2024's active inference
    for the runs' C@K at the pool's depth): ``a_i = sqrt(f_i (1 - f_i)) * sqrt(sum_r d_ri^2)``.
    ``f_i`` is the machine's probability that the pair is relevant (0.5 where it gave no verdict,
    nan); ``sqrt(f (1 - f))`` is the sd of the pair's label under the machine's belief (of the
    residual ``y - f`` when the machine is calibrated); ``d_ri = prod_{j != i in run r's list}
    (1 - f_j)`` is how much run r's C@K (K = the list's length: the pool depth) moves when pair i
    turns relevant, at the machine's beliefs, summed over the runs that list the pair and list no
    known relevant pair (a run listing the original positive has C@K = 1 settled: ``d = 0``).
    Pairs with inclusion probabilities ``pi_i`` proportional to ``a_i`` minimise the runs' summed
    first-order C@K variance ``sum_i (1 - pi_i)/pi_i f_i (1 - f_i) sum_r d_ri^2`` at a given
    expected number of judgments (Neyman's allocation). Known pairs score 0 (never sampled)."""
    lists = _lists(run_lists)
    n = _n_pairs(lists, n_pairs)
    f = np.asarray(confidence, dtype=np.float64).reshape(-1)
    if f.size != n:
        raise ValueError(f"confidence has {f.size} values for {n} pairs")
    if np.any((f < 0) | (f > 1)):
        raise ValueError("machine confidences must be probabilities in [0, 1] (nan: no verdict)")
    f = np.where(np.isnan(f), 0.5, f)
    known_mask = _known_mask(known, n)
    lev2 = np.zeros(n)
    for lst in lists:
        lst = np.asarray(list(dict.fromkeys(lst.tolist())), dtype=np.int64)
        if not len(lst) or known_mask[lst].any():
            continue
        z = 1.0 - f[lst]
        # product of the other pairs' (1 - f): prefix x suffix products (exact when some f = 1)
        before = np.concatenate([[1.0], np.cumprod(z[:-1])])
        after = np.concatenate([np.cumprod(z[::-1][:-1])[::-1], [1.0]])
        np.add.at(lev2, lst, (before * after) ** 2)
    return np.where(known_mask, 0.0, np.sqrt(f * (1.0 - f)) * np.sqrt(lev2))


def active_scale(weights, sample_rate: float, *, n_counted: int, n_top: int, uniform_share: float) -> tuple[float, float]:
    """The "active" design's allocation over a whole pool: ``(c0, c1)`` such that the inclusion
    probabilities ``pi_i = min(1, c0 + c1 a_i)`` (:func:`active_pi`) of the pairs outside the top
    stratum (``weights``: their :func:`active_weights`, every query of the pool concatenated) sum
    to ``sample_rate * n_counted - n_top`` (``n_counted``: the pool's pairs that are not known
    relevant, ``n_top``: its top-stratum pairs, judged with pi = 1). The design is the mixture
    ``pi_i = min(1, c ((1 - s) a_i / mean(a) + s))``, ``s = uniform_share``: Neyman's allocation
    mixed with the uniform design (Zrnic & Candes 2024's defensive mixture), so every pair keeps
    ``pi >= c s`` and a confident machine mistake is never caught at a tiny pi; ``c`` by bisection.
    One constant for the pool, not per query: a query whose runs are settled gets few judgments."""
    a = np.asarray(weights, dtype=np.float64).reshape(-1)
    if not 0.0 < uniform_share <= 1.0:
        raise ValueError("active_uniform_share must be in (0, 1]")
    need = sample_rate * n_counted - n_top
    if not a.size:
        return 1.0, 0.0
    if need <= 0:
        raise ValueError("the top stratum alone exceeds the sample rate: the active design has no pair left "
                         "to sample (lower top_stratum_depth or raise sample_rate)")
    mean = float(a.mean())
    share = 1.0 if mean <= 0 else uniform_share
    rel = (1.0 - share) * (a / mean if mean > 0 else 0.0) + share
    if need >= a.size:
        return 1.0, 0.0
    lo, hi = 0.0, 1.0 / share
    for _ in range(200):
        mid = (lo + hi) / 2
        if np.minimum(1.0, mid * rel).sum() < need:
            lo = mid
        else:
            hi = mid
    return hi * share, (hi * (1.0 - share) / mean if mean > 0 else 0.0)


def active_pi(weights, scale: tuple[float, float]) -> np.ndarray:
    """``min(1, c0 + c1 a_i)``: the inclusion probability of pairs outside the top stratum."""
    c0, c1 = scale
    return np.minimum(1.0, c0 + c1 * np.asarray(weights, dtype=np.float64))


def _active_parts(lists, n: int, confidence, known, params: StrategyParams):
    """(Neyman scores, top stratum, known) of one query."""
    known_mask = _known_mask(known, n)
    top = (pair_depths(lists, n) <= params.top_stratum_depth) & ~known_mask
    return active_weights(lists, n, confidence, known=known_mask), top, known_mask


def active_pool_scale(queries, *, params: StrategyParams) -> tuple[float, float]:
    """The pool's ``(c0, c1)`` (:func:`active_scale`) from every query of the pool: ``queries``
    yields ``(run_lists, n_pairs, confidence, known)`` per query, as :func:`active_design` takes
    them. The pool build computes it once and stores it; each query's pi is then
    ``active_design(..., scale=...)``'s."""
    _validate("active", params)
    parts, n_counted, n_top = [], 0, 0
    for run_lists, n_pairs, confidence, known in queries:
        lists = _lists(run_lists)
        n = _n_pairs(lists, n_pairs)
        a, top, known_mask = _active_parts(lists, n, confidence, known, params)
        parts.append(a[~top & ~known_mask])
        n_counted += int((~known_mask).sum())
        n_top += int(top.sum())
    return active_scale(np.concatenate(parts) if parts else np.zeros(0), params.sample_rate, n_counted=n_counted,
                        n_top=n_top, uniform_share=params.active_uniform_share)


def active_design(run_lists, confidence, *, params: StrategyParams, query_key: int = 0,
                  n_pairs: int | None = None, known=None, scale: tuple[float, float] | None = None) -> dict:
    """The "active" design of one query (Zrnic & Candes 2024's active inference, with the
    inclusion probabilities fixed in advance): top stratum (best rank ``<= top_stratum_depth``)
    ``pi = 1``; every other pair ``pi_i = min(1, c0 + c1 a_i)``, ``a`` from
    :func:`active_weights`, ``scale = (c0, c1)`` the pool's constants (:func:`active_scale` over
    every query of the pool; without ``scale``, over this query alone). Known pairs are neither
    sampled nor counted. Pair ``i`` is in the sample when its seeded uniform ``u_i < pi_i``
    (independent: a Poisson sample), and the sample is judged in increasing ``u_i / pi_i``:
    sequential Poisson sampling with weights ``pi``, so the pairs worth most tend to come first
    and any prefix is a Poisson sample too (see :func:`prefix_inclusion_probabilities`'s
    ``inclusion``). Returns the same keys as :func:`sampled_design`, ``weights`` being ``pi``,
    plus ``scale``."""
    _validate("active", params)
    lists = _lists(run_lists)
    n = _n_pairs(lists, n_pairs)
    a, top, known_mask = _active_parts(lists, n, confidence, known, params)
    free = ~top & ~known_mask
    if scale is None:
        scale = active_scale(a[free], params.sample_rate, n_counted=int((~known_mask).sum()), n_top=int(top.sum()),
                             uniform_share=params.active_uniform_share)
    pi = np.ones(n)
    pi[free] = active_pi(a[free], scale)
    # pairs at pi = 1 (top stratum, or capped) come first, as in the order from the stored pi
    design = _active_from_pi(lists, pi, params=params, query_key=query_key, n=n, known=known_mask)
    return design | {"scale": (float(scale[0]), float(scale[1]))}


def _active_from_pi(lists, pi, *, params: StrategyParams, query_key: int, n: int, top=None, known=None) -> dict:
    """The active design's order from its inclusion probabilities (stored ones, when judging):
    pairs with ``pi = 1`` first, shallow first; then the sample by ``u / pi``. Known pairs
    (stored with ``pi = 1`` too) come with the top stratum when not told apart."""
    pi = np.asarray([1.0 if p is None else float(p) for p in pi], dtype=np.float64) if not isinstance(
        pi, np.ndarray) else pi.astype(np.float64)
    if pi.size != n or np.any(~(pi > 0) | (pi > 1)):
        raise ValueError(f"inclusion probabilities must be {n} values in (0, 1]")
    known = np.zeros(n, dtype=bool) if known is None else known
    top = (pi >= 1.0) if top is None else top
    u = seeded_uniform(params.seed, query_key, np.arange(n), _TAG_SAMPLE)
    key = u / pi
    depth = pair_depths(lists, n)
    tie = seeded_uniform(params.seed, query_key, np.arange(n), _TAG_PAIR)
    top_order = _first_by_depth(depth, tie, np.flatnonzero(top & ~known))
    rest = np.flatnonzero(~top & ~known & (u < pi))
    order = np.concatenate([top_order, rest[np.argsort(key[rest], kind="stable")]]).astype(np.int64)
    return {"weights": pi, "top": top | known, "n_top": len(top_order), "key": key, "c": 1.0, "order": order, "pi": pi}


def inclusion_probabilities(run_lists, *, params: StrategyParams, query_key: int = 0,
                            n_pairs: int | None = None, strategy: str = "sampled", known=None,
                            confidence=None, scale: tuple[float, float] | None = None) -> np.ndarray:
    """Per pair of the query: its inclusion probability under the strategy's design (1.0 for every
    pair unless strategy is "sampled"). For "sampled" this is the design of the *complete* sample
    (expected size ``sample_rate * n``); call it with the params used to build the order.

    ``strategy`` (keyword, default "sampled") names the design; every other strategy judges the
    whole pool (a census), hence 1.0; "active" needs the machine's ``confidence`` per pair and
    the pool's ``scale`` (:func:`active_design`; without it, the query's own allocation)."""
    _validate(strategy, params)
    lists = _lists(run_lists)
    n = _n_pairs(lists, n_pairs)
    if strategy == "active":
        if confidence is None:
            raise ValueError("the active design needs the machine judge's confidence per pair")
        return active_design(lists, confidence, params=params, query_key=query_key, n_pairs=n, known=known,
                             scale=scale)["pi"]
    if strategy != "sampled":
        return np.ones(n)
    return sampled_design(lists, params=params, query_key=query_key, n_pairs=n, known=known)["pi"]


def prefix_inclusion_probabilities(run_lists, n_taken: int, *, params: StrategyParams,
                                   query_key: int = 0, n_pairs: int | None = None, known=None,
                                   inclusion=None) -> np.ndarray:
    """"sampled" (or "active", given its complete sample's ``inclusion``): inclusion probabilities when only the first ``n_taken`` pairs of the
    sampled order were judged (judging stopped early: budget, stopping rule, checkpoint).
    Sequential Poisson sampling: ``pi_i = min(1, c w_i)`` with ``c`` the key of the first pair not
    taken (the complete sample's ``c`` once the sample is exhausted); top stratum 1. Before the
    top stratum is complete no deeper pair has been drawn (their pi is 0) and the top pairs not
    yet judged are missing: estimates are then not design-unbiased."""
    if inclusion is not None:  # "active": its stored complete-sample probabilities
        lists = _lists(run_lists)
        n = _n_pairs(lists, n_pairs)
        design = _active_from_pi(lists, inclusion, params=params, query_key=query_key, n=n, known=_known_mask(known, n))
    else:
        design = sampled_design(run_lists, params=params, query_key=query_key, n_pairs=n_pairs, known=known)
    return _prefix_pi(design, n_taken)


def _prefix_pi(design: dict, n_taken: int) -> np.ndarray:
    if n_taken < 0:
        raise ValueError("n_taken must be >= 0")
    top, order, w = design["top"], design["order"], design["weights"]
    n_top = design["n_top"]
    if n_taken >= len(order):
        c = design["c"]
    elif n_taken <= n_top:
        c = 0.0
    else:
        c = float(design["key"][order[n_taken]])
    return np.where(top, 1.0, np.minimum(1.0, c * w))


def interleave(position_in_query: int, query_slot: int, n_queries: int) -> int:
    """Global queue key: queries take turns (round robin), each advancing along its own order.
    Key = position_in_query * n_queries + query_slot (smaller = sooner); position and slot are
    0-based, slot < n_queries."""
    if not 0 <= query_slot < n_queries or position_in_query < 0:
        raise ValueError("need 0 <= query_slot < n_queries and position_in_query >= 0")
    return int(position_in_query) * int(n_queries) + int(query_slot)
