"""Benchmark: a TRECVID-scale stored judgment set, imported and scored like sample_eval.pl.

The case of issue 13: a 1,000,000-shot collection, 20 topics, a 125,000-line stratified qrels file
(sample_eval's `topic 0 shot stratum rel`) and 4 runs x 20 topics x 1,000 shots. Everything is
synthetic and seeded: per topic 6,250 pooled shots in three strata (250 all judged, 2,000 at 30%,
4,000 at 10%; -1 for the rest), relevance falling from stratum to stratum; each run ranks 1,000
shots, most from the pool, scored `quality * relevant + noise`.

Timed, through the services the commands use:
  1. the dataset (1,000,000 clips, 20 topics) imported from a manifest;
  2. the qrels imported as a stored judgment set (checked, joined, verdict rows written, file kept);
  3. the 4 run files imported as stored runs;
  4. `evaluate --dataset --judgment-set --run ...` with sample_eval's measures (infAP, infNDCG,
     iP..., inum_rel ...) under TRECVID conventions, for the 4 stored runs.
Goal (issue 13): steps 1-4 under 60 s and 1 GB. Also checks that the stored set's numbers equal
scoring the files directly.

    .venv/bin/python bench/bench_trecvid_judgments.py
    (--shots 100000 for a quick run; --keep to leave the data in the database)
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from io import StringIO
from pathlib import Path

import numpy as np
from _setup import django_for_bench, peak_rss_mb

DATASET = "bench-trecvid-judgments"
TOPICS, RUNS, DEPTH, SEED = 20, 4, 1000, 2016
# (pooled shots per topic, judged fraction, probability a judged shot is relevant)
STRATA = ((250, 1.0, 0.4), (2000, 0.3, 0.12), (4000, 0.1, 0.03))


def write_inputs(folder: Path, shots: int) -> tuple[Path, Path, list[Path]]:
    rng = np.random.default_rng(SEED)
    manifest = folder / "collection.jsonl"
    with manifest.open("w") as out:
        out.writelines(f'{{"kind": "clip", "id": "shot{i:07d}", "video_id": "v{i // 20:06d}"}}\n' for i in range(shots))
        out.writelines(f'{{"kind": "caption", "id": "{1001 + t}", "text": "topic {1001 + t}"}}\n' for t in range(TOPICS))
    qrels = folder / "avs.sample_eval.qrels"
    pool_size = sum(n for n, _, _ in STRATA)
    truth: dict[int, dict[int, int]] = {}
    with qrels.open("w") as out:
        for t in range(TOPICS):
            topic = 1001 + t
            pooled = rng.choice(shots, size=pool_size, replace=False)
            truth[topic] = {}
            start = 0
            for stratum, (n, judged, p_rel) in enumerate(STRATA, start=1):
                for shot in pooled[start:start + n]:
                    relevant = int(rng.random() < p_rel)
                    truth[topic][int(shot)] = relevant
                    rel = relevant if rng.random() < judged else -1
                    out.write(f"{topic} 0 shot{shot:07d} {stratum} {rel}\n")
                start += n
    runs = []
    for r in range(RUNS):
        quality = 1.5 + r * 0.5
        path = folder / f"run{r + 1}.txt"
        with path.open("w") as out:
            for topic, judged in truth.items():
                pooled = np.fromiter(judged, dtype=np.int64)
                inside = rng.choice(pooled, size=int(DEPTH * 0.9), replace=False)
                outside = rng.choice(shots, size=DEPTH - len(inside), replace=False)
                candidates = np.unique(np.concatenate([inside, outside]))[:DEPTH]
                rel = np.array([judged.get(int(s), 0) for s in candidates])
                score = quality * rel + rng.normal(size=len(candidates))
                for rank, i in enumerate(np.argsort(-score), start=1):
                    out.write(f"{topic} Q0 shot{candidates[i]:07d} {rank} {score[i]:.6f} run{r + 1}\n")
        runs.append(path)
    return manifest, qrels, runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=None, help="default: $DATABASE_URL, else rejudge_bench_judgments_<pid>, made for this run and dropped after it")
    parser.add_argument("--shots", type=int, default=1_000_000, help="collection size (default 1,000,000)")
    parser.add_argument("--keep", action="store_true", help="leave the dataset in the database")
    args = parser.parse_args()
    django_for_bench(args.database_url, "rejudge_bench_judgments")

    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    from annotation.models import Dataset
    from annotation.services.datasets.imports import dataset_import
    from annotation.services.judgment_sets.imports import judgments_import
    from annotation.services.datasets.runs import run_import

    Dataset.objects.filter(name=DATASET).delete()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        settings.JUDGMENTS_ROOT = folder / "judgments"
        t = time.perf_counter()
        manifest, qrels, run_files = write_inputs(folder, args.shots)
        t_write = time.perf_counter() - t
        lines = sum(1 for _ in qrels.open())
        print(f"PostgreSQL: {connection.settings_dict['NAME']}; {args.shots:,} shots, {TOPICS} topics, "
              f"{lines:,} qrels lines, {RUNS} runs x {TOPICS} topics x {DEPTH}; inputs written in {t_write:.1f} s")

        times = {}
        t = time.perf_counter()
        dataset = dataset_import(path=manifest, name=DATASET)
        times["dataset import"] = time.perf_counter() - t
        t = time.perf_counter()
        judgment_set = judgments_import(dataset=dataset, path=qrels, name="avs").judgment_set
        times["judgments import"] = time.perf_counter() - t
        t = time.perf_counter()
        runs = [run_import(dataset=dataset, path=path, name=path.stem).run for path in run_files]
        times["run import"] = time.perf_counter() - t
        t = time.perf_counter()
        out = StringIO()
        call_command("evaluate", "--dataset", DATASET, "--judgment-set", "avs", *sum((["--run", r.name] for r in runs), []),
                     "--output", "json", stdout=out, stderr=StringIO())
        times["evaluate (4 stored runs)"] = time.perf_counter() - t

        stored = [json.loads(line) for line in out.getvalue().splitlines()]
        direct = StringIO()
        call_command("evaluate", *map(str, run_files), "--judgments", str(qrels), "--judgments-format", "sample_eval",
                     "--output", "json", stdout=direct, stderr=StringIO())
        files = [json.loads(line) for line in direct.getvalue().splitlines()]
        same = all(a["measures"] == b["measures"] and a["per_query"] == b["per_query"] for a, b in zip(stored, files))

        print(f"judgment set: {judgment_set.counts}")
        print(f"{'run':<6} {'infAP':>8} {'infNDCG':>8} {'iP10':>8} {'inum_rel':>9}")
        for entry in stored:
            m = entry["measures"]
            print(f"{entry['run']:<6} {m['infAP']:>8.4f} {m['infNDCG']:>8.4f} {m['iP10']:>8.4f} {m['inum_rel']:>9.1f}")
        print(f"stored set and stored runs score exactly as the files: {same}")
        print("wall times (s):")
        for name, seconds in times.items():
            print(f"  {name:<28} {seconds:7.2f}")
        print(f"  {'total':<28} {sum(times.values()):7.2f}  (goal < 60 s)")
        print(f"peak RSS of this process: {peak_rss_mb():.0f} MB  (goal < 1,024 MB)")
    if not args.keep:
        Dataset.objects.filter(name=DATASET).delete()


if __name__ == "__main__":
    main()
