"""Proxy jobs and the ranking-task queue at realistic scale, on PostgreSQL.

    .venv/bin/python bench/bench_proxy_jobs.py [--youcook2 PATH] [--clips 100] [--raters 20]
        [--matrices bow pos syn] [--mode modern]

Imports the YouCook2 validation split (3,492 segments = clips, one caption each) and prints:
  * the time to build a five-caption ranking study with all four proxies for --clips sampled
    clips (only those clips' rows are computed, METEOR included; goal: under a minute);
  * the time and file size of each full clips x captions matrix job in --matrices (METEOR's full
    matrix takes minutes, so it is left out unless asked for);
  * p50/p95 of "next task + submit ordering" through the services while --raters threads work
    the study until every task has its orderings, and a check that each task got exactly
    raters_per_task orderings from distinct raters.
"""
from __future__ import annotations

import argparse
import statistics
import threading
import time
from pathlib import Path

from _setup import REPO, django_for_bench, peak_rss_mb

# The repository's excerpt (5 videos, 35 segments) unless --youcook2 names the full validation file.
DEFAULT_YOUCOOK2 = REPO / "tests" / "fixtures" / "youcook2_val_excerpt.json"


def import_youcook2(path: Path):
    from annotation.models import Dataset
    from annotation.services.datasets.imports import dataset_import

    Dataset.objects.filter(name="bench-proxies-yc2").delete()
    return dataset_import(path=path, name="bench-proxies-yc2", fmt="youcook2-json")


def bench_study(dataset, clips: int, mode: str):
    from annotation.services.ranking.study import ranking_study_create

    t0 = time.perf_counter()
    study = ranking_study_create(dataset=dataset, name="bench", proxies=["bow", "pos", "syn", "met"], n_clips=clips,
                                 mode=mode)
    print(f"study: {study.tasks.count()} tasks ({clips} clips x 4 proxies) built in {time.perf_counter() - t0:.1f} s")
    return study


def bench_matrices(dataset, proxies: list[str], mode: str) -> None:
    from annotation.services.proxies.matrices import proxy_matrices_compute

    for proxy in proxies:
        t0 = time.perf_counter()
        (artefact,) = proxy_matrices_compute(dataset=dataset, proxies=[proxy], mode=mode)
        rows, cols = artefact.params["shape"]
        print(f"matrix {proxy}: {rows:,} x {cols:,} in {time.perf_counter() - t0:.1f} s, "
              f"{artefact.size / 1e6:.1f} MB compressed")


def bench_queue(study, n_raters: int) -> None:
    from django.db import connections

    from annotation.models import RankingSubmission, RankingTask
    from annotation.selectors.ranking import ranking_task_display
    from annotation.services.ranking.leases import ranking_lease_next
    from annotation.services.ranking.study import ranking_memberships_grant
    from annotation.services.ranking.submissions import ranking_submission_create
    from annotation.services.accounts.raters import rater_create

    raters = [rater_create(username=f"bench-ranker-{study.pk}-{k}") for k in range(n_raters)]
    ranking_memberships_grant(study=study, users=raters)
    latencies: list[float] = []
    errors: list[str] = []

    def work(rater) -> None:
        try:
            while True:
                t0 = time.perf_counter()
                lease = ranking_lease_next(study=study, rater=rater).lease
                if lease is None:
                    return
                order = [c["id"] for c in ranking_task_display(task=lease.task, rater=rater)]
                ranking_submission_create(rater=rater, client_id=f"b{lease.pk}", lease=lease.token, order=order)
                latencies.append(time.perf_counter() - t0)
        except Exception as exc:  # noqa: BLE001 - printed below
            errors.append(repr(exc))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(r,)) for r in raters]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    ms = sorted(x * 1000 for x in latencies)
    print(f"queue: {len(ms)} orderings by {n_raters} raters in {wall:.1f} s; next+submit p50 "
          f"{statistics.median(ms):.1f} ms, p95 {ms[int(0.95 * (len(ms) - 1))]:.1f} ms; errors: {errors[:3] or 'none'}")
    per_task = RankingSubmission.objects.filter(task__study=study, counted=True).values_list("task_id", "rater_id")
    by_task: dict[int, set] = {}
    for task_id, rater_id in per_task:
        by_task.setdefault(task_id, set()).add(rater_id)
    tasks = RankingTask.objects.filter(study=study).count()
    exact = sum(len(r) == study.raters_per_task for r in by_task.values())
    print(f"queue check: {exact} of {tasks} tasks have exactly {study.raters_per_task} orderings from distinct raters")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--youcook2", type=Path, default=DEFAULT_YOUCOOK2)
    parser.add_argument("--clips", type=int, default=None,
                        help="clips of the study (default 100, or every clip of a smaller file)")
    parser.add_argument("--raters", type=int, default=20)
    parser.add_argument("--matrices", nargs="*", default=["bow", "pos", "syn"], choices=["bow", "pos", "syn", "met"])
    parser.add_argument("--mode", choices=["paper", "modern"], default="modern")
    parser.add_argument("--database-url")
    args = parser.parse_args()
    django_for_bench(args.database_url)

    t0 = time.perf_counter()
    dataset = import_youcook2(args.youcook2)
    print(f"imported {dataset.clips.count():,} clips, {dataset.captions.count():,} captions "
          f"in {time.perf_counter() - t0:.1f} s")
    study = bench_study(dataset, args.clips or min(100, dataset.clips.count()), args.mode)
    bench_matrices(dataset, args.matrices, args.mode)
    bench_queue(study, args.raters)
    print(f"peak RSS {peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
