"""Cost of one Prometheus scrape of GET /metrics (config/metrics.py) on a large pool: the work gauges
read from the database (annotation/selectors/metrics.py) and the whole view.

    .venv/bin/python bench/bench_metrics_scrape.py [--database-url postgres://...] [--pairs 500000]
        [--available 0.3] [--leases 200] [--repeat 30]

Builds the pool of bench/bench_pool_live.py (`--pairs` pool pairs, ~1.1 labels each, the newest a
day's worth at one label every ~20 s per rater), marks `--available` of the pairs as still to hand
out and gives `--leases` live leases, then prints the median and p95 of work_metrics() and of the
full scrape. Goal: far below a scrape interval (15 s), so every web process can answer it.
"""
from __future__ import annotations

import argparse
import statistics
import time

from _setup import django_for_bench


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=None, help="PostgreSQL database to fill (default: rejudge_bench)")
    parser.add_argument("--pairs", type=int, default=500_000)
    parser.add_argument("--available", type=float, default=0.3, help="share of pool pairs still to hand out")
    parser.add_argument("--leases", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    django_for_bench(args.database_url)

    from datetime import timedelta

    from django.db import connection
    from django.test import Client
    from django.utils import timezone

    from annotation.models import Lease, PooledPair
    from annotation.selectors.metrics import work_metrics
    from annotation.services.accounts.raters import rater_create
    from bench_pool_live import build

    t = time.perf_counter()
    pool, n_labels = build(args.pairs, 1.1, 20)
    pairs = PooledPair.objects.filter(pool=pool)
    step = max(1, round(1 / args.available)) if args.available > 0 else 0
    pairs.update(available=False)
    if step:
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE {PooledPair._meta.db_table} SET available = true WHERE pool_id = %s AND id %% %s = 0",
                           [pool.pk, step])
    raters = [rater_create(username=f"bench-metrics-{pool.pk}-{i}", password="pw-123456") for i in range(args.leases)]
    expires = timezone.now() + timedelta(hours=6)
    Lease.objects.bulk_create([Lease(pair_id=pk, rater=rater, expires_at=expires)
                               for rater, pk in zip(raters, pairs.values_list("pk", flat=True)[:args.leases])])
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE)")
    print(f"built: {args.pairs} pairs, {n_labels} labels, {pairs.filter(available=True).count()} available, "
          f"{args.leases} leases in {time.perf_counter() - t:.0f} s")

    from django.contrib.auth import get_user_model

    admin = get_user_model().objects.filter(is_staff=True).first() or get_user_model().objects.create_user(
        username=f"bench-metrics-admin-{pool.pk}", password="pw-123456", is_staff=True)
    client = Client()
    client.force_login(admin)

    def timed(fn) -> list[float]:
        fn()  # warm: connection, plan cache
        out = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
        return out

    def scrape():
        response = client.get("/metrics")
        assert response.status_code == 200, response.status_code

    work = work_metrics()
    row = next(p for p in work.pools if p.pool_id == pool.pk)
    print(f"gauges for the pool: queue_depth={row.queue_depth} live_leases={row.live_leases} "
          f"labels_last_minute={row.labels_last_minute}; pools reported: {len(work.pools)}")
    for name, fn in (("work_metrics()", work_metrics), ("GET /metrics", scrape)):
        times = sorted(timed(fn))
        print(f"{name:16s} median {statistics.median(times) * 1000:7.1f} ms   "
              f"p95 {times[int(0.95 * (len(times) - 1))] * 1000:7.1f} ms   ({args.repeat} runs)")


if __name__ == "__main__":
    main()
