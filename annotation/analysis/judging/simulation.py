"""Replays of a fully judged pool under each judging strategy (issue 15).

Queries take turns (:func:`.strategies.interleave`), each following its own strategy order, so at
a checkpoint (a share of the pool's judgments) every query has had about the same number of
judgments. Replays differ by seed (``seed`` + replay number, each query keyed by its position).
At each checkpoint the engine records: the share of the pool's relevant pairs found; each run's
metric estimate error against its full-pool value; Kendall's tau (scipy) of the system ranking
against the full-pool ranking; for ``sampled``, whether each run's 95% interval covers the
full-pool value. For the other strategies the estimate is the usual one from incomplete
judgments (unjudged pairs count as non-relevant) and no interval is made.

The engine is vectorised over replays and queries (state arrays of shape (queries x replays,
runs)); :func:`.strategies.query_order` gives the same choices one query at a time (tested).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .stopping import StoppingRules
from .strategies import StrategyParams

__all__ = ["SimulationResult", "simulate", "curves_csv", "curves_svg", "DEFAULT_CHECKPOINTS"]

DEFAULT_CHECKPOINTS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


@dataclass
class SimulationResult:
    """One row per (strategy, checkpoint): means over replays, plus spread.

    Arrays are indexed ``[strategy, checkpoint]`` or ``[strategy, checkpoint, run]``.
    """

    strategies: list[str]
    checkpoints: np.ndarray              # share of the pool's judgments, (C,)
    runs: list[str]
    measure: str
    replays: int
    n_pairs: int                         # pool pairs
    n_relevant: int                      # relevant pool pairs (truth)
    full_values: np.ndarray              # (R,) each run's measure on the full pool
    judged_share: np.ndarray             # (S, C) share actually judged (stopping rules / sample may end early)
    relevant_found: np.ndarray           # (S, C) mean share of relevant pairs found
    relevant_found_sd: np.ndarray        # (S, C)
    share_for_90: np.ndarray             # (S,) mean share of judgments needed to find 90% of relevant (nan if never)
    metric_error: np.ndarray             # (S, C, R) mean |estimate - full value| over replays
    metric_error_max: np.ndarray         # (S, C) mean over replays of the max over runs of |error|
    kendall_tau: np.ndarray              # (S, C) mean over replays
    kendall_tau_sd: np.ndarray           # (S, C)
    ci_coverage: np.ndarray              # (S, C, R) share of replays whose CI covers; nan without CI
    stop_reasons: list[dict] = field(default_factory=list)  # per strategy: reason -> mean queries stopped
    params: dict = field(default_factory=dict)


def simulate(rankings, truth: Mapping[tuple[str, str], bool], *, strategies, replays: int, seed: int,
             checkpoints: Sequence[float], params: StrategyParams, rules: StoppingRules | None = None,
             known_relevant=None, measure: str = "C@10", progress: Callable[[str, float], None] | None = None,
             depth: int | None = None) -> SimulationResult:
    """Replay the pool of ``rankings`` (run -> query -> ranked item ids; cut at ``depth`` if
    given) whose every pair has a label in ``truth`` ((query, item) -> relevant; a pooled pair
    without one is an error naming it). ``progress(message, fraction)`` is called as strategies
    finish."""
    raise NotImplementedError


def curves_csv(result: SimulationResult) -> str:
    """One row per (strategy, checkpoint[, run]) with every curve's value; header first."""
    raise NotImplementedError


def curves_svg(result: SimulationResult) -> dict[str, str]:   # chart name -> standalone SVG text
    """relevant_found, metric_error, kendall_tau, ci_coverage."""
    raise NotImplementedError
