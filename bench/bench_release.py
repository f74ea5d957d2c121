"""A release of a FIRE-scale pool: build time, archive size and peak memory, then a second
version after 1,000 adjudications (changes.json) and `release diff` between the two, then the
second version downloaded through REST as a researcher does it: gunicorn serves the database, the
Python client (clients/python, `rejudge_client`) streams the archive and verifies it against
SHA256SUMS, opens it, and its `evaluate` of one run must equal both the release's corrected
leaderboard and `manage.py evaluate` on the release's qrels.txt.

The pool is bench_reports.py's (FIRE's MSVD shape: --pairs 555000 pooled pairs = 27,750 captions x
20, ~650,000 votes from 40 raters, bulk-loaded with COPY). Each step runs in a fresh process so its
peak RSS (getrusage) is its own. `--traced` adds tracemalloc's peak (the Python objects a step
allocated) in a separate run: tracing slows Python 3-4 times and holds a record per live block, so
a traced run's seconds and RSS are not the release's (the 193-237 s once quoted for v1 at 555K
were traced; untraced the same release took 61-64 s).
The database is new for each run (its name carries the process id; --database-url names another)
and dropped at the end unless --keep; the archives go to a temporary EXPORT_ROOT.

    .venv/bin/python bench/bench_release.py --pairs 555000 [--database-url URL] [--keep]
    .venv/bin/python bench/bench_release.py --pairs 100000,555000   (both sizes, side by side)

Each release step also prints its stages (agreement, qrels.txt, changes.json, fire.json, labels.csv,
leaderboard) with the time and the peak RSS of each (VmHWM reset between stages).
Goal (issue 40): peak memory flat from 100K to 555K pairs (ratio <= 1.2), a FIRE-scale release built
in under 60 s.
"""
from __future__ import annotations

import argparse
import http.client
import io
import json
import os
import signal
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc

from _setup import REPO, SERVER, django_for_bench, free_port, peak_rss_mb, peak_rss_reset, peak_rss_since_reset_mb

HERE = os.path.dirname(os.path.abspath(__file__))
WINDOW = 20  # bench_reports.py pools 20 clips a caption
PORT: int | None = None  # --port: the download's gunicorn (each step a child process, which is given it too)
TRACED = False  # --traced: tracemalloc in every step (slower, more memory: its own figures, not the release's)


def _serve(port: int) -> subprocess.Popen:
    """gunicorn on this process's database and EXPORT_ROOT (as bench_queue_latency.py serves it)."""
    env = os.environ | {"DEBUG": "0", "LOG_LEVEL": "WARNING"}
    server = subprocess.Popen([sys.executable, "-m", "gunicorn", "config.wsgi:application", "-b", f"127.0.0.1:{port}",
                               "--workers", "2", "--timeout", "600", "--log-level", "warning"], cwd=REPO, env=env)
    deadline = time.monotonic() + 300  # a loaded machine imports Django slowly
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/login/")
            conn.getresponse().read()
            return server
        except OSError:
            if server.poll() is not None:
                sys.exit(f"gunicorn exited with {server.returncode}")
            time.sleep(0.5)
    server.terminate()
    sys.exit("gunicorn did not answer within 300 s")


def _download(pool_id: int) -> dict:
    """The newest bench release through REST with the client: download (streamed, checked against
    the API's sha256, extracted, every file against SHA256SUMS), verify again, open, and score the
    first run of the pool three ways."""
    from django.core.management import call_command
    from rejudge_client import Client, evaluate, open_release

    from annotation.models import Pool, Prediction, Release
    from annotation.services.accounts.users import api_token_for, researcher_create

    release = Release.objects.filter(name="bench-fire").order_by("-version").first()
    board = release.leaderboard
    run = Pool.objects.get(pk=pool_id).runs.order_by("name").first()
    token = api_token_for(user=researcher_create(username=f"bench-researcher-{os.getpid()}", password=None))
    folder = tempfile.mkdtemp(prefix="bench-release-download-")
    try:
        run_file = os.path.join(folder, f"{run.name}.trec")
        with open(run_file, "w", encoding="utf-8") as out:
            predictions = Prediction.objects.filter(run=run)
            if board["depth"] is not None:  # the leaderboard scores whole runs unless it names a depth
                predictions = predictions.filter(rank__lte=board["depth"])
            rows = (predictions.order_by("caption_id", "rank")
                    .values_list("caption__external_id", "clip__external_id", "rank").iterator(chunk_size=50_000))
            for caption, clip, rank in rows:  # score -rank: the run's own order, as the leaderboard reads it
                out.write(f"{caption} Q0 {clip} {rank} {-rank} {run.name}\n")
        port = PORT or free_port()
        server = _serve(port)
        try:
            t = time.perf_counter()
            with Client(f"http://127.0.0.1:{port}", token=token, timeout=600) as client:
                local_path = client.download(release.slug, os.path.join(folder, "downloads"))
            download_s = time.perf_counter() - t
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)
        local = open_release(local_path)
        t = time.perf_counter()
        verified = len(local.verify())
        verify_s = time.perf_counter() - t
        measures = list(board["measures"])
        t = time.perf_counter()
        ours = evaluate(local, run_file, measures=measures).measures
        evaluate_s = time.perf_counter() - t
        out = io.StringIO()
        trec_names = {"AP": "map", "nDCG@10": "ndcg_cut_10"} | {m: f"success_{m[2:]}" for m in measures
                                                               if m.startswith("C@")}
        call_command("evaluate", run_file, "--judgments", str(local.file("qrels.txt")), "--judgments-format", "qrels",
                     "--measures", *[trec_names[m] for m in measures], "--output", "json", stdout=out)
        platform = json.loads(out.getvalue())["measures"]
        cells = next(r for r in board["runs"] if r["run"] == run.name)["corrected"]
        mismatches = [m for m in measures if abs(ours[m] - platform[trec_names[m]]) > 1e-12
                      or abs(ours[m] - cells[m]["value"]) > 1e-12]
        if mismatches:
            sys.exit(f"client evaluate differs on {mismatches}: client {ours}, manage.py evaluate {platform}, "
                     f"leaderboard {cells}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"release": release.slug, "archive_mb": round(release.bytes / 1e6, 1), "download_s": round(download_s, 1),
            "verified_files": verified, "verify_s": round(verify_s, 1), "run": run.name,
            "evaluate_s": round(evaluate_s, 1), "client_evaluate": {m: round(v, 4) for m, v in ours.items()},
            "equals": "the leaderboard's corrected values and manage.py evaluate"}


def _step(kind: str, pool_id: int) -> None:
    from annotation.models import PooledPair, Pool, Release
    from annotation.services.releases.create import release_create
    from annotation.services.releases.diff import release_diff

    if TRACED:
        tracemalloc.start()
    t = time.perf_counter()
    if kind == "adjudicate":
        # 1,000 pairs flipped by an admin's decision, as adjudication does it (state, label, flag).
        pairs = list(PooledPair.objects.filter(pool_id=pool_id, role="pool", state="resolved")
                     .order_by("id").values_list("id", "resolved_label")[:1000])
        for pair_id, label in pairs:
            PooledPair.objects.filter(pk=pair_id).update(
                resolved_label="not_relevant" if label == "relevant" else "relevant", resolved_by_admin=True)
        summary = {"adjudicated": len(pairs)}
    elif kind == "download":
        summary = _download(pool_id)
    elif kind == "diff":
        releases = list(Release.objects.filter(name="bench-fire").order_by("version"))
        diff = release_diff(old=releases[0], new=releases[-1], limit=5)
        summary = {"counts": diff["counts"]}
    else:
        stages, last = [], [time.perf_counter()]

        def stage(done, total, message) -> None:
            # Each stage's own time and peak RSS (VmHWM reset after it): which part of a release holds memory.
            now = time.perf_counter()
            seconds, peak = now - last[0], peak_rss_since_reset_mb() or 0
            # "qrels.txt: 50000 pairs", ... "qrels.txt written" are one stage
            name = message.split(":")[0].removesuffix(" written")
            if stages and stages[-1]["stage"] == name:
                stages[-1]["seconds"] += seconds
                stages[-1]["peak_rss_mb"] = max(stages[-1]["peak_rss_mb"], peak)
            else:
                stages.append({"stage": name, "seconds": seconds, "peak_rss_mb": peak})
            last[0] = now
            peak_rss_reset()

        pool = Pool.objects.get(pk=pool_id)
        stage(None, None, "before: Django, imports, the pool row")
        release = release_create(allow_unresolved=True, pools=[pool], name="bench-fire",
                                 title="Bench FIRE", licence="CC-BY-4.0", authors=["Bench"], progress=stage)
        summary = {"release": release.slug, "archive_mb": round(release.bytes / 1e6, 1),
                   "qrels_pairs": release.counts["qrels_pairs"], "label_rows": release.counts["label_rows"],
                   "changes": release.counts["changes"],
                   "files_mb": {f["path"]: round(f["bytes"] / 1e6, 1) for f in release.files if f["bytes"] > 1e6},
                   "stages": stages}
    elapsed = time.perf_counter() - t
    # Resetting VmHWM per stage resets getrusage's maximum too: the step's peak is the stages' largest.
    peak = max([peak_rss_mb()] + [s["peak_rss_mb"] for s in summary.get("stages", [])])
    print(json.dumps({"step": kind, "seconds": elapsed, "peak_rss_mb": peak,
                      "traced_peak_mb": tracemalloc.get_traced_memory()[1] / 1e6 if TRACED else None,
                      "summary": summary}))


def _child(url: str, env: dict, *args: str) -> dict:
    port = ["--port", str(PORT)] if PORT else []
    traced = ["--traced"] if TRACED else []
    out = subprocess.run([sys.executable, __file__, "--database-url", url, *port, *traced, *args], capture_output=True, text=True,
                         env=os.environ | env)
    if out.returncode:
        sys.exit(f"step {args} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _generate(url: str, env: dict, captions: int) -> int:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, os.path.join(HERE, "bench_reports.py"), "--database-url", url,
                          "--generate", str(captions)], capture_output=True, text=True, env=os.environ | env)
    if out.returncode:
        sys.exit(f"generating failed:\n{out.stderr[-3000:]}")
    print(out.stdout.strip().splitlines()[-2], f"({time.perf_counter() - t:.0f} s with migrations)")
    return int(out.stdout.strip().splitlines()[-1])


def _existing_pool(url: str) -> int | None:
    """The bench pool of an earlier run, its releases removed (they are the bench's own)."""
    import dj_database_url
    import psycopg2

    cfg = dj_database_url.parse(url)
    try:
        conn = psycopg2.connect(dbname=cfg["NAME"], user=cfg["USER"], password=cfg["PASSWORD"] or None,
                                host=cfg["HOST"], port=cfg["PORT"] or 5432)
    except psycopg2.OperationalError as exc:
        if "does not exist" in str(exc):
            return None  # nothing to reuse yet: this run generates it
        raise
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("SELECT p.id FROM annotation_pool p JOIN annotation_dataset d ON d.id = p.dataset_id "
                    "WHERE d.name = 'bench-reports' ORDER BY p.id LIMIT 1")
        row = cur.fetchone()
        if row:
            cur.execute("DELETE FROM annotation_release WHERE name = 'bench-fire'")
    conn.close()
    return row[0] if row else None


def _drop(url: str) -> None:
    import dj_database_url
    import psycopg2

    cfg = dj_database_url.parse(url)
    conn = psycopg2.connect(dbname="postgres", user=cfg["USER"], password=cfg["PASSWORD"] or None,
                            host=cfg["HOST"], port=cfg["PORT"] or 5432)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f'DROP DATABASE IF EXISTS "{cfg["NAME"]}" WITH (FORCE)')
    conn.close()


def _one_size(url: str, pairs: int, reuse: bool, keep: bool, drop: bool) -> dict:
    """Every step at one pool size; the figures the comparison table reads."""
    export_root = tempfile.mkdtemp(prefix="bench-release-")
    env = {"EXPORT_ROOT": export_root, "REJUDGE_STORAGE": "local"}
    print(f"\n{pairs:,} pairs: database {url}; archives under {export_root}")
    figures: dict = {"pairs": pairs}
    try:
        pool_id = _existing_pool(url) if reuse else None
        if pool_id is None:
            pool_id = _generate(url, env, max(1, pairs // WINDOW))
        print(f"{'step':<12}{'seconds':>9}{'peak RSS MB':>13}{'traced MB' if TRACED else '':>11}  result")
        for kind, name in (("release", "v1"), ("adjudicate", None), ("release", "v2"), ("diff", "diff"),
                           ("download", None)):
            row = _child(url, env, "--step", kind, str(pool_id))
            stages = row["summary"].pop("stages", [])
            print(f"{kind:<12}{row['seconds']:>9.1f}{row['peak_rss_mb']:>13.0f}"
                  f"{format(row['traced_peak_mb'], '11.1f') if TRACED else '':>11}  "
                  f"{row['summary']}")
            for s in stages:  # where the release's time and memory go
                print(f"  {s['stage'][:38]:<40}{s['seconds']:>7.1f} s{s['peak_rss_mb']:>8.0f} MB peak")
            if name:
                figures[name] = (row["seconds"], row["peak_rss_mb"])
    finally:
        if not keep:
            shutil.rmtree(export_root, ignore_errors=True)
            if drop:
                _drop(url)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", default="555000",
                        help="Pooled pairs (20 per caption); several, comma-separated (100000,555000), runs each "
                             "size and prints their peaks and times side by side with the ratio of the peaks.")
    parser.add_argument("--database-url", default=None,
                        help="Default: a new database rejudge_bench_release_<pid> on 127.0.0.1:5432; with several "
                             "sizes, each size's database is this name with _<pairs> appended.")
    parser.add_argument("--keep", action="store_true", help="Keep the database and the archives.")
    parser.add_argument("--reuse", action="store_true",
                        help="Take the pool already in --database-url (an earlier --keep run) instead of generating.")
    parser.add_argument("--port", type=int, default=None, help="gunicorn's port for the download (default: a free one)")
    parser.add_argument("--traced", action="store_true",
                        help="Also trace Python allocations (tracemalloc) in every step and print their peak; the "
                             "steps then run 3-4 times slower and hold more memory, so time and RSS are not the "
                             "release's: trace in a run of its own.")
    parser.add_argument("--step", nargs=2, metavar=("KIND", "POOL_ID"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    global PORT, TRACED
    PORT, TRACED = args.port, args.traced
    url = args.database_url or f"{SERVER}/rejudge_bench_release_{os.getpid()}"
    if args.step:
        django_for_bench(url)
        _step(args.step[0], int(args.step[1]))
        return
    sizes = [int(p) for p in str(args.pairs).split(",") if p.strip()]
    runs = [_one_size(url if len(sizes) == 1 else f"{url}_{pairs}", pairs, args.reuse, args.keep,
                      drop=not args.database_url) for pairs in sizes]
    print(f"\nload average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'pairs':>9}{'v1 s':>8}{'v1 MB':>8}{'v2 s':>8}{'v2 MB':>8}{'diff s':>8}{'diff MB':>9}")
    for r in runs:
        print(f"{r['pairs']:>9,}" + "".join(f"{r[k][0]:>8.1f}{r[k][1]:>8.0f}" if k != "diff" else
                                            f"{r[k][0]:>8.1f}{r[k][1]:>9.0f}" for k in ("v1", "v2", "diff")))
    if len(runs) > 1:
        peak = [max(r["v1"][1], r["v2"][1]) for r in runs]
        print(f"peak RSS of a release, largest / smallest pool: {peak[-1] / peak[0]:.2f} (goal <= 1.2, issue 40); "
              f"the largest pool's v1 in {runs[-1]['v1'][0]:.0f} s (goal < 60 s)")


if __name__ == "__main__":
    main()
