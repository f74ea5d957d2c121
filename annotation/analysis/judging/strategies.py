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
  other pair ``i`` has a weight ``w_i`` = the mean over runs of the AP-prior of its rank in that
  run (Aslam, Pavlu & Yilmaz 2006: ``(1 + H_D - H_k) / (2 D)`` at rank ``k`` of a depth-``D``
  list, 0 where the run does not rank it) and a seeded uniform ``u_i``; pairs are judged in
  increasing ``u_i / w_i`` (sequential Poisson sampling, Ohlsson 1998). Any prefix of that order
  is then a Poisson sample with ``pi_i = min(1, c w_i)``, ``c`` being the key of the first pair
  not taken (see :func:`prefix_inclusion_probabilities`), so judging can stop anywhere and the
  estimates stay valid. The full sample stops at the ``c`` that makes the expected sample size
  ``sample_rate * n`` (top stratum included).

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

__all__ = [
    "STRATEGIES",
    "BANDIT_VARIANTS",
    "StrategyParams",
    "query_order",
    "inclusion_probabilities",
    "prefix_inclusion_probabilities",
    "interleave",
    "pair_depths",
]

STRATEGIES = ("pool_order", "shallow_first", "move_to_front", "bandit", "sampled")
BANDIT_VARIANTS = ("mm_ns", "thompson")


@dataclass(frozen=True)
class StrategyParams:
    """Options of a judging strategy (all strategies accept all fields; each uses its own)."""

    warmup_depth: int = 0          # every pair at rank <= warmup_depth in any run is judged first, shallow first
    seed: int = 0
    bandit_variant: str = "mm_ns"  # "mm_ns" | "thompson"
    sample_rate: float = 0.3       # "sampled": expected share of the pool to judge
    top_stratum_depth: int = 0     # "sampled": ranks <= this get inclusion probability 1
    bandit_discount: float = 0.9   # "mm_ns": weight of an outcome per more recent outcome of the run


def pair_depths(run_lists: Sequence[np.ndarray], n_pairs: int | None = None) -> np.ndarray:
    """Best (minimum, 1-based) rank of each pair over the runs; pairs no run ranks get a large
    sentinel (they are judged last by depth-based orders)."""
    raise NotImplementedError


def query_order(strategy: str, run_lists: Sequence[np.ndarray], judged: Mapping[int, bool], *,
                params: StrategyParams, query_key: int = 0, n_pairs: int | None = None) -> np.ndarray:
    """One query. run_lists[r] = the query's pool-pair indices (0..n-1) that run r ranked, best
    first (a pair may be in several runs). judged = pair index -> relevant? for pairs already
    resolved (in the order the labels arrived: move_to_front replays them). Returns the
    not-yet-judged pair indices in the order to judge them next (for "sampled": only the pairs in
    the sample). Deterministic for (params.seed, query_key, judged).

    ``n_pairs`` (optional) is the number of pool pairs of the query; by default 1 + the largest
    index in ``run_lists``. ``query_key`` should be a stable integer per query (e.g. the caption's
    database id) so that queries get different random orders.
    """
    raise NotImplementedError


def inclusion_probabilities(run_lists, *, params: StrategyParams, query_key: int = 0,
                            n_pairs: int | None = None) -> np.ndarray:
    """Per pair of the query: its inclusion probability under the strategy's design (1.0 for every
    pair unless strategy is "sampled"). For "sampled" this is the design of the *complete* sample
    (expected size ``sample_rate * n``); call it with the params used to build the order."""
    raise NotImplementedError


def prefix_inclusion_probabilities(run_lists, n_taken: int, *, params: StrategyParams,
                                   query_key: int = 0, n_pairs: int | None = None) -> np.ndarray:
    """"sampled" only: inclusion probabilities when only the first ``n_taken`` pairs of the
    sampled order were judged (judging stopped early: budget, stopping rule, checkpoint).
    Sequential Poisson sampling: ``pi_i = min(1, c w_i)`` with ``c`` the key of the first pair not
    taken (the complete sample's ``c`` once the sample is exhausted); top stratum 1."""
    raise NotImplementedError


def interleave(position_in_query: int, query_slot: int, n_queries: int) -> int:
    """Global queue key: queries take turns (round robin), each advancing along its own order.
    Key = position_in_query * n_queries + query_slot (smaller = sooner); position and slot are
    0-based, slot < n_queries."""
    raise NotImplementedError
