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

from scipy import stats
from scipy.special import betaincinv


from .estimates import c_at_k_interval
from .stopping import StoppingRules
from .strategies import (
    _TAG_PAIR,
    _TAG_RUN,
    _TAG_SAMPLE,
    _TAG_THOMPSON,
    StrategyParams,
    _validate,
    pair_depths,
    sample_weights,
    sampling_threshold,
    seeded_uniform,
)

__all__ = ["SimulationResult", "simulate", "curves_rows", "curves_svg", "CURVES_HEADER", "DEFAULT_CHECKPOINTS"]

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
    ci_width: np.ndarray | None = None          # (S, C, R) mean width of the reported interval; nan without CI
    ci_coverage_normal: np.ndarray | None = None  # (S, C, R) the plain normal interval (estimate +- z se)
    ci_width_normal: np.ndarray | None = None     # (S, C, R) its mean width


@dataclass
class _Pool:
    runs: list[str]
    queries: list[str]
    run_pair: np.ndarray   # (Q, M, D) pair index of run m's rank d+1 for query q, -1 if none
    valid: np.ndarray      # (Q, N) pair slot in use
    relevant: np.ndarray   # (Q, N) truth
    known: np.ndarray      # (Q, N) known relevant (original positive)
    depth: np.ndarray      # (Q, N) best rank over runs (sentinel for unused slots)
    n_pairs: int
    n_relevant: int


def _build_pool(rankings, truth, known_relevant, depth) -> _Pool:
    runs = sorted(rankings)
    if not runs:
        raise ValueError("no runs to simulate")
    by_run = {r: {str(q): v for q, v in rankings[r].items()} for r in runs}
    queries = sorted({q for r in runs for q in by_run[r]})
    known = {str(q): {str(i) for i in items} for q, items in (known_relevant or {}).items()}
    truth_s = {(str(q), str(i)): bool(v) for (q, i), v in truth.items()}
    lists = []
    d_max = 1
    n_max = 1
    for q in queries:
        index: dict[str, int] = {}
        per_run = []
        for r in runs:
            ranked = list(dict.fromkeys(str(i) for i in (by_run[r].get(q) or ())))
            if depth is not None:
                ranked = ranked[:depth]
            per_run.append([index.setdefault(i, len(index)) for i in ranked])
            d_max = max(d_max, len(ranked))
        n_max = max(n_max, len(index))
        lists.append((index, per_run))
    Q, M = len(queries), len(runs)
    run_pair = np.full((Q, M, d_max), -1, dtype=np.int32)
    valid = np.zeros((Q, n_max), dtype=bool)
    relevant = np.zeros((Q, n_max), dtype=bool)
    is_known = np.zeros((Q, n_max), dtype=bool)
    for qi, (q, (index, per_run)) in enumerate(zip(queries, lists)):
        for m, lst in enumerate(per_run):
            run_pair[qi, m, : len(lst)] = lst
        valid[qi, : len(index)] = True
        for item, p in index.items():
            if (q, item) not in truth_s:
                raise ValueError(f"truth has no label for pooled pair (query {q!r}, item {item!r})")
            relevant[qi, p] = truth_s[(q, item)] or item in known.get(q, ())
            is_known[qi, p] = item in known.get(q, ())
    depth_arr = np.full((Q, n_max), 1 << 30, dtype=np.int64)
    for qi in range(Q):
        for m in range(M):
            lst = run_pair[qi, m]
            lst = lst[lst >= 0]
            np.minimum.at(depth_arr[qi], lst, np.arange(1, len(lst) + 1))
    return _Pool(runs, queries, run_pair, valid, relevant, is_known, depth_arr,
                 int(valid.sum()), int(relevant.sum()))


def _run_lists(pool: _Pool, qi: int) -> list[np.ndarray]:
    return [row[row >= 0].astype(np.int64) for row in pool.run_pair[qi]]


def _full_values(pool: _Pool, k: int) -> np.ndarray:
    """Each run's C@k with every pooled pair judged (known relevant included)."""
    top = pool.run_pair[:, :, :k]
    rel = np.take_along_axis(pool.relevant[:, None, :].repeat(pool.run_pair.shape[1], 1),
                             np.maximum(top, 0), axis=2) & (top >= 0)
    return rel.any(axis=2).mean(axis=0)


def _static_orders(strategy: str, pool: _Pool, params: StrategyParams, seeds: np.ndarray,
                   designs: dict | None) -> np.ndarray:
    """(R, Q, N) judging order of the non-adaptive strategies (-1 = not judged)."""
    Q, N = pool.valid.shape
    q_idx = np.arange(Q)[None, :, None]
    p_idx = np.arange(N)[None, None, :]
    tie = seeded_uniform(seeds[:, None, None], q_idx, p_idx, _TAG_PAIR)
    depth = np.broadcast_to(pool.depth[None], tie.shape)
    excluded = np.broadcast_to(~pool.valid[None], tie.shape)
    if strategy == "sampled":
        u = seeded_uniform(seeds[:, None, None], q_idx, p_idx, _TAG_SAMPLE)
        key = u / designs["weights"][None]
        top = np.broadcast_to(designs["top"][None], tie.shape)
        in_sample = top | (key < designs["c"][None, :, None])
        group = np.where(top, 0, np.where(in_sample, 1, 2))
        group = np.where(excluded | pool.known[None], 3, group)
        second = np.where(top, depth, 0)
        third = np.where(top, tie, key)
        order = np.lexsort((third, second, group), axis=-1)
        taken = np.take_along_axis(group, order, axis=-1) <= 1
        return np.where(taken, order, -1)
    warm = depth <= params.warmup_depth
    if strategy == "shallow_first":
        second = depth
        group = np.zeros(tie.shape, dtype=np.int64)
    else:  # pool_order
        group = np.where(warm, 0, 1)
        second = np.where(warm, depth, 0)
    group = np.where(excluded, 3, group)
    order = np.lexsort((tie, second, group), axis=-1)
    return np.where(np.take_along_axis(group, order, axis=-1) < 3, order, -1)


def _sampled_designs(pool: _Pool, params: StrategyParams) -> dict:
    Q, N = pool.valid.shape
    weights = np.ones((Q, N))
    top = np.zeros((Q, N), dtype=bool)
    c = np.zeros(Q)
    for qi in range(Q):
        n = int(pool.valid[qi].sum())
        lists = _run_lists(pool, qi)
        kn = pool.known[qi, :n]
        w = sample_weights(lists, n, params.sample_weights, kn)
        t = (pair_depths(lists, n) <= params.top_stratum_depth) & ~kn
        weights[qi, :n] = w
        top[qi, :n] = t
        c[qi] = sampling_threshold(w, t, params.sample_rate, kn)
    return {"weights": weights, "top": top, "c": c}


class _Stepper:
    """Adaptive strategies (move_to_front, bandit) for a block of rows = (replay, query)."""

    def __init__(self, strategy, pool: _Pool, params: StrategyParams, seeds: np.ndarray):
        self.strategy = strategy
        self.params = params
        R = len(seeds)
        Q, N = pool.valid.shape
        M = pool.run_pair.shape[1]
        self.R, self.Q, self.N, self.M = R, Q, N, M
        self.q_of_row = np.tile(np.arange(Q), R)
        self.seed_of_row = np.repeat(seeds, Q)
        self.run_pair = pool.run_pair[self.q_of_row]            # (B, M, D)
        self.in_run = self.run_pair >= 0
        self.safe = np.maximum(self.run_pair, 0).astype(np.int64)
        self.relevant = pool.relevant[self.q_of_row]            # (B, N)
        keys = seeded_uniform(self.seed_of_row[:, None], self.q_of_row[:, None], np.arange(M)[None, :], _TAG_RUN)
        self.line_pos = np.argsort(np.argsort(keys, axis=1, kind="stable"), axis=1, kind="stable")
        self.tie_pos = self.line_pos.copy()                      # the bandit's tie-break: the initial line
        # Warm-up: shallow first, ties by the pair key, as query_order.
        depth = pool.depth[self.q_of_row]
        tie = seeded_uniform(self.seed_of_row[:, None], self.q_of_row[:, None], np.arange(N)[None, :], _TAG_PAIR)
        warm = (depth <= params.warmup_depth) & pool.valid[self.q_of_row]
        self.warm_order = np.lexsort((tie, depth, ~warm), axis=-1)
        self.n_warm = warm.sum(axis=1)

    def choose(self, judged: np.ndarray, n_judged: np.ndarray) -> np.ndarray:
        B = judged.shape[0]
        rows = np.arange(B)
        j = judged[rows[:, None, None], self.safe]
        available = self.in_run & ~j
        has = available.any(axis=2)
        first = available.argmax(axis=2)
        if self.strategy == "move_to_front":
            run = np.where(has, self.line_pos, 1 << 30).argmin(axis=1)
        else:
            y = self.relevant[rows[:, None, None], self.safe] & self.in_run
            jj = j & self.in_run
            if self.params.bandit_variant == "mm_ns":
                deeper = np.cumsum(jj[:, :, ::-1], axis=2)[:, :, ::-1] - jj
                w = np.where(jj, self.params.bandit_discount ** deeper, 0.0)
                a = (w * y).sum(axis=2)
                b = (w * (jj & ~y)).sum(axis=2)
                score = (1.0 + a) / (2.0 + a + b)
            else:
                a = (jj & y).sum(axis=2).astype(np.float64)
                b = (jj & ~y).sum(axis=2).astype(np.float64)
                u = seeded_uniform(self.seed_of_row[:, None], self.q_of_row[:, None],
                                   np.arange(self.M)[None, :], _TAG_THOMPSON, extra=n_judged[:, None])
                score = betaincinv(1.0 + a, 1.0 + b, u)
            score = np.where(has, np.round(score, 12), -np.inf)
            best = score.max(axis=1, keepdims=True)
            run = np.where(score >= best, self.tie_pos, 1 << 30).argmin(axis=1)
        pair = self.run_pair[rows, run, first[rows, run]].astype(np.int64)
        pair = np.where(has.any(axis=1), pair, -1)
        in_warm = n_judged < self.n_warm
        pair = np.where(in_warm, self.warm_order[rows, np.minimum(n_judged, self.N - 1)], pair)
        return pair

    def update(self, pair: np.ndarray, relevant: np.ndarray) -> None:
        if self.strategy != "move_to_front":
            return
        miss = (pair >= 0) & ~relevant
        if not miss.any():
            return
        rows = np.flatnonzero(miss)
        moved = ((self.run_pair[rows] == pair[rows, None, None]).any(axis=2))
        key = moved * self.M + self.line_pos[rows]
        self.line_pos[rows] = np.argsort(np.argsort(key, axis=1, kind="stable"), axis=1, kind="stable")


def _remaining_relevant(in_run, safe, judged, relevant) -> np.ndarray:
    """Vectorised :func:`.stopping.estimated_remaining_relevant` for rows."""
    B = judged.shape[0]
    rows = np.arange(B)[:, None, None]
    j = judged[rows, safe] & in_run
    y = relevant[rows, safe] & j
    precision = (y.sum(axis=2) + 1.0) / (j.sum(axis=2) + 2.0)        # (B, M)
    best = np.full(judged.shape, -1.0)
    cand = np.where(in_run, precision[:, :, None], -1.0)
    flat_idx = (np.arange(B)[:, None, None] * judged.shape[1] + safe)
    np.maximum.at(best.reshape(-1), flat_idx.reshape(-1), cand.reshape(-1))
    return np.where(~judged & (best >= 0), best, 0.0).sum(axis=1)


def _sequences(strategy, pool: _Pool, params: StrategyParams, seeds: np.ndarray,
               rules: StoppingRules | None, designs) -> tuple[np.ndarray, np.ndarray, dict]:
    """(R, Q, N) pair judged at each position (-1 after the query's last), and stop reasons."""
    R = len(seeds)
    Q, N = pool.valid.shape
    reasons: dict[str, float] = {}
    if strategy in ("pool_order", "shallow_first", "sampled"):
        static = _static_orders(strategy, pool, params, seeds, designs)
        if rules is None or not any(v is not None for v in (rules.remaining_relevant_below,
                                                             rules.misses_in_a_row, rules.query_budget)):
            return static, reasons
        stepper = None
        static = static.reshape(R * Q, N)
    else:
        stepper = _Stepper(strategy, pool, params, seeds)
        static = None
    B = R * Q
    q_of_row = np.tile(np.arange(Q), R)
    valid = pool.valid[q_of_row]
    relevant = pool.relevant[q_of_row]
    judged = ~valid.copy()
    seq = np.full((B, N), -1, dtype=np.int64)
    n_judged = np.zeros(B, dtype=np.int64)
    streak = np.zeros(B, dtype=np.int64)
    active = valid.any(axis=1)
    stop_reason = np.full(B, "", dtype=object)
    safe = np.maximum(pool.run_pair[q_of_row], 0).astype(np.int64)
    in_run = pool.run_pair[q_of_row] >= 0
    for t in range(N):
        if not active.any():
            break
        if stepper is not None:
            pair = stepper.choose(judged, n_judged)
        else:
            pair = static[:, t]
        pair = np.where(active, pair, -1)
        ok = pair >= 0
        active &= ok
        idx = np.flatnonzero(ok)
        p = pair[idx]
        judged[idx, p] = True
        rel = np.zeros(B, dtype=bool)
        rel[idx] = relevant[idx, p]
        seq[idx, t] = p
        n_judged[idx] += 1
        streak = np.where(ok, np.where(rel, 0, streak + 1), streak)
        if stepper is not None:
            stepper.update(pair, rel)
        if rules is not None:
            stop = np.zeros(B, dtype=bool)
            # a query with nothing left has finished, not stopped
            stop = ~(valid & ~judged).any(axis=1)
            active &= ~stop
            if rules.query_budget is not None:
                hit = active & (n_judged >= rules.query_budget) & ~stop
                stop_reason[hit] = "budget"
                stop |= hit
            if rules.remaining_relevant_below is not None:
                left = _remaining_relevant(in_run, safe, judged, relevant)
                hit = active & ~stop & (left < rules.remaining_relevant_below)
                stop_reason[hit] = "remaining_relevant"
                stop |= hit
            if rules.misses_in_a_row is not None:
                hit = active & ~stop & (streak >= rules.misses_in_a_row)
                stop_reason[hit] = "misses_in_a_row"
                stop |= hit
            active &= ~stop
    for reason in ("budget", "remaining_relevant", "misses_in_a_row"):
        reasons[reason] = float((stop_reason == reason).sum()) / R
    return seq.reshape(R, Q, N), reasons


def _taken_at_budget(n_done: np.ndarray, budget: int) -> np.ndarray:
    """Per query, how many judgments the round robin has given it when the pool has spent
    ``budget`` (queries in slot order within a turn; exhausted queries drop out)."""
    total = int(n_done.sum())
    if budget >= total:
        return n_done.copy()
    # largest t with sum(min(n_done, t)) <= budget
    lo, hi = 0, int(n_done.max())
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if np.minimum(n_done, mid).sum() <= budget:
            lo = mid
        else:
            hi = mid - 1
    taken = np.minimum(n_done, lo)
    extra = budget - int(taken.sum())
    if extra > 0:
        more = np.flatnonzero(n_done > lo)[:extra]
        taken[more] += 1
    return taken


def simulate(rankings, truth: Mapping[tuple[str, str], bool], *, strategies, replays: int, seed: int,
             checkpoints: Sequence[float], params: StrategyParams, rules: StoppingRules | None = None,
             known_relevant=None, measure: str = "C@10", progress: Callable[[str, float], None] | None = None,
             depth: int | None = None, confidence: float = 0.95,
             params_by_strategy: Mapping[str, StrategyParams] | None = None) -> SimulationResult:
    """Replay the pool of ``rankings`` (run -> query -> ranked item ids; cut at ``depth`` if
    given) whose every pair has a label in ``truth`` ((query, item) -> relevant; a pooled pair
    without one is an error naming it). ``progress(message, fraction)`` is called as strategies
    finish.

    Replay ``r`` uses ``params`` with ``seed = seed + r``; query ``i`` (queries sorted by id) has
    ``query_key = i`` and its pairs are numbered in order of first appearance over the runs
    (sorted by name), rank by rank: :func:`.strategies.query_order` with the same inputs picks the
    same pairs. ``measure`` must be C@K (the curves' metric; estimate_metrics covers the others).
    ``rules.pool_budget`` cuts every replay at that many judgments. ``params_by_strategy``
    overrides ``params`` for the strategies it names (e.g. today's order without warm-up).
    """
    overrides = dict(params_by_strategy or {})
    strategies = list(strategies)
    for s in strategies:
        _validate(s, overrides.get(s, params))
        if s == "active":  # its design reads a machine judge's verdicts, which a replay has none of
            raise ValueError("the active strategy cannot be replayed: it needs a machine judge's verdicts")
    if replays < 1:
        raise ValueError("replays must be >= 1")
    if not measure.startswith("C@") or not measure[2:].isdigit() or int(measure[2:]) < 1:
        raise ValueError(f"simulation measure must be C@K, not {measure!r}")
    k = int(measure[2:])
    cps = np.asarray(sorted(float(c) for c in checkpoints))
    if not cps.size or cps.min() <= 0 or cps.max() > 1:
        raise ValueError("checkpoints must be shares in (0, 1]")
    pool = _build_pool(rankings, truth, known_relevant, depth)
    Q, N = pool.valid.shape
    M = len(pool.runs)
    S, C = len(strategies), len(cps)
    full = _full_values(pool, k)
    z = float(stats.norm.ppf(0.5 + confidence / 2.0))
    seeds = seed + np.arange(replays, dtype=np.int64)
    designs = _sampled_designs(pool, overrides.get("sampled", params)) if "sampled" in strategies else None
    if designs is not None:
        designs["seeds"] = seeds
    top_k = pool.run_pair[:, :, :k]                                   # (Q, M, K)
    top_ok = top_k >= 0
    top_safe = np.maximum(top_k, 0).astype(np.int64)
    q_ix = np.arange(Q)[:, None, None]
    per_run = ("metric_error", "ci_coverage", "ci_width", "ci_coverage_normal", "ci_width_normal")
    out = {name: np.full((S, C) if name not in per_run else (S, C, M), np.nan)
           for name in ("judged_share", "relevant_found", "relevant_found_sd", "metric_error",
                        "metric_error_max", "kendall_tau", "kendall_tau_sd", *per_run[1:])}
    share_for_90 = np.full(S, np.nan)
    stop_reasons = []
    budgets = [int(round(c * pool.n_pairs)) for c in cps]
    for si, strategy in enumerate(strategies):
        seq, reasons = _sequences(strategy, pool, overrides.get(strategy, params), seeds, rules, designs)
        stop_reasons.append(reasons)
        n_done = (seq >= 0).sum(axis=2)                               # (R, Q)
        if rules is not None and rules.pool_budget is not None:
            n_done = np.stack([_taken_at_budget(n_done[r], rules.pool_budget) for r in range(replays)])
        # position at which each pair was judged (N = never)
        pos = np.full((replays, Q, N), N, dtype=np.int64)
        rr, qq, tt = np.nonzero(seq >= 0)
        pos[rr, qq, seq[rr, qq, tt]] = tt
        rel_seq = np.where(seq >= 0, pool.relevant[np.arange(Q)[None, :, None], np.maximum(seq, 0)], False)
        # share of judgments to reach 90% of the relevant pairs (round robin: t major, q minor)
        need = 0.9 * pool.n_relevant
        found90 = []
        for r in range(replays):
            live = np.arange(N)[None, :] < n_done[r][:, None]
            flags = (rel_seq[r] & live).T.reshape(-1)[live.T.reshape(-1)]
            hit = np.flatnonzero(np.cumsum(flags) >= need)
            found90.append((hit[0] + 1) / pool.n_pairs if hit.size and pool.n_relevant else np.nan)
        share_for_90[si] = np.nanmean(found90) if np.isfinite(found90).any() else np.nan
        for ci, budget in enumerate(budgets):
            taken = np.stack([_taken_at_budget(n_done[r], budget) for r in range(replays)])  # (R, Q)
            judged_at = pos < taken[:, :, None]
            out["judged_share"][si, ci] = taken.sum(axis=1).mean() / pool.n_pairs
            found = (judged_at & pool.relevant[None]).sum(axis=(1, 2)) / max(pool.n_relevant, 1)
            out["relevant_found"][si, ci] = found.mean()
            out["relevant_found_sd"][si, ci] = found.std()
            known_or_judged_rel = (judged_at | pool.known[None]) & pool.relevant[None]   # (R, Q, N)
            if strategy == "sampled":
                bounds: dict = {}
                est, se = _sampled_c_at_k(designs, seq, taken, judged_at, pool, top_safe, top_ok, q_ix,
                                          interval=bounds, confidence=confidence)
                cover = (bounds["low"] - 1e-12 <= full[None]) & (full[None] <= bounds["high"] + 1e-12)
                out["ci_coverage"][si, ci] = cover.mean(axis=0)
                out["ci_width"][si, ci] = (bounds["high"] - bounds["low"]).mean(axis=0)
                out["ci_coverage_normal"][si, ci] = (np.abs(est - full[None]) <= z * se + 1e-12).mean(axis=0)
                out["ci_width_normal"][si, ci] = (2.0 * z * se).mean(axis=0)
            else:
                hits = known_or_judged_rel[:, q_ix, top_safe] & top_ok[None]        # (R, Q, M, K)
                est = hits.any(axis=3).mean(axis=1)                                  # (R, M)
            err = np.abs(est - full[None])
            out["metric_error"][si, ci] = err.mean(axis=0)
            out["metric_error_max"][si, ci] = err.max(axis=1).mean()
            taus = []
            for r in range(replays):
                tau = stats.kendalltau(est[r], full).statistic if M > 1 else np.nan
                taus.append(tau)
            taus = np.asarray(taus, dtype=float)
            out["kendall_tau"][si, ci] = np.nanmean(taus) if np.isfinite(taus).any() else np.nan
            out["kendall_tau_sd"][si, ci] = np.nanstd(taus) if np.isfinite(taus).any() else np.nan
        if progress is not None:
            progress(f"{strategy} done", (si + 1) / S)
    return SimulationResult(
        strategies=strategies, checkpoints=cps, runs=list(pool.runs), measure=measure, replays=replays,
        n_pairs=pool.n_pairs, n_relevant=pool.n_relevant, full_values=full,
        judged_share=out["judged_share"], relevant_found=out["relevant_found"],
        relevant_found_sd=out["relevant_found_sd"], share_for_90=share_for_90,
        metric_error=out["metric_error"], metric_error_max=out["metric_error_max"],
        kendall_tau=out["kendall_tau"], kendall_tau_sd=out["kendall_tau_sd"],
        ci_coverage=out["ci_coverage"], stop_reasons=stop_reasons, ci_width=out["ci_width"],
        ci_coverage_normal=out["ci_coverage_normal"], ci_width_normal=out["ci_width_normal"],
        params={"seed": seed, "warmup_depth": params.warmup_depth, "bandit_variant": params.bandit_variant,
                "bandit_discount": params.bandit_discount, "sample_rate": params.sample_rate, "sample_weights": params.sample_weights,
                "top_stratum_depth": params.top_stratum_depth, "depth": depth, "confidence": confidence,
                "queries": Q},
    )


def _sampled_c_at_k(designs, seq, taken, judged_at, pool: _Pool, top_safe, top_ok, q_ix, *,
                    interval: dict | None = None, confidence: float = 0.95):
    """HT C@K per (replay, run) and its standard error, with the prefix inclusion probabilities
    of each query's sequential Poisson sample (see strategies.prefix_inclusion_probabilities).
    ``interval``, if given, is filled with ``low`` and ``high`` (R, M): the interval
    estimate_metrics reports (:func:`.estimates.c_at_k_interval`), from the same settled /
    unsettled split and the design's pi of the unsettled top-K pairs."""
    R, Q, N = seq.shape
    weights, c_full = designs["weights"], designs["c"]
    n_top = designs["top"].sum(axis=1)                               # (Q,) top stratum in the order
    top = designs["top"] | pool.known                                # pi = 1
    length = (seq >= 0).sum(axis=2)                                  # (R, Q) complete sample size
    nxt = np.take_along_axis(seq, np.minimum(taken, N - 1)[:, :, None], axis=2)[:, :, 0]
    # key of the first pair not taken = u / w of that pair
    c = np.where(taken >= length, c_full[None], 0.0)
    mid = (taken < length) & (taken > n_top[None])
    if mid.any():
        r_i, q_i = np.nonzero(mid)
        p = nxt[r_i, q_i]
        u = seeded_uniform(designs["seeds"][r_i], q_i, p, _TAG_SAMPLE)
        c[r_i, q_i] = u / weights[q_i, p]
    pi = np.where(top[None], 1.0, np.minimum(1.0, c[:, :, None] * weights[None]))
    y = judged_at & pool.relevant[None]
    with np.errstate(divide="ignore", invalid="ignore"):
        yhat = np.where(y, 1.0 / pi, 0.0)
        s = np.where(y, (1.0 - pi) / pi**2, 0.0)
    yhat = np.where(pool.known[None], 1.0, yhat)
    s = np.where(pool.known[None], 0.0, s)
    zt = np.where(top_ok[None], 1.0 - yhat[:, q_ix, top_safe], 1.0)   # (R, Q, M, K)
    st = np.where(top_ok[None], s[:, q_ix, top_safe], 0.0)
    t = zt.prod(axis=3)
    var = (zt * zt).prod(axis=3) - (zt * zt - st).prod(axis=3)
    est = (1.0 - t).mean(axis=1)
    se = np.sqrt(np.maximum(var.sum(axis=1), 0.0)) / Q
    if interval is not None:
        interval["low"], interval["high"] = _c_at_k_bounds(pi, judged_at, y, pool, top_safe, top_ok, q_ix,
                                                           1.0 - t, var, confidence)
    return est, se


def _c_at_k_bounds(pi, judged_at, y, pool: _Pool, top_safe, top_ok, q_ix, value, var, confidence):
    """estimate_metrics' C@K interval, vectorised over (replay, run): settled queries (a known
    relevant or a relevant judged with pi = 1 in the top K, or no top-K pair depending on the
    sample) count exactly; the rest get the gamma widening with w = mean 1/pi of their open pairs."""
    Q = pi.shape[1]
    sure = pool.known[None] | (y & (pi >= 1.0))                            # (R, Q, N)
    open_ = (~judged_at | (pi < 1.0)) & ~pool.known[None] & pool.valid[None]
    sure_t = sure[:, q_ix, top_safe] & top_ok[None]                         # (R, Q, M, K)
    open_t = open_[:, q_ix, top_safe] & top_ok[None]
    unsettled = ~sure_t.any(axis=3) & open_t.any(axis=3)                    # (R, Q, M)
    weigh = open_t & (pi[:, q_ix, top_safe] < 1.0) & unsettled[..., None]
    # a pair with pi = 0 (the sequential sample stopped inside the top stratum) gives w = inf
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = np.where(weigh, 1.0 / pi[:, q_ix, top_safe], 0.0)
    n_w = weigh.sum(axis=(1, 3))
    weight = np.where(n_w > 0, inv.sum(axis=(1, 3)) / np.maximum(n_w, 1), 0.0)   # (R, M)
    settled = np.where(unsettled, 0.0, value).sum(axis=1)
    hits = np.where(unsettled, value, 0.0).sum(axis=1)
    hits_var = np.where(unsettled, var, 0.0).sum(axis=1)
    return c_at_k_interval(settled, hits, hits_var, weight, unsettled.sum(axis=1), Q, confidence)


CURVES_HEADER = ("strategy", "checkpoint", "judged_share", "relevant_found", "relevant_found_sd", "kendall_tau",
                 "kendall_tau_sd", "metric_error_max", "run", "measure", "full_value", "metric_error", "ci_coverage",
                 "share_for_90")
#: Columns holding figures (text from _f): a plain number such as "-0.25" in them stays a number.
CURVES_NUMERIC_COLUMNS = (1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13)


def curves_rows(result: SimulationResult) -> list[list[str]]:
    """One row per (strategy, checkpoint, run) with every curve's value, in CURVES_HEADER's order.
    Columns that do not depend on the run repeat on each run's row. The file is written by
    annotation/formats/judging_curves.py (run names come from uploads: escaped there)."""
    rows = []
    for si, strategy in enumerate(result.strategies):
        for ci, cp in enumerate(result.checkpoints):
            for ri, run in enumerate(result.runs):
                rows.append([strategy, _f(cp), _f(result.judged_share[si, ci]), _f(result.relevant_found[si, ci]),
                             _f(result.relevant_found_sd[si, ci]), _f(result.kendall_tau[si, ci]),
                             _f(result.kendall_tau_sd[si, ci]), _f(result.metric_error_max[si, ci]), run,
                             result.measure, _f(result.full_values[ri]), _f(result.metric_error[si, ci, ri]),
                             _f(result.ci_coverage[si, ci, ri]), _f(result.share_for_90[si])])
    return rows


def _f(x) -> str:
    x = float(x)
    return "" if np.isnan(x) else f"{x:.6g}"


_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


def curves_svg(result: SimulationResult) -> dict[str, str]:   # chart name -> standalone SVG text
    """relevant_found, metric_error, kendall_tau, ci_coverage.

    metric_error plots, per strategy, the mean over replays of the largest error over runs;
    ci_coverage the smallest coverage over runs (strategies without intervals are left out)."""
    x = result.checkpoints
    charts = {
        "relevant_found": ("Relevant pairs found vs judgments spent", "share of relevant pairs found",
                           {s: result.relevant_found[i] for i, s in enumerate(result.strategies)}, (0.0, 1.0)),
        "metric_error": (f"{result.measure} error (max over runs) vs judgments spent",
                         f"|{result.measure} estimate - full pool|",
                         {s: result.metric_error_max[i] for i, s in enumerate(result.strategies)}, None),
        "kendall_tau": ("Kendall's tau of the system ranking vs judgments spent", "Kendall's tau",
                        {s: result.kendall_tau[i] for i, s in enumerate(result.strategies)}, (-1.0, 1.0)),
        "ci_coverage": ("95% interval coverage (min over runs) vs judgments spent", "coverage",
                        {s: np.nanmin(result.ci_coverage[i], axis=1) if np.isfinite(result.ci_coverage[i]).any()
                         else None for i, s in enumerate(result.strategies)}, (0.0, 1.0)),
    }
    out = {}
    for name, (title, ylabel, series, yrange) in charts.items():
        series = {k: v for k, v in series.items() if v is not None}
        out[name] = line_chart_svg(title, "share of the pool's judgments", ylabel, x, series, yrange=yrange)
    return out


def line_chart_svg(title: str, xlabel: str, ylabel: str, x: np.ndarray, series: Mapping[str, np.ndarray],
                   *, yrange: tuple[float, float] | None = None, width: int = 640, height: int = 400) -> str:
    """A standalone SVG line chart (axes, gridlines, legend, one polyline per series; NaN points
    are skipped). Plain SVG text, no plotting library."""
    from xml.sax.saxutils import escape

    e = lambda s: escape(str(s), {'"': "&quot;"})  # noqa: E731
    ml, mr, mt, mb = 64, 24, 44, 52
    pw, ph = width - ml - mr, height - mt - mb
    # The legend goes in rows under the plot, so the plot keeps the width (a phone scales the
    # chart down: a legend column beside it left the plot half as wide and cut long names).
    # Names are placed at a generous 7.5 px per character of the 12 px font.
    legend_at, row, x_at = [], 0, float(ml)
    for name in series:
        item = 26 + 7.5 * len(str(name)) + 18
        if x_at > ml and x_at + item > width - mr:
            row, x_at = row + 1, float(ml)
        legend_at.append((x_at, height + 6 + 18 * row))
        x_at += item
    full_height = height + (18 * (row + 1) + 8 if legend_at else 0)
    values = np.concatenate([np.asarray(v, float) for v in series.values()]) if series else np.zeros(1)
    values = values[np.isfinite(values)]
    if yrange is None:
        hi = float(values.max()) if values.size else 1.0
        yrange = (0.0, hi * 1.1 if hi > 0 else 1.0)
    y0, y1 = yrange
    x0, x1 = 0.0, float(max(1.0, np.max(x) if len(x) else 1.0))
    sx = lambda v: ml + pw * (v - x0) / (x1 - x0)  # noqa: E731
    sy = lambda v: mt + ph * (1 - (min(max(v, y0), y1) - y0) / (y1 - y0))  # noqa: E731
    parts = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{full_height:g}" '
             f'viewBox="0 0 {width} {full_height:g}" font-family="Helvetica, Arial, sans-serif" font-size="12" '
             f'role="img" aria-label="{e(title)}">',
             f"<title>{e(title)}</title>",
             f'<rect x="0" y="0" width="{width}" height="{full_height:g}" fill="#ffffff"/>',
             f'<text x="{ml + pw / 2:.1f}" y="24" text-anchor="middle" font-size="14" font-weight="bold">{e(title)}</text>']
    for i in range(6):
        yv = y0 + (y1 - y0) * i / 5
        parts.append(f'<line x1="{ml}" y1="{sy(yv):.1f}" x2="{ml + pw}" y2="{sy(yv):.1f}" stroke="#dddddd"/>')
        parts.append(f'<text x="{ml - 6}" y="{sy(yv) + 4:.1f}" text-anchor="end">{yv:.2f}</text>')
        xv = x0 + (x1 - x0) * i / 5
        parts.append(f'<text x="{sx(xv):.1f}" y="{mt + ph + 18}" text-anchor="middle">{xv:.1f}</text>')
    parts.append(f'<line x1="{ml}" y1="{mt}" x2="{ml}" y2="{mt + ph}" stroke="#333333"/>')
    parts.append(f'<line x1="{ml}" y1="{mt + ph}" x2="{ml + pw}" y2="{mt + ph}" stroke="#333333"/>')
    parts.append(f'<text x="{ml + pw / 2:.1f}" y="{height - 12}" text-anchor="middle">{e(xlabel)}</text>')
    parts.append(f'<text transform="translate(16 {mt + ph / 2:.1f}) rotate(-90)" text-anchor="middle">{e(ylabel)}</text>')
    for i, (name, ys) in enumerate(series.items()):
        colour = _COLOURS[i % len(_COLOURS)]
        pts = [(sx(float(a)), sy(float(b))) for a, b in zip(x, np.asarray(ys, float)) if np.isfinite(b)]
        if pts:
            parts.append(f'<polyline class="series" data-name="{e(name)}" fill="none" stroke="{colour}" '
                         f'stroke-width="2" points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in pts)}"/>')
            for a, b in pts:
                parts.append(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="2.5" fill="{colour}"/>')
        lx, ly = legend_at[i]
        parts.append(f'<line x1="{lx:.1f}" y1="{ly - 4}" x2="{lx + 20:.1f}" y2="{ly - 4}" '
                     f'stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<text class="legend" x="{lx + 26:.1f}" y="{ly}">{e(name)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
