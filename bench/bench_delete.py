"""Benchmark (issue 40, items 2 and 3): deleting a TRECVID-scale dataset, and importing the same
runs against a small and a large collection.

Inputs are bench_trecvid_judgments.py's synthetic, seeded TRECVID case: a collection of --shots
shots (1,000,000) with 20 topics, its 125,000-line stratified qrels, and four 20 x 1,000 run files.
The four run files are written for a --small collection (100,000 shots), so the very same files
name shots that both collections hold.

1. **Run imports against both collections.** The four files are imported through the run import
   service into the small collection and into the large one, in turn, --rounds times (A, B, A, B
   ...: a load that changes meanwhile touches both alike), the runs deleted again between rounds.
   Printed: each side's median time, and the ratio large / small per round and of the medians.
   Goal: <= 1.2 (it was 2.5 when an import read every clip id of the collection).
2. **The delete.** The large collection, with the four runs and the judgment set imported, is
   deleted through the `delete_dataset` operation, as the API's DELETE and the admin's delete run
   it, in a process of its own so that its peak memory is the delete's. Printed: its wall time
   (the job's whole transaction, commit included), the peak RSS of that process, and the rows it
   deleted. Goal: under 20 s and 200 MB (Django's collector took 127.6 s and 661 MB).

Planner statistics are refreshed after the loads (ANALYZE), as autovacuum does within a minute of
them. Nothing is asserted: the figures are printed.

    .venv/bin/python bench/bench_delete.py [--shots 1000000] [--small 100000] [--rounds 3]
        [--database-url URL] [--data DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _setup import REPO, django_for_bench, peak_rss_mb

BIG, SMALL = "bench-delete-large", "bench-delete-small"


def _analyze() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def _import_runs(dataset, files: list[Path]) -> float:
    from annotation.services.datasets.runs import run_import

    t = time.perf_counter()
    for path in files:
        run_import(dataset=dataset, path=path, name=path.stem)
    return time.perf_counter() - t


def _runs_remove(dataset) -> None:
    from annotation.models import Run

    Run.objects.filter(dataset=dataset).delete()  # their predictions: one statement per run


def _django_only(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    sys.path.insert(0, str(REPO))
    import django

    django.setup()


def _high_water_mb() -> float:
    """This process's peak resident memory (VmHWM). Not getrusage's ru_maxrss, which Linux carries
    over from the parent across fork and exec: it would report the parent's peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return peak_rss_mb()


def delete_step(dataset_id: int) -> None:
    """In a process of its own (--step): the delete job, timed, with this process's peak RSS."""
    from django.db import connection

    from annotation.models import Dataset
    from annotation.services.datasets.operations import DATASET_DELETE
    from annotation.services.operations.start import operation_run_here

    with connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        superuser = bool(cursor.fetchone()[0])
    rss_before = _high_water_mb()
    t = time.perf_counter()
    job = operation_run_here(DATASET_DELETE, target=Dataset.objects.get(pk=dataset_id))
    seconds = time.perf_counter() - t
    print(json.dumps({"seconds": seconds, "peak_rss_mb": _high_water_mb(), "rss_before_mb": rss_before,
                      "status": job.status, "message": job.message, "result": job.result,
                      "superuser": superuser}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=None,
                        help="default: $DATABASE_URL, else rejudge_bench_delete_<pid>, made for this run and dropped after it")
    parser.add_argument("--shots", type=int, default=1_000_000, help="the large collection (default 1,000,000)")
    parser.add_argument("--small", type=int, default=100_000, help="the small collection (default 100,000)")
    parser.add_argument("--rounds", type=int, default=3, help="run imports into each collection, in turn")
    parser.add_argument("--data", type=Path, default=None,
                        help="folder for the generated input files (default: a temporary one, removed after)")
    parser.add_argument("--step", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step is not None:
        _django_only(args.database_url)  # no migrate: this process's peak memory is the delete's
        delete_step(args.step)
        return
    django_for_bench(args.database_url, "rejudge_bench_delete")

    from django.conf import settings
    from django.db import connection

    from annotation.models import Dataset
    from annotation.services.datasets.imports import dataset_import
    from annotation.services.judgment_sets.imports import judgments_import
    from bench_trecvid_judgments import write_inputs

    Dataset.objects.filter(name__in=[BIG, SMALL]).delete()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.data or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        settings.JUDGMENTS_ROOT = folder / "judgments"
        (folder / "small").mkdir(exist_ok=True)
        (folder / "large").mkdir(exist_ok=True)
        manifest_small, _, run_files = write_inputs(folder / "small", args.small)
        manifest_big, qrels_big, _ = write_inputs(folder / "large", args.shots)
        lines = sum(1 for path in run_files for _ in path.open())
        print(f"PostgreSQL: {connection.settings_dict['NAME']}; collections of {args.small:,} and {args.shots:,} "
              f"shots, 4 run files of 20 x 1,000 naming shots both hold")
        t = time.perf_counter()
        small = dataset_import(path=manifest_small, name=SMALL)
        big = dataset_import(path=manifest_big, name=BIG)
        print(f"collections imported in {time.perf_counter() - t:.1f} s")
        _analyze()

        times: dict[str, list[float]] = {SMALL: [], BIG: []}
        for _ in range(args.rounds):
            for dataset in (small, big):
                times[dataset.name].append(_import_runs(dataset, run_files))
                _runs_remove(dataset)
        ratios = [b / s for s, b in zip(times[SMALL], times[BIG])]

        judgments_import(dataset=big, path=qrels_big, name="avs")
        _import_runs(big, run_files)
        _analyze()
        counts = {"clips": big.clips.count(), "predictions": sum(r.prediction_count for r in big.runs.all()),
                  "judgments": big.judgment_sets.get().judgments.count()}
        step = subprocess.run([sys.executable, __file__, "--step", str(big.pk), "--database-url",
                               os.environ["DATABASE_URL"]], capture_output=True, text=True, check=True)
        deleted = json.loads(step.stdout.strip().splitlines()[-1])
    Dataset.objects.filter(name=SMALL).delete()

    print(f"\nrun import, the same 4 files ({lines:,} lines), seconds per round:")
    print(f"  {args.small:>9,} shots: " + "  ".join(f"{s:6.2f}" for s in times[SMALL]) +
          f"   median {statistics.median(times[SMALL]):.2f}")
    print(f"  {args.shots:>9,} shots: " + "  ".join(f"{s:6.2f}" for s in times[BIG]) +
          f"   median {statistics.median(times[BIG]):.2f}")
    print(f"  ratio large/small per round: " + "  ".join(f"{r:.2f}" for r in ratios) +
          f"; of the medians {statistics.median(times[BIG]) / statistics.median(times[SMALL]):.2f}, "
          f"of the fastest {min(times[BIG]) / min(times[SMALL]):.2f}  (goal <= 1.2)")
    print(f"  load average (1 min) at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"\ndataset delete ({counts['clips']:,} clips, {counts['predictions']:,} predictions, "
          f"{counts['judgments']:,} judgments; job {deleted['status']}):")
    print(f"  wall time, commit included: {deleted['seconds']:.2f} s  (goal < 20 s)")
    print(f"  peak RSS of the deleting process: {deleted['peak_rss_mb']:.0f} MB  (goal < 200 MB; "
          f"{deleted['rss_before_mb']:.0f} MB of it there before the delete started: Django and the project loaded)")
    print(f"  per-row reference checks switched off (a superuser connection): {deleted['superuser']}")
    print(f"  rows deleted: {json.dumps((deleted['result'] or {}).get('deleted'))}")


if __name__ == "__main__":
    main()
