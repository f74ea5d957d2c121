"""Horvitz-Thompson estimates of per-run metrics from partial judgments (issue 15).

Design: every pool pair ``i`` of query ``q`` was judged with a known inclusion probability
``pi_i`` (1 for a census: every pair judged, or a top stratum; ``< 1`` for a Poisson sample, see
:mod:`.strategies`), independently across pairs. A pair with no judgment contributes nothing
(``I_i = 0``); a pair outside every ranking (not pooled) is non-relevant. ``known_relevant[q]``
(the caption's original positive) is relevant whatever raters say and is never estimated.

With ``y_hat_i = I_i y_i / pi_i`` (unbiased for ``y_i``):

- ``C@K``: ``1 - prod_{i in top K} (1 - y_i)`` is not linear in the labels, but with independent
  inclusions ``E[prod (1 - y_hat_i)] = prod (1 - y_i)``, so ``1 - prod_{i in top K}(1 - y_hat_i)``
  is exactly unbiased (and exact, 1, when a known relevant or a relevant pair with ``pi = 1`` is
  in the top K). Its variance has the exact unbiased estimate
  ``T^2 - prod_i (Z_i^2 - v_i)``, ``Z_i = 1 - y_hat_i``, ``v_i = I_i y_i (1 - pi_i) / pi_i^2``.
- ``AP`` (textbook: divide by the number of relevant, as trec_eval's ``map``, relevant counted in
  the corrected qrels: known ones plus pooled relevant pairs): ratio ``N_hat / R_hat`` with
  ``N_hat = sum_k y_hat_k / k (1 + sum_{j<k} y_hat_j)`` (unbiased: distinct pairs are included
  independently) and ``R_hat = |known| + sum_i y_hat_i``; nearly unbiased (ratio estimator).
- ``nDCG@K``: binary gains, ``1 / log2(rank + 1)`` discount, ideal DCG from the number of
  relevant (as trec_eval's ``ndcg_cut``); ``DCG_hat / IDCG(R_hat)`` with IDCG interpolated
  linearly between integer R (ratio estimator).

Variance: per query, C@K as above (exact, design-based); AP and nDCG by Taylor linearisation of
the estimator in the ``y_hat_i`` (design-based, Poisson sampling:
``sum_i g_i^2 I_i y_i (1 - pi_i) / pi_i^2``). Queries are sampled independently, so the variance
of a mean over queries is the sum of per-query variances over Q^2. Intervals: normal,
estimate +- z se. Adjacent systems in the ranking: P(ordered right) = Phi(d / se_d) from the
paired difference ``d`` of the two runs' estimates (same judged pairs, so the covariance is
accounted for). Judgments for a target width: the variance is projected to fall as 1 / n (more
judgments at the same design), so ``n_needed = n * (width / target)^2`` and the report gives
``n_needed - n``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["RunEstimate", "EstimateReport", "estimate_metrics", "MEASURES", "ESTIMATOR_NAME"]

MEASURES = ("C@1", "C@5", "C@10", "AP", "nDCG@10")
ESTIMATOR_NAME = ("Horvitz-Thompson (Poisson design): C@K product estimator (unbiased, exact "
                  "variance estimate); AP and nDCG ratio estimators (Taylor-linearised variance)")


@dataclass(frozen=True)
class RunEstimate:
    run: str
    measure: str
    estimate: float
    se: float
    ci_low: float
    ci_high: float
    judgments_for_width: int | None   # more judgments projected to reach the target CI width


@dataclass(frozen=True)
class EstimateReport:
    runs: list[RunEstimate]
    ranking: list[tuple[str, str, float]]   # adjacent pairs (better, worse, P(ordered right)) per measure
    estimator: str
    design: str
    conventions: dict
    ranking_measures: list[str] = field(default_factory=list)  # measure of each ranking entry

    def to_dict(self) -> dict:
        """JSON-ready form."""
        raise NotImplementedError


def estimate_metrics(rankings: Mapping[str, Mapping[str, Sequence[str]]],    # run -> query -> ranked item ids
                     judged: Mapping[tuple[str, str], bool],                  # (query, item) -> relevant
                     inclusion: Mapping[tuple[str, str], float],             # (query, item) -> pi (judged pairs)
                     *, known_relevant: Mapping[str, set[str]] | None = None, # originals: relevant, not sampled
                     measures=("C@1", "C@5", "C@10", "AP", "nDCG@10"),
                     target_width: float | None = None, confidence: float = 0.95) -> EstimateReport:
    """Estimates, standard errors and intervals of each measure for each run (see module).

    Queries averaged over: every query any run ranks, plus every query of ``known_relevant``; a
    run without a list for a query scores 0 there. A judged pair missing from ``inclusion`` counts
    as ``pi = 1``. ``ranking`` lists, per measure in ``measures`` order, the runs sorted by
    estimate (best first) as adjacent pairs ``(better, worse, P(ordered right))``; the measure of
    each entry is in ``ranking_measures``. ``judgments_for_width`` is None without
    ``target_width`` or when the interval is already narrower."""
    raise NotImplementedError
