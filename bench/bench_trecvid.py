"""Benchmark: a TRECVID-sized sampled pool built and scored in PostgreSQL.

4 runs x 30 queries x 1,000 deep (the size of a TRECVID AVS submission), the synthetic, seeded
collection of bench_trecvid_analysis.py (5,000 shots; each run scores shots as
``quality * relevant + N(0, 1)``). The runs are written as TREC run files and loaded through the run
import service (120,000 predictions), the sampled pool is built by the pool service (ranks 1-10
all, 11-100 at 20%, 101-1000 at 5%), the sampled pairs are resolved from the synthetic truth (one
UPDATE standing in for the raters), and every run is scored by the infAP report service. The
stored xinfAP is checked against annotation.analysis.infap on the same sample, and the true AP
(whole pool judged) is printed alongside. Goal: building the pool and scoring all runs under 30 s.

    .venv/bin/python bench/bench_trecvid.py
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from _setup import django_for_bench, peak_rss_mb
from bench_trecvid_analysis import COLLECTION, DEPTH, N_QUERIES, N_RUNS, SEED, STRATA, synthetic

DATASET = "bench-trecvid-avs"


def write_inputs(folder: Path, runs: dict[str, dict[str, list[str]]]) -> tuple[Path, list[Path]]:
    manifest = folder / "avs.jsonl"
    with manifest.open("w") as out:
        for i in range(COLLECTION):
            out.write(json.dumps({"kind": "clip", "id": f"shot{i:05d}", "video_id": f"video{i // 10:04d}"}) + "\n")
        for query in next(iter(runs.values())):
            out.write(json.dumps({"kind": "caption", "id": query, "text": f"topic {query}"}) + "\n")
    files = []
    for name, ranking in runs.items():
        path = folder / f"{name}.trec"
        with path.open("w") as out:
            for query, shots in ranking.items():
                out.writelines(f"{query} Q0 {shot} {rank} {1 - rank / (DEPTH + 1):.6f} {name}\n"
                               for rank, shot in enumerate(shots, start=1))
        files.append(path)
    return manifest, files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=None, help="default: $DATABASE_URL, else rejudge_bench_trecvid_<pid>, made for this run and dropped after it")
    args = parser.parse_args()
    django_for_bench(args.database_url, "rejudge_bench_trecvid")

    from django.db import connection

    from annotation.analysis.infap import exact_ap, xinfap
    from annotation.analysis.sampled_pools import build_sampled_pool
    from annotation.models import Dataset, PooledPair
    from annotation.services.datasets.imports import dataset_import
    from annotation.services.reports.kinds.infap import infap_report_create
    from annotation.services.datasets.runs import run_import
    from annotation.services.pools.sampled import sampled_pool_create

    Dataset.objects.filter(name=DATASET).delete()
    runs, truth = synthetic()
    print(f"PostgreSQL: {connection.settings_dict['NAME']}; {N_RUNS} runs x {N_QUERIES} queries x {DEPTH} deep, "
          f"{COLLECTION:,} shots, strata {STRATA}, seed {SEED}")
    with tempfile.TemporaryDirectory() as tmp:
        manifest, files = write_inputs(Path(tmp), runs)
        t = time.perf_counter()
        dataset = dataset_import(path=manifest, name=DATASET)
        t_dataset = time.perf_counter() - t
        t = time.perf_counter()
        imported = [run_import(dataset=dataset, path=path).run for path in files]
        t_import = time.perf_counter() - t
    predictions = sum(run.prediction_count for run in imported)
    assert predictions == N_RUNS * N_QUERIES * DEPTH

    t = time.perf_counter()
    pool = sampled_pool_create(dataset=dataset, name="avs-sampled", runs=imported, strata=[list(s) for s in STRATA],
                               seed=SEED, redundancy=0.1)
    t_build = time.perf_counter() - t
    design = pool.sampled_design

    # The raters' part, simulated: every sampled pair resolved from the synthetic truth.
    t = time.perf_counter()
    pairs = PooledPair.objects.filter(pool=pool).values_list("pk", "caption__external_id", "clip__external_id")
    relevant = [pk for pk, query, shot in pairs if shot in truth[query]]
    PooledPair.objects.filter(pool=pool).update(state=PooledPair.State.RESOLVED, resolved_label=PooledPair.Answer.NOT_RELEVANT,
                                                available=False)
    PooledPair.objects.filter(pk__in=relevant).update(resolved_label=PooledPair.Answer.RELEVANT)
    t_judge = time.perf_counter() - t

    t = time.perf_counter()
    report = infap_report_create(pool=pool)
    t_score = time.perf_counter() - t

    # Cross-checks: the same sample and estimator outside the database, and the AP it estimates.
    sample = build_sampled_pool(runs, STRATA, seed=SEED)
    judgments = {q: {d: int(d in truth[q]) for d in docs} for q, docs in sample.to_judge().items()}
    qrels = sample.stratified_qrels(judgments)
    full_qrels = {q: {d: int(d in truth[q]) for d in p.docs} for q, p in sample.queries.items()}
    queued = {(query, shot) for _, query, shot in pairs}
    same_sample = queued == {(q, d) for q, docs in sample.to_judge().items() for d in docs}
    rows = {row["run"]: row for row in report.result["runs"]}
    worst = max(abs(rows[name]["mean"]["xinfAP"] - xinfap(run, qrels).mean) for name, run in runs.items())

    judged = report.result["judgments"]
    print(f"pool: {design.full_pool_size:,} pooled pairs at full depth, {design.sampled_count:,} sampled and queued, "
          f"{design.judgments_saved:,} judgments saved ({100 * judged['saved_fraction']:.1f}%); "
          f"same pairs as the analysis code samples: {same_sample}")
    for s in report.result["strata"]:
        print(f"  ranks {s['lo']:>4}-{s['hi']:<4} rate {s['rate']:.2f}: {s['pooled']:>6,} pooled, {s['sampled']:>5,} sampled, "
              f"{s['relevant']:>4} relevant")
    print(f"{'run':<6} {'true MAP':>9} {'xinfAP':>8}")
    for name, run in runs.items():
        true_map = float(np.mean(list(exact_ap(run, full_qrels).values())))
        print(f"{name:<6} {true_map:>9.4f} {rows[name]['mean']['xinfAP']:>8.4f}")
    print(f"largest difference from annotation.analysis.infap.xinfap: {worst:.2e}")
    print("wall times (s):")
    print(f"  dataset import ({COLLECTION:,} clips)        {t_dataset:7.2f}")
    print(f"  run import ({predictions:,} predictions)  {t_import:7.2f}")
    print(f"  sampled pool build                   {t_build:7.2f}")
    print(f"  simulated judging (2 UPDATEs)        {t_judge:7.2f}")
    print(f"  infAP report, all runs               {t_score:7.2f}")
    print(f"  build + score                        {t_build + t_score:7.2f}  (goal < 30 s)")
    print(f"  import + build + score               {t_import + t_build + t_score:7.2f}")
    print(f"peak RSS of this process: {peak_rss_mb():.0f} MB")
    Dataset.objects.filter(name=DATASET).delete()


if __name__ == "__main__":
    main()
