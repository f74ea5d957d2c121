"""Benchmark: a TRECVID-sized sampled pool and both infAP estimators (analysis part only).

4 runs x 30 queries x 1,000 deep (the size of a TRECVID AVS submission), synthetic and seeded:
every query has a random set of relevant shots in a 5,000-shot collection and each run scores
shots as ``quality * relevant + N(0, 1)``. The script builds the stratified pool
(ranks 1-10 all, 11-100 at 20%, 101-1000 at 5%), "judges" the sample from the synthetic truth,
and scores every run with xinfAP (NumPy, stratified) and trec_eval's infAP (ir_measures, which
assumes a uniform sample). The true AP (whole pool judged) is printed alongside so the estimates
can be eyeballed. Goal: under 30 s in total. The database part is added separately.

Run: ``.venv/bin/python bench/bench_trecvid_analysis.py``
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotation.analysis.infap import exact_ap, infap_trec_eval_runs, xinfap_runs  # noqa: E402
from annotation.analysis.sampled_pools import build_sampled_pool  # noqa: E402

N_RUNS, N_QUERIES, DEPTH, COLLECTION = 4, 30, 1000, 5000
STRATA = [(1, 10, 1.0), (11, 100, 0.2), (101, 1000, 0.05)]
QUALITIES = (0.6, 1.0, 1.5, 2.5)
SEED = 2024


def synthetic(seed: int = SEED):
    rng = np.random.default_rng(seed)
    shots = np.array([f"shot{i:05d}" for i in range(COLLECTION)])
    runs: dict[str, dict[str, list[str]]] = {f"run{r}": {} for r in range(N_RUNS)}
    truth: dict[str, set[str]] = {}
    for qi in range(N_QUERIES):
        q = str(1701 + qi)
        rel = np.zeros(COLLECTION, dtype=bool)
        rel[rng.choice(COLLECTION, int(rng.integers(30, 400)), replace=False)] = True
        truth[q] = set(shots[rel])
        for r, quality in enumerate(QUALITIES):
            score = quality * rel + rng.normal(size=COLLECTION)
            runs[f"run{r}"][q] = shots[np.argsort(-score)[:DEPTH]].tolist()
    return runs, truth


def main() -> None:
    t_all = time.perf_counter()
    t = time.perf_counter()
    runs, truth = synthetic()
    t_gen = time.perf_counter() - t

    t = time.perf_counter()
    pool = build_sampled_pool(runs, STRATA, seed=SEED)
    t_pool = time.perf_counter() - t

    t = time.perf_counter()
    judgments = {q: {d: int(d in truth[q]) for d in docs} for q, docs in pool.to_judge().items()}
    strat_qrels = pool.stratified_qrels(judgments)
    flat_qrels = pool.trec_qrels(judgments)
    t_qrels = time.perf_counter() - t

    t = time.perf_counter()
    x = xinfap_runs(runs, strat_qrels)
    t_x = time.perf_counter() - t

    t = time.perf_counter()
    a = infap_trec_eval_runs(runs, flat_qrels)
    t_a = time.perf_counter() - t

    # Reference only: AP with the whole depth-1000 pool judged (what the estimators estimate).
    full_qrels = {q: {d: int(d in truth[q]) for d in p.docs} for q, p in pool.queries.items()}
    true_map = {name: float(np.mean(list(exact_ap(run, full_qrels).values())))
                for name, run in runs.items()}
    total = time.perf_counter() - t_all

    print(f"{N_RUNS} runs x {N_QUERIES} queries x {DEPTH} deep, strata {STRATA}, seed {SEED}")
    print(f"pool: {pool.full_pool_size} pooled pairs at full depth, {pool.judged_count} judged, "
          f"{pool.judgments_saved} saved ({100 * pool.saved_fraction:.1f}%)")
    for row in pool.stratum_summary():
        print(f"  ranks {row['lo']:>4}-{row['hi']:<4} rate {row['rate']:.2f}: "
              f"{row['pooled']:>6} pooled, {row['judged']:>5} judged "
              f"(realized {row['realized_rate']:.3f})")
    print(f"{'run':<6} {'true MAP':>9} {'xinfAP':>8} {'infAP(trec_eval)':>17}")
    for name in runs:
        print(f"{name:<6} {true_map[name]:>9.4f} {x[name].mean:>8.4f} {a[name].mean:>17.4f}")
    print("wall times (s):")
    print(f"  synthetic runs      {t_gen:7.3f}")
    print(f"  pool + sampling     {t_pool:7.3f}")
    print(f"  qrels from labels   {t_qrels:7.3f}")
    print(f"  xinfAP, all runs    {t_x:7.3f}")
    print(f"  infAP (trec_eval)   {t_a:7.3f}")
    print(f"  total               {total:7.3f}  (goal < 30 s)")


if __name__ == "__main__":
    main()
