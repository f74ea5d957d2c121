"""Latency of "next pair + submit label" through the HTTP API served by gunicorn, on PostgreSQL.

    .venv/bin/python bench/bench_queue_latency.py [--sizes 5000 500000] [--raters 1 20] [--think 0 2]
        [--strategy bandit --pool-runs 3] [--time-recompute] [--busy-load 0 2] [--baseline DIR] [--port N]
        [--workers 2] [--threads 4] [--baseline-workers 4] [--baseline-threads 1] [--rounds 3]

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

Every rater answers the truth of a simulated collection: a pair is relevant when a hash of its
caption text and clip id says so, for about 10% of pairs (FIRE's share). `--strategy active` (issue
25: a machine judge's uncertainty draws the sample) needs a machine judge's verdicts on the pool's
pairs: the bench builds the pool in pool order, imports a simulated judge that agrees with that
truth on `--judge-accuracy` of the pairs (its scores drawn so that the confident verdicts are the
right ones more often), then switches the pool to "active" at `--sample-rate`, as an admin would.

`--busy-load N [M ...]` runs every cell once per level, with that many processes of a fixed CPU
load beside the server (each a busy loop of arithmetic, at normal priority), started before the
cell and stopped after it, so "a busy machine" is the same on every run: 0 is quiet, 2 on a
2-core machine leaves the server half the CPU it would have had. `--baseline DIR` serves the same
cells from a second gunicorn running the code checked out in DIR (`git archive <commit> | tar -x
-C DIR`) against the same database, the two runs of each cell back to back (their order
alternating), so a change's before and after are measured under the same load; closed-loop cells
get a pool of their own per server, as they use up several thousand pairs each. `--threads N`
(default 4, as config/gunicorn.conf.py) serves with N threads per worker (gthread, keep-alive; 1:
sync workers, a connection per request); `--baseline-threads N` and `--baseline-workers N` give the
baseline server its own (gunicorn.conf.py before issue 40: `--baseline-workers 4 --baseline-threads 1`).

Cost, which a busy machine does not distort as it does wall-clock time: every cell also prints
"CPU ms per label: web X, db Y", the CPU seconds (utime + stime from /proc) that the gunicorn
workers and the PostgreSQL backends serving the bench database spent during the cell, per label
(a label = one next + one submit). At 2 cores, 185 labels/s leaves 10.8 ms of CPU per label in
all. `--explain` runs a few next + submit in this process before the cells and prints each SQL
statement of the last pair with its EXPLAIN ANALYZE (inside a savepoint rolled back, so a write
is not made twice); `--profile N` runs N pairs in this process under cProfile and prints the CPU
ms per label of the Django side and the functions that took it.
"""
from __future__ import annotations

import argparse
import hashlib
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


RELEVANT_SHARE = 0.1  # about FIRE's share of relevant pairs


def truly_relevant(caption_text: str, clip_external_id: str) -> bool:
    """The simulated collection's truth: what every rater answers and the simulated machine judge
    mostly agrees with. A hash of what the judging screen shows, so a rater thread needs no table."""
    digest = hashlib.blake2b(f"{caption_text}\0{clip_external_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2 ** 64 < RELEVANT_SHARE


def simulated_judge(pool, accuracy: float, seed: int = 1):
    """A machine judge of the pool's pairs, right on about `accuracy` of them: its score (the
    confidence in its verdict) is higher where it is right, so the active design's uncertainty has
    something to find. Returns the judge (for judging_settings_update's `machine_judge`)."""
    import numpy as np

    from annotation.models import MachineJudge, MachineJudgment, PooledPair

    judge = MachineJudge.objects.create(dataset=pool.dataset, pool=pool, name=f"sim-{accuracy:g}", checksum="0" * 64)
    pairs = list(PooledPair.objects.filter(pool=pool).values_list("caption_id", "clip_id", "caption__text",
                                                                   "clip__external_id").distinct())
    rng = np.random.default_rng(seed)
    right = rng.random(len(pairs)) < accuracy
    score = np.where(right, rng.uniform(0.55, 1.0, len(pairs)), rng.uniform(0.5, 0.8, len(pairs)))
    verdicts = []
    for (caption, clip, text, external_id), ok, confidence in zip(pairs, right.tolist(), score.tolist()):
        relevant = truly_relevant(text, external_id) == ok
        label = MachineJudgment.Label.RELEVANT if relevant else MachineJudgment.Label.NOT_RELEVANT
        verdicts.append(MachineJudgment(judge=judge, caption_id=caption, clip_id=clip, label=label, score=round(confidence, 4)))
    MachineJudgment.objects.bulk_create(verdicts, batch_size=5000)
    return judge


def build(size: int, strategy: str = "pool_order", n_runs: int = 1, sample_rate: float = 0.8,
          judge_accuracy: float = 0.85, tag: str = ""):
    from django.db import connection

    from annotation.models import Caption, Clip, Dataset, Run
    from annotation.services.datasets.counts import dataset_counts_refresh
    from annotation.services.pools.build import pool_create
    from annotation.services.accounts.raters import memberships_grant, rater_create
    from annotation.services.accounts.users import api_token_for

    name = f"bench-queue-{size}{tag}"
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
    # "active" needs a judge of the pool's pairs, and a judge belongs to a pool: the pool is built
    # in pool order, the judge imported, and the pool switched, as an admin would.
    pool = pool_create(dataset=dataset, name="bench", runs=runs, depth=depth, redundancy=0.1, seed=1,
                       judging={"strategy": "pool_order" if strategy == "active" else strategy,
                                **({"sample_rate": sample_rate} if strategy == "sampled" else {})})
    if strategy == "active":
        from annotation.services.judging import judging_settings_update

        judge = simulated_judge(pool, judge_accuracy)
        judging_settings_update(pool=pool, changes={"strategy": "active", "machine_judge": judge.name,
                                                    "sample_rate": sample_rate})
        pool.refresh_from_db()
    built = time.perf_counter() - t
    raters = [rater_create(username=f"{name}-r{i}-{uuid.uuid4().hex[:4]}", password="pw-123456") for i in range(20)]
    memberships_grant(pool=pool, users=raters)
    # A database in steady state: without this, autovacuum starts on the freshly loaded tables in
    # the middle of the measurement (PostgreSQL vacuums after many inserts) and takes a core.
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE)")
    return pool, [api_token_for(user=r) for r in raters], built


def _post(conn: http.client.HTTPConnection, path: str, body: str, headers: dict):
    """POST on the rater's connection: (response, its body). A server closes a keep-alive connection
    that sat idle past its keep-alive time (a rater watching a clip); the request is then sent
    again on a new connection, as a browser does (the server never read it)."""
    for attempt in (0, 1):
        try:
            conn.request("POST", path, body=body, headers=headers)
            response = conn.getresponse()
            return response, response.read()
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            conn.close()
            if attempt:
                raise
    raise AssertionError("unreachable")


def rater_loop(port: int, pool_id: int, token: str, stop: float, samples: list, errors: list, think: float) -> None:
    # Generous: on a machine shared with other work a request can wait long for a core.
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=180)
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    rng = random.Random(token)
    while time.monotonic() < stop:
        if think:
            time.sleep(rng.uniform(0.5 * think, 1.5 * think))  # watching the clip and deciding
        t = time.perf_counter()
        response, raw = _post(conn, f"/api/v1/pools/{pool_id}/next/", "{}", headers)
        body = json.loads(raw)
        if response.status != 200 or body["assignment"] is None:
            hint = " (the pool ran out of work for this rater: a larger pool or shorter cells)" \
                if body.get("reason") == "no_work_left" else ""
            errors.append(f"next: {response.status} {body}{hint}")
            return
        shown = body["assignment"]
        value = "relevant" if truly_relevant(shown["caption"]["text"], shown["clip"]["id"]) else "not_relevant"
        label = {"client_id": uuid.uuid4().hex, "lease_id": body["assignment"]["lease_id"], "value": value, "seconds": 1}
        response, _ = _post(conn, "/api/v1/labels/", json.dumps(label), headers)
        if response.status != 201:
            errors.append(f"label: {response.status}")
            return
        samples.append((time.perf_counter() - t) * 1000)
    conn.close()


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def proc_cpu_seconds(pid: int) -> float | None:
    """utime + stime of one process, or None once it has gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # fields 14 and 15 of stat(5), after "pid (comm)"


def gunicorn_workers(master: int) -> list[int]:
    try:
        with open(f"/proc/{master}/task/{master}/children") as f:
            return [int(pid) for pid in f.read().split()]
    except OSError:
        return []


class CpuMeter:
    """CPU seconds spent by the gunicorn workers and the database's backends while it runs.

    Polls every half second so that a process that starts during the cell (a backend replacing
    one older than CONN_MAX_AGE, a restarted worker) is counted from its start, and one that ends
    is counted up to its last reading."""

    def __init__(self, master: int, database: str) -> None:
        self.master, self.database = master, database
        self.own: set[int] = set()
        self.first: dict[tuple[str, int], float] = {}
        self.last: dict[tuple[str, int], float] = {}
        self.done = threading.Event()

    def _backends(self) -> list[int]:
        from django.db import connection

        with connection.cursor() as cursor:
            # Client backends only: an autovacuum worker's turn depends on when the cell starts.
            # Not the meter's own (this thread's connection, the poller's): polling is not the queue's cost.
            cursor.execute("SELECT pid, pg_backend_pid() FROM pg_stat_activity WHERE datname = %s "
                           "AND backend_type = 'client backend'", [self.database])
            rows = cursor.fetchall()
        if rows:
            self.own.add(rows[0][1])
        return [pid for pid, _ in rows if pid not in self.own]

    def _read(self, initial: bool) -> None:
        for kind, pids in (("web", gunicorn_workers(self.master)), ("db", self._backends())):
            for pid in pids:
                value = proc_cpu_seconds(pid)
                if value is None:
                    continue
                key = (kind, pid)
                if key not in self.first:
                    self.first[key] = value if initial else 0.0  # a process born during the cell: all of it
                self.last[key] = value

    def _poll(self) -> None:
        from django.db import connection

        self._backends()  # the poller's own connection is known before its first reading
        while not self.done.wait(0.5):
            self._read(initial=False)
        connection.close()

    def __enter__(self):
        self._read(initial=True)
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.thread.join()
        self._read(initial=False)

    def seconds(self, kind: str) -> float:
        return sum(self.last[k] - self.first[k] for k in self.last if k[0] == kind and k[1] not in self.own)


def measure(port, pool, tokens, n_raters, seconds, think=0.0, server=None):
    samples, errors = [], []
    meter = CpuMeter(server.pid, os.environ["REJUDGE_BENCH_DB"]) if server else None
    if meter:
        meter.__enter__()
    client_cpu = time.process_time()  # this process: the rater threads (and the meter's poller)
    stop = time.monotonic() + seconds
    threads = [threading.Thread(target=rater_loop, args=(port, pool.pk, tokens[i], stop, samples, errors, think))
               for i in range(n_raters)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    client_cpu = time.process_time() - client_cpu
    if meter:
        meter.__exit__()
    if errors:
        raise SystemExit(f"errors: {errors[:3]}")
    samples.sort()
    out = {"n": len(samples), "p50": statistics.median(samples), "p95": samples[int(0.95 * (len(samples) - 1))],
           "throughput": len(samples) / seconds}
    if meter and samples:
        out["web_ms"] = 1000 * meter.seconds("web") / len(samples)
        out["db_ms"] = 1000 * meter.seconds("db") / len(samples)
        out["client_ms"] = 1000 * client_cpu / len(samples)
    return out


def in_process_pairs(pool, token: str, n: int, on_statement=None) -> list[tuple[list, list]]:
    """n next + submit through Django's whole stack (middleware, DRF, views) in this process, as
    gunicorn's workers run them; returns the statements of each request."""
    from django.db import connection
    from django.test import Client

    client = Client(HTTP_AUTHORIZATION=f"Token {token}", HTTP_HOST="127.0.0.1")
    out = []

    def run(path, body):
        statements = []

        def wrapper(execute, sql, params, many, context):
            statements.append(sql)
            if on_statement:
                on_statement(sql, params, context)
            return execute(sql, params, many, context)

        with connection.execute_wrapper(wrapper):
            response = client.post(path, data=json.dumps(body), content_type="application/json")
        return response, statements

    for _ in range(n):
        response, next_statements = run(f"/api/v1/pools/{pool.pk}/next/", {})
        body = response.json()
        if response.status_code != 200 or body["assignment"] is None:
            raise SystemExit(f"next: {response.status_code} {body}")
        shown = body["assignment"]
        value = "relevant" if truly_relevant(shown["caption"]["text"], shown["clip"]["id"]) else "not_relevant"
        response, submit_statements = run("/api/v1/labels/", {"client_id": uuid.uuid4().hex, "value": value, "seconds": 1,
                                                              "lease_id": body["assignment"]["lease_id"]})
        if response.status_code != 201:
            raise SystemExit(f"label: {response.status_code} {response.content[:300]}")
        out.append((next_statements, submit_statements))
    return out


def _real(statements: list[str]) -> list[str]:
    return [s for s in statements if not s.startswith(("SAVEPOINT", "RELEASE SAVEPOINT")) and s not in ("BEGIN", "COMMIT")]


def explain(pool, token: str) -> None:
    """Statements of one next + submit, each with its EXPLAIN ANALYZE on this pool."""
    from django.db import connection

    plans = []

    def on_statement(sql, params, context):
        if sql.startswith(("SAVEPOINT", "RELEASE SAVEPOINT", "BEGIN", "COMMIT", "ROLLBACK")):
            return
        cursor = context["cursor"].cursor  # psycopg2's own cursor: not through the wrapper again
        if connection.in_atomic_block:
            cursor.execute("SAVEPOINT bench_explain")
        else:
            cursor.execute("BEGIN")
        try:
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
            plans.append((sql, [row[0] for row in cursor.fetchall()]))
        finally:
            cursor.execute("ROLLBACK TO SAVEPOINT bench_explain" if connection.in_atomic_block else "ROLLBACK")

    in_process_pairs(pool, token, 3)  # past the first next (it also expires overdue leases)
    plans.clear()
    [(next_statements, submit_statements)] = in_process_pairs(pool, token, 1, on_statement)
    print(f"  statements: next {len(_real(next_statements))}, submit {len(_real(submit_statements))}")
    for sql, plan in plans:
        print("  --- " + " ".join(sql.split())[:300])
        for line in plan:
            if "Execution Time" in line or "Planning Time" in line or "actual" in line and "->" not in line:
                print("      " + line.strip())
        print("      plan top: " + plan[0].strip()[:160])


def profile(pool, token: str, n: int) -> None:
    """CPU of the Django side per label, and where it went."""
    import cProfile
    import pstats

    from django.db import connection

    in_process_pairs(pool, token, 3)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    cpu, db_cpu = time.process_time(), proc_cpu_seconds(backend)
    in_process_pairs(pool, token, n)
    cpu, db_cpu = time.process_time() - cpu, proc_cpu_seconds(backend) - db_cpu
    print(f"  in process, one rater (Django's stack without gunicorn): CPU ms per label: web {1000 * cpu / n:.2f}, "
          f"db {1000 * db_cpu / n:.2f} ({n} labels)")
    profiler = cProfile.Profile()
    profiler.enable()
    in_process_pairs(pool, token, n)
    profiler.disable()
    stats = pstats.Stats(profiler)
    # The same on any machine, however busy: what the Python side does per label.
    print(f"  Python function calls per label: {stats.total_calls / n:,.0f}")
    stats.sort_stats("cumulative").print_stats(40)
    stats.sort_stats("tottime").print_stats(25)
    # Python's own time by package (time in the database driver's calls is waiting, listed apart).
    by_package: dict[str, float] = {}
    for (filename, _, name), (_, _, tottime, _, _) in stats.stats.items():
        if name in ("<method 'execute' of 'psycopg2.extensions.cursor' objects>",
                    "<method 'commit' of 'psycopg2.extensions.connection' objects>"):
            key = "(waiting for PostgreSQL)"
        elif "site-packages/" in filename:
            key = "/".join(filename.split("site-packages/")[1].split("/")[:2 if os.environ.get("BENCH_PROFILE_MODULES") else 1])
        elif str(REPO) in filename:
            key = filename.replace(str(REPO) + "/", "").split("/")[0]
        else:
            key = "(python itself)"
        by_package[key] = by_package.get(key, 0.0) + tottime
    for key, seconds in sorted(by_package.items(), key=lambda kv: -kv[1])[:20]:
        print(f"    {key:<28} {1000 * seconds / n:6.2f} ms per label (under cProfile)")


# A fixed CPU load: arithmetic in a loop, no I/O, so each process takes one core whenever it gets one.
_BUSY_LOOP = "x = 0\nwhile True:\n    x = (x * 1103515245 + 12345) % 2147483648\n"


class BusyLoad:
    """`n` processes of a fixed CPU load for the length of a `with` block, stopped (and waited
    for) when it ends, however it ends."""

    def __init__(self, n: int) -> None:
        self.n, self.procs = n, []

    def __enter__(self):
        self.procs = [subprocess.Popen([sys.executable, "-c", _BUSY_LOOP]) for _ in range(self.n)]
        return self

    def __exit__(self, *exc) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self.procs = []


def start_server(code, port: int, workers: int, threads: int) -> subprocess.Popen:
    """gunicorn serving the code checked out in `code` (the repository, or --baseline's folder)."""
    env = os.environ | {"DATABASE_URL": os.environ["DATABASE_URL"], "DEBUG": "0", "LOG_LEVEL": "WARNING"}
    server = subprocess.Popen([sys.executable, "-m", "gunicorn", "config.wsgi:application", "-b", f"127.0.0.1:{port}",
                               "--workers", str(workers), "--threads", str(threads), "--log-level", "warning",
                               # config/gunicorn.conf.py's keep-alive (gunicorn's own default is 2 s)
                               "--keep-alive", "5",
                               "--timeout", "180"], cwd=code, env=env)
    for _ in range(300):
        if server.poll() is not None:
            raise SystemExit(f"gunicorn ({code}) exited with {server.returncode}")
        try:
            http.client.HTTPConnection("127.0.0.1", port, timeout=1).request("GET", "/login/")
            break
        except OSError:
            time.sleep(0.1)
    return server


def stop_server(server: subprocess.Popen) -> None:
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(timeout=10)


def plan_cache(pool, token: str, n: int = 12) -> None:
    """Which of the queue's prepared statements PostgreSQL runs with a generic plan (planned once)
    and which it plans anew on every run (custom plans: planning costs more than running them)."""
    from django.db import connection

    in_process_pairs(pool, token, n)
    with connection.cursor() as cursor:
        cursor.execute("SELECT generic_plans, custom_plans, statement FROM pg_prepared_statements ORDER BY prepare_time")
        rows = cursor.fetchall()
    print(f"  prepared statements after {n} labels in one connection (generic / custom plans):")
    for generic, custom, statement in rows:
        print(f"    {generic:>3} / {custom:<3} {' '.join(statement.split())[8:120]}")


def run_cells(args, codes, pools, ports, servers, size, results, ratios, cell) -> int:
    """One round of every cell (think x raters x busy load), each on both servers with --baseline,
    their order alternating. Returns the cell count so far, so the order keeps alternating."""
    for think in args.think:
        for n in args.raters:
            for busy in args.busy_load:
                order = codes if cell % 2 == 0 else codes[::-1]  # neither always first
                cell += 1
                for label, _ in order:
                    pool, tokens, _ = pools[label]
                    with BusyLoad(busy):
                        load = os.getloadavg()[0]
                        r = measure(ports[label], pool, tokens, n, args.paced_seconds if think else args.seconds,
                                    think, servers[label])
                    results[(label, size, n, think, busy)] = r
                    who = f"[{label}] " if args.baseline else ""
                    print(f"  {who}{n:>2} rater(s), think {think:g}s, busy load {busy}: next+submit p50 {r['p50']:.1f} ms, "
                          f"p95 {r['p95']:.1f} ms ({r['n']:,} pairs, {r['throughput']:.0f} labels/s; load average "
                          f"{load:.1f} at the start)")
                    print(f"      CPU ms per label: web {r['web_ms']:.2f}, db {r['db_ms']:.2f} (2 cores: "
                          f"{2000 / (r['web_ms'] + r['db_ms']):.0f} labels/s at most); the bench's own rater "
                          f"threads {r['client_ms']:.2f}")
                if args.baseline:
                    a, b = results[("now", size, n, think, busy)], results[("baseline", size, n, think, busy)]
                    print(f"      now / baseline: labels/s {a['throughput'] / b['throughput']:.2f}x, p95 "
                          f"{a['p95'] / b['p95']:.2f}x, web CPU {a['web_ms'] / b['web_ms']:.2f}x, db CPU "
                          f"{a['db_ms'] / b['db_ms']:.2f}x")
                    ratios.setdefault((n, think, busy), []).append(
                        (a["throughput"] / b["throughput"], a["p95"] / b["p95"], a["web_ms"] / b["web_ms"],
                         a["db_ms"] / b["db_ms"]))
    return cell


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 500000])
    parser.add_argument("--raters", type=int, nargs="+", default=[1, 20])
    parser.add_argument("--seconds", type=float, default=15, help="Length of a closed-loop (think 0) cell.")
    parser.add_argument("--paced-seconds", type=float, default=60, help="Length of a cell with think time.")
    # One worker per core, each with 4 threads, used the least CPU per label on 2 cores (web 4.0 +
    # db 2.1 ms, against 4.8-5.2 + 2.3-2.5 for 3 or 4 workers of 2-4 threads and 5.1 + 2.4 for 4 sync workers).
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="gunicorn workers (default: one per core).")
    parser.add_argument("--threads", type=int, default=4,
                        help="gunicorn threads per worker (more than 1: gthread workers with keep-alive, as "
                             "config/gunicorn.conf.py runs them; 1: sync workers, a connection per request).")
    parser.add_argument("--think", type=float, nargs="+", default=[0.0, 2.0],
                        help="Seconds a rater spends per pair between requests (0 = back-to-back, a load test).")
    parser.add_argument("--port", type=int, default=None, help="gunicorn's port (default: a free one)")
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--strategy", default="pool_order",
                        choices=["pool_order", "shallow_first", "move_to_front", "bandit", "sampled", "active"],
                        help="Judging strategy of the pool (issue 15; active: issue 25, with a simulated machine judge).")
    parser.add_argument("--judge-accuracy", type=float, default=0.85,
                        help="`active`: the share of pairs the simulated machine judge gets right.")
    parser.add_argument("--busy-load", type=int, nargs="+", default=[0], metavar="N",
                        help="Run every cell once per N: with N processes of a fixed CPU load beside the server "
                             "(0: quiet).")
    parser.add_argument("--baseline", default=None, metavar="DIR",
                        help="A checkout of other code (e.g. the commit before a change) served by a second gunicorn: "
                             "every cell runs on both, back to back.")
    parser.add_argument("--baseline-threads", type=int, default=None, metavar="N",
                        help="gunicorn threads per worker of the --baseline server (default: --threads): "
                             "1 serves the baseline with sync workers, as gunicorn.conf.py did before issue 40.")
    parser.add_argument("--baseline-workers", type=int, default=None, metavar="N",
                        help="gunicorn workers of the --baseline server (default: --workers).")
    parser.add_argument("--rounds", type=int, default=1,
                        help="Run every cell this many times (closed-loop cells on fresh pools), and with --baseline "
                             "print the median of the rounds' now / baseline ratios.")
    parser.add_argument("--pool-runs", type=int, default=1, help="Runs pooled (overlapping lists).")
    # The strategy's default rate samples too few pairs of a 5,000-pair pool for 20 raters back to
    # back: they run out of work within a cell.
    parser.add_argument("--sample-rate", type=float, default=0.8,
                        help="The `sampled` and `active` strategies' sample rate (share of pairs in the sample).")
    parser.add_argument("--explain", action="store_true",
                        help="Print each statement of a next + submit with its EXPLAIN ANALYZE on the built pool.")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="Run N pairs in this process under cProfile: CPU ms per label and where it went.")
    parser.add_argument("--time-recompute", action="store_true",
                        help="Also time switching the strategy (every query's order recomputed).")
    args = parser.parse_args()
    django_for_bench(args.database_url)
    args.port = args.port or free_port()
    from django.db import connection

    os.environ["REJUDGE_BENCH_DB"] = connection.settings_dict["NAME"]
    # (label, code): the current code and, with --baseline, the other checkout; results per label.
    codes = [("now", REPO)] + ([("baseline", args.baseline)] if args.baseline else [])
    if args.baseline and not os.path.exists(os.path.join(args.baseline, "config", "wsgi.py")):
        raise SystemExit(f"--baseline {args.baseline}: no config/wsgi.py there (not a checkout of this project)")
    ports = {"now": args.port, "baseline": free_port()}
    results = {}
    for size in args.sizes:
        # Closed-loop cells use up thousands of pairs each: a pool per server then, so both start alike.
        own_pools = args.baseline and 0 in args.think

        def make_pools() -> dict:
            pools = {}
            for label, _ in codes:
                if label == "now" or own_pools:
                    pools[label] = build(size, args.strategy, args.pool_runs, args.sample_rate, args.judge_accuracy,
                                         tag="" if label == "now" else f"-{label}")
                    pool, _, built = pools[label]
                    print(f"pool of {pool.pairs.count():,} pairs ({args.pool_runs} run(s), {args.strategy}) built in "
                          f"{built:.1f}s" + (f" (for {label})" if args.baseline else ""))
                else:
                    pools[label] = pools["now"]
            return pools

        pools = make_pools()
        pool, tokens, _ = pools["now"]
        if args.explain:
            explain(pool, tokens[-1])
            plan_cache(pool, tokens[-1])
        if args.profile:
            profile(pool, tokens[-2], args.profile)
        servers = {}
        try:
            for label, code in codes:
                threads = args.threads if label == "now" or args.baseline_threads is None else args.baseline_threads
                workers = args.workers if label == "now" or args.baseline_workers is None else args.baseline_workers
                servers[label] = start_server(code, ports[label], workers, threads)
                # Warm-up with enough raters to reach every worker: a worker's first requests load the
                # URLconf and views, and a new backend its catalog caches, which no cell should count.
                measure(ports[label], pools[label][0], pools[label][1], 2 * workers, 3)
            cell = 0
            ratios: dict = {}
            for round_ in range(args.rounds):
                if round_ and 0 in args.think:
                    pools = make_pools()  # closed-loop cells used up the last round's pairs
                if args.rounds > 1:
                    print(f"  round {round_ + 1} of {args.rounds}")
                cell = run_cells(args, codes, pools, ports, servers, size, results, ratios, cell)
            if args.rounds > 1 and args.baseline:
                for (n, think, busy), rows in ratios.items():
                    medians = [statistics.median(column) for column in zip(*rows)]
                    print(f"  median of {len(rows)} rounds, {n} rater(s), think {think:g}s, busy load {busy}: now / "
                          f"baseline: labels/s {medians[0]:.2f}x, p95 {medians[1]:.2f}x, web CPU {medians[2]:.2f}x, "
                          f"db CPU {medians[3]:.2f}x")
        finally:
            for server in servers.values():
                stop_server(server)
        if args.time_recompute:
            from annotation.services.judging import judging_settings_update

            pool = pools["now"][0]
            other = "shallow_first" if args.strategy != "shallow_first" else "bandit"
            t = time.perf_counter()
            done = judging_settings_update(pool=pool, changes={"strategy": other})
            print(f"  strategy {args.strategy} -> {other}: {done['queries']:,} queries recomputed, {done['reordered']:,} "
                  f"pairs moved, in {time.perf_counter() - t:.1f}s")
    sizes = sorted(args.sizes)
    if len(sizes) >= 2:
        for think in args.think:
            for n in args.raters:
                for busy in args.busy_load:
                    small, large = (results[("now", sizes[0], n, think, busy)]["p95"],
                                    results[("now", sizes[-1], n, think, busy)]["p95"])
                    print(f"{n} rater(s), think {think:g}s, busy load {busy}: p95 at {sizes[-1]:,} / p95 at {sizes[0]:,} = "
                          f"{large / small:.2f}x (goal <= 1.5x)")


if __name__ == "__main__":
    main()
