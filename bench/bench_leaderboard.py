"""Timing of the corrected leaderboard's computations at FIRE scale (synthetic data, no Django,
no database): per run, C@1/5/10, AP and nDCG@10 per query against original and corrected qrels
(ir_measures over pytrec_eval, the `evaluate` code path) and the percentile bootstrap of all ten
series from one set of resamples; then the leaderboard, its CSV rows and its SVG.

Default: 27,000 captions (FIRE's MSVD scale: ~20 pooled pairs each, ~550,000 pairs), 3 runs of
depth 20, B = 1000.

    .venv/bin/python bench/bench_leaderboard.py [--captions N] [--runs R] [--replicates B]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotation.analysis.leaderboard import (build_leaderboard, clip_measure_names, clip_per_query,  # noqa: E402
                                             leaderboard_csv_rows, leaderboard_svg, run_cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--captions", type=int, default=27_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--depth", type=int, default=20)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    n = args.captions
    measures = clip_measure_names([1, 5, 10])
    original = {q: {int(rng.integers(n)): 1} for q in range(n)}
    corrected = {q: {**{int(c): int(rng.random() < 0.3) for c in rng.integers(0, n, 20)}, **original[q]}
                 for q in range(n)}
    cells, measure_s, bootstrap_s = [], 0.0, 0.0
    for r in range(args.runs):
        ranked = {q: [int(c) for c in rng.integers(0, n, args.depth)] for q in range(n)}
        queries = sorted(ranked)
        t0 = time.perf_counter()
        values = {"original": clip_per_query(ranked, original, queries, measures),
                  "corrected": clip_per_query(ranked, corrected, queries, measures)}
        t1 = time.perf_counter()
        sides = run_cells(values, replicates=args.replicates, seed=0, confidence=0.95)
        t2 = time.perf_counter()
        measure_s, bootstrap_s = measure_s + t1 - t0, bootstrap_s + t2 - t1
        cells.append({"run": f"run{r}", "run_id": r, **sides})
        print(f"run {r}: measures {t1 - t0:.2f} s, bootstrap {t2 - t1:.2f} s", flush=True)
    t0 = time.perf_counter()
    board = build_leaderboard(measures=measures, runs=cells, interval="bench")
    rows, svg = leaderboard_csv_rows(board), leaderboard_svg(board)
    t1 = time.perf_counter()
    print(f"{n:,} captions x {args.runs} runs, B = {args.replicates}: measures {measure_s:.1f} s, bootstrap "
          f"{bootstrap_s:.1f} s, leaderboard + CSV ({len(rows) - 1} rows) + SVG ({len(svg):,} bytes) {t1 - t0:.2f} s")


if __name__ == "__main__":
    main()
