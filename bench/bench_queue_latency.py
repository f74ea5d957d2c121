"""Latency of "next pair + submit label" through the HTTP API served by gunicorn, on PostgreSQL.

    .venv/bin/python bench/bench_queue_latency.py [--sizes 5000 500000] [--raters 1 20] [--think 0 2]
        [--strategy bandit --pool-runs 3] [--time-recompute]

For each pool size a pool is built (through the real pool service), gunicorn is started on it,
and N rater threads loop next -> submit with token auth for a fixed time. Prints p50/p95 of the
pair of requests. `--think` sets the seconds a rater spends per pair between requests: 0 is a
closed-loop load test (every rater hammers the server; on 2 cores it measures saturation, and
latency is then N / throughput), 2 is a fast human pace (raters watch a clip before answering).
Closed-loop cells run `--seconds`, paced cells `--paced-seconds` (they need longer to collect
enough pairs for a p95). Goal (issue 3): p95 under 50 ms, and the 500,000-pair p95 within 1.5x
of the 5,000-pair p95.

`--strategy` builds the pool with that judging strategy (issue 15: every label that resolves a
pair then rewrites its query's order inside the label transaction); `--pool-runs N` makes N runs
whose lists overlap (run r is run 0 shifted down r ranks), so a label updates several runs, and
raters answer "relevant" for about 10% of pairs. `--time-recompute` also times switching the
built pool's strategy (PATCH pools/{id}/ judging), which recomputes every query's order.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid

from _setup import REPO, django_for_bench, free_port

# The raters' think time stands for watching the clip, but it is spent before "next": the pair of
# requests is timed back to back, so the server's minimum watch time would refuse every answer.
os.environ.setdefault("REJUDGE_MIN_WATCH_SECONDS", "0")


def build(size: int, strategy: str = "pool_order", n_runs: int = 1):
    from django.db import connection

    from annotation.models import Caption, Clip, Dataset, Run
    from annotation.services.datasets.counts import dataset_counts_refresh
    from annotation.services.pools.build import pool_create
    from annotation.services.accounts.raters import memberships_grant, rater_create
    from annotation.services.accounts.users import api_token_for

    name = f"bench-queue-{size}"
    Dataset.objects.filter(name=name).delete()
    depth = 10
    n_captions = size // (depth + n_runs - 1)  # runs overlap: depth + n_runs - 1 pairs per caption
    dataset = Dataset.objects.create(name=name)
    Clip.objects.bulk_create([Clip(dataset=dataset, external_id=f"v{i}", video_id=f"v{i}", media=f"demo/v{i}.mp4")
                              for i in range(2000)], batch_size=5000)
    clip_ids = list(Clip.objects.filter(dataset=dataset).order_by("pk").values_list("pk", flat=True))
    Caption.objects.bulk_create([Caption(dataset=dataset, external_id=f"q{i}", text=f"caption {i}") for i in range(n_captions)],
                                batch_size=5000)
    caption_ids = list(Caption.objects.filter(dataset=dataset).order_by("pk").values_list("pk", flat=True))
    dataset_counts_refresh(datasets=[dataset])  # rows made here, not by the import that keeps the counts
    import io

    runs = []
    for shift in range(n_runs):
        run = Run.objects.create(dataset=dataset, name=f"r{shift}", checksum=uuid.uuid4().hex, depth=depth)
        buffer = io.StringIO()
        for i, caption in enumerate(caption_ids):
            for r in range(depth):
                buffer.write(f"{run.pk}\t{caption}\t{clip_ids[(i * 13 + (r + shift) * 7) % len(clip_ids)]}\t{r + 1}\t{-r}\n")
        buffer.seek(0)
        with connection.cursor() as cursor:
            cursor.cursor.copy_expert("COPY annotation_prediction (run_id, caption_id, clip_id, rank, score) FROM STDIN", buffer)
        runs.append(run)
    t = time.perf_counter()
    pool = pool_create(dataset=dataset, name="bench", runs=runs, depth=depth, redundancy=0.1, seed=1,
                       judging={"strategy": strategy})
    built = time.perf_counter() - t
    raters = [rater_create(username=f"{name}-r{i}-{uuid.uuid4().hex[:4]}", password="pw-123456") for i in range(20)]
    memberships_grant(pool=pool, users=raters)
    # A database in steady state: without this, autovacuum starts on the freshly loaded tables in
    # the middle of the measurement (PostgreSQL vacuums after many inserts) and takes a core.
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE)")
    return pool, [api_token_for(user=r) for r in raters], built


def rater_loop(port: int, pool_id: int, token: str, stop: float, samples: list, errors: list, think: float) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    rng = random.Random(token)
    while time.monotonic() < stop:
        if think:
            time.sleep(rng.uniform(0.5 * think, 1.5 * think))  # watching the clip and deciding
        t = time.perf_counter()
        conn.request("POST", f"/api/v1/pools/{pool_id}/next/", body="{}", headers=headers)
        response = conn.getresponse()
        body = json.loads(response.read())
        if response.status != 200 or body["assignment"] is None:
            errors.append(f"next: {response.status} {body}")
            return
        value = "relevant" if rng.random() < 0.1 else "not_relevant"  # about FIRE's share of relevant pairs
        label = {"client_id": uuid.uuid4().hex, "lease_id": body["assignment"]["lease_id"], "value": value, "seconds": 1}
        conn.request("POST", "/api/v1/labels/", body=json.dumps(label), headers=headers)
        response = conn.getresponse()
        response.read()
        if response.status != 201:
            errors.append(f"label: {response.status}")
            return
        samples.append((time.perf_counter() - t) * 1000)
    conn.close()


def measure(port, pool, tokens, n_raters, seconds, think=0.0):
    samples, errors = [], []
    stop = time.monotonic() + seconds
    threads = [threading.Thread(target=rater_loop, args=(port, pool.pk, tokens[i], stop, samples, errors, think))
               for i in range(n_raters)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit(f"errors: {errors[:3]}")
    samples.sort()
    return {"n": len(samples), "p50": statistics.median(samples), "p95": samples[int(0.95 * (len(samples) - 1))],
            "throughput": len(samples) / seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 500000])
    parser.add_argument("--raters", type=int, nargs="+", default=[1, 20])
    parser.add_argument("--seconds", type=float, default=15, help="Length of a closed-loop (think 0) cell.")
    parser.add_argument("--paced-seconds", type=float, default=60, help="Length of a cell with think time.")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1, help="gunicorn threads per worker (more than 1: gthread workers).")
    parser.add_argument("--think", type=float, nargs="+", default=[0.0, 2.0],
                        help="Seconds a rater spends per pair between requests (0 = back-to-back, a load test).")
    parser.add_argument("--port", type=int, default=None, help="gunicorn's port (default: a free one)")
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--strategy", default="pool_order",
                        choices=["pool_order", "shallow_first", "move_to_front", "bandit", "sampled"],
                        help="Judging strategy of the pool (issue 15).")
    parser.add_argument("--pool-runs", type=int, default=1, help="Runs pooled (overlapping lists).")
    parser.add_argument("--time-recompute", action="store_true",
                        help="Also time switching the strategy (every query's order recomputed).")
    args = parser.parse_args()
    django_for_bench(args.database_url)
    args.port = args.port or free_port()
    results = {}
    for size in args.sizes:
        pool, tokens, built = build(size, args.strategy, args.pool_runs)
        print(f"pool of {pool.pairs.count():,} pairs ({args.pool_runs} run(s), {args.strategy}) built in {built:.1f}s")
        env = os.environ | {"DATABASE_URL": os.environ["DATABASE_URL"], "DEBUG": "0", "LOG_LEVEL": "WARNING"}
        server = subprocess.Popen([sys.executable, "-m", "gunicorn", "config.wsgi:application", "-b", f"127.0.0.1:{args.port}",
                                   "--workers", str(args.workers), "--threads", str(args.threads), "--log-level", "warning"],
                                  cwd=REPO, env=env)
        try:
            for _ in range(100):
                try:
                    http.client.HTTPConnection("127.0.0.1", args.port, timeout=1).request("GET", "/login/")
                    break
                except OSError:
                    time.sleep(0.1)
            measure(args.port, pool, tokens, 1, 2)  # warm-up: connections, caches
            for think in args.think:
                for n in args.raters:
                    r = measure(args.port, pool, tokens, n, args.paced_seconds if think else args.seconds, think)
                    results[(size, n, think)] = r
                    print(f"  {n:>2} rater(s), think {think:g}s: next+submit p50 {r['p50']:.1f} ms, p95 {r['p95']:.1f} ms "
                          f"({r['n']:,} pairs, {r['throughput']:.0f} labels/s)")
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
        if args.time_recompute:
            from annotation.services.judging import judging_settings_update

            other = "shallow_first" if args.strategy != "shallow_first" else "bandit"
            t = time.perf_counter()
            done = judging_settings_update(pool=pool, changes={"strategy": other})
            print(f"  strategy {args.strategy} -> {other}: {done['queries']:,} queries recomputed, {done['reordered']:,} "
                  f"pairs moved, in {time.perf_counter() - t:.1f}s")
    sizes = sorted(args.sizes)
    if len(sizes) >= 2:
        for think in args.think:
            for n in args.raters:
                small, large = results[(sizes[0], n, think)]["p95"], results[(sizes[-1], n, think)]["p95"]
                print(f"{n} rater(s), think {think:g}s: p95 at {sizes[-1]:,} / p95 at {sizes[0]:,} = {large / small:.2f}x "
                      f"(goal <= 1.5x)")


if __name__ == "__main__":
    main()
