"""Upgrade and restore drill (issue 23), on a local stack (bench/_stack.py), over HTTP for everything a
user does and with the operator's own tools (manage.py, pg_dump/pg_restore, the bucket's objects)
for the rest.

    .venv/bin/python bench/upgrade_drill.py [--from f71e1f4]

(a) Upgrade. The previous release (a git ref, default f71e1f4; extracted with `git archive` into a
    temporary folder, run with this checkout's .venv) migrates a fresh PostgreSQL database, loads the
    demo (`load_demo --force`), and serves it: raters judge pairs through the API, the admin computes
    an agreement and a metrics report. Then, with the old web server still serving (a poller
    counts its answers during the migration), this checkout's `manage.py migrate` runs against the
    same database; the old processes are replaced by this checkout's. Checked: every table's row
    count is the same or grew only where a migration adds rows, every label is identical
    (id, pair, rater, value, client id, time), and the same report kinds recomputed on the new code
    give the same numbers.
(b) Backup and restore. Exports of every kind are made and downloaded; the database is dumped
    (pg_dump -Fc) and the bucket's objects copied; both are restored into a fresh database and a
    fresh bucket, a stack is started on them, and the same exports downloaded from it must be
    byte-identical (SHA-256); exports made anew on the restored stack are compared too.
Exit 1 when any check fails.
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _stack import REPO, LocalStack, bucket_objects, create_database, psql, s3_client  # noqa: E402

EXPORT_KINDS = ("csv", "jsonl", "qrels", "fire_json")
REPORT_KINDS = ({"kind": "agreement", "params": {"n_boot": 200, "seed": 1}}, {"kind": "metrics"})
# Parts of a report's result that say when and with what it was computed, not what it found.
VOLATILE = {"versions", "computed_at", "created_at", "elapsed_seconds", "job", "id", "url"}


class Api:
    def __init__(self, base: str, token: str | None = None) -> None:
        self.base, self.session = base, requests.Session()
        if token:
            self.session.headers["Authorization"] = f"Token {token}"

    def call(self, method: str, path: str, expect=200, **kwargs):
        response = self.session.request(method, path if path.startswith("http") else self.base + path,
                                        timeout=120, **kwargs)
        expected = expect if isinstance(expect, tuple) else (expect,)
        if response.status_code not in expected:
            raise RuntimeError(f"{method} {path}: {response.status_code}, expected {expect}: {response.text[:500]}")
        return response

    def job(self, path: str, body: dict, timeout: float = 300) -> dict:
        job = self.call("POST", path, 202, json=body).json()
        deadline = time.monotonic() + timeout
        while job["status"] not in ("succeeded", "failed"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"job {job['id']} not done in {timeout:.0f}s")
            time.sleep(0.25)
            job = self.call("GET", f"/api/v1/jobs/{job['id']}/").json()
        if job["status"] != "succeeded":
            raise RuntimeError(f"job {job['id']} ({job['kind']}) failed: {job['message']}")
        return job


def login(base: str, username: str, password: str) -> Api:
    api = Api(base)
    api.call("GET", "/login/")
    api.call("POST", "/login/", (302,), allow_redirects=False, headers={"Referer": base + "/login/"},
             data={"username": username, "password": password, "csrfmiddlewaretoken": api.session.cookies["csrftoken"]})
    api.session.headers["X-CSRFToken"] = api.session.cookies["csrftoken"]
    return api


def demo_training_answers(code: Path) -> dict[tuple[str, str], str]:
    """The demo's training answers, read from the old release's source: the drill's raters are its
    demo raters and must pass training to reach production pairs."""
    # The loader is annotation/demo/load.py; releases before issue 37 kept it at services/demo.py.
    loader = next(path for path in (code / "annotation/demo/load.py", code / "annotation/services/demo.py")
                  if path.exists())
    tree = ast.parse(loader.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "DEMO_TRAINING":
            return {(t, v): a for t, v, a, *_ in ast.literal_eval(node.value)}
    raise RuntimeError("DEMO_TRAINING not found in the old release's demo.py")


def judge(base: str, pool_id: int, raters: list[tuple[str, str]], per_rater: int, training: dict, seed: int) -> int:
    labelled = 0
    for username, password in raters:
        api = login(base, username, password)
        rng = random.Random(f"{seed}-{username}")
        done = 0
        while done < per_rater:
            body = api.call("POST", f"/api/v1/pools/{pool_id}/next/", json={}).json()
            a = body["assignment"]
            if a is None:
                break
            value = training.get((a["caption"]["text"], a["clip"]["id"])) if a["mode"] == "training" else None
            value = value or rng.choice(("relevant", "not_relevant", "not_relevant"))
            api.call("POST", "/api/v1/labels/", (201,), json={"client_id": uuid.uuid4().hex, "lease_id": a["lease_id"],
                                                              "value": value, "seconds": round(rng.uniform(2, 9), 2)})
            if a["mode"] == "production":
                done += 1
                labelled += 1
    return labelled


def table_counts(database: str) -> dict[str, int]:
    tables = psql("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1", database).split()
    return {t: int(psql(f'SELECT count(*) FROM "{t}"', database)) for t in tables}


def labels_digest(database: str) -> tuple[int, str]:
    rows = psql("SELECT id, pair_id, rater_id, value, client_id, seconds, created_at FROM annotation_label ORDER BY id",
                database)
    return len(rows.splitlines()), hashlib.sha256(rows.encode()).hexdigest()


def strip(value):
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def reports(admin: Api, pool_id: int) -> dict[str, dict]:
    out = {}
    for spec in REPORT_KINDS:
        job = admin.job(f"/api/v1/pools/{pool_id}/reports/", spec)
        out[spec["kind"]] = admin.call("GET", job["result"]["url"]).json()["result"]
    return out


def exports(admin: Api, pool_id: int) -> dict[str, dict]:
    out = {}
    for fmt in EXPORT_KINDS:
        job = admin.job(f"/api/v1/pools/{pool_id}/exports/", {"format": fmt})
        body = admin.call("GET", job["result"]["download_url"], allow_redirects=True).content
        out[fmt] = {"id": job["result"]["export_id"], "sha256": hashlib.sha256(body).hexdigest(),
                    "recorded": job["result"]["sha256"], "size": len(body)}
    return out


def download(admin: Api, export_id: int) -> str:
    body = admin.call("GET", f"/api/v1/exports/{export_id}/download/", allow_redirects=True).content
    return hashlib.sha256(body).hexdigest()


def diff(a, b, path="", added: list | None = None) -> list[str]:
    """Differences between two report results; a section only the new release computes (a key
    missing before) is no difference in the numbers both compute: it goes to `added`."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a and added is not None:
                added.append(f"{path}.{k}")
                continue
            out += diff(a.get(k), b.get(k), f"{path}.{k}", added)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in diff(x, y, f"{path}[{i}]", added)]
    return [] if a == b else [f"{path}: {str(a)[:60]} -> {str(b)[:60]}"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from", dest="ref", default="f71e1f4", help="the previous release (a git ref)")
    parser.add_argument("--labels-per-rater", type=int, default=12)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--port", type=int, default=None,
                        help="the old release's gunicorn port; the upgraded one listens on PORT+1 (both serve during "
                             "the upgrade), the restored one on PORT+2 (default: free ones)")
    args = parser.parse_args()
    checks: list[tuple[str, bool, str]] = []
    wall = time.monotonic()
    print(f"upgrade drill from {args.ref} to this checkout ({subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=REPO, capture_output=True, text=True).stdout.strip()}"
          f"{' + uncommitted changes' if subprocess.run(['git', 'status', '--porcelain'], cwd=REPO, capture_output=True, text=True).stdout.strip() else ''}); "
          f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    old_code = Path(tempfile.mkdtemp(prefix="rejudge-drill-old-"))
    archive = subprocess.run(["git", "archive", "--format=tar", args.ref], cwd=REPO, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(old_code)], input=archive.stdout, check=True)
    env = {"REJUDGE_MIN_WATCH_SECONDS": "0"}  # the drill's raters answer at once
    ports = [args.port + i if args.port else 0 for i in range(3)]
    old = LocalStack("drill", code=old_code, keep=args.keep, extra_env=env, port=ports[0])
    new = restored = backup = None
    status = 1
    try:
        # ---- (a) the previous release, with data
        old.prepare()
        old.migrate()
        demo = old.manage("load_demo", "--force").stdout
        print(f"previous release {args.ref} in {old_code}: database {old.database}, bucket {old.bucket}; load_demo: "
              + demo.splitlines()[0])
        token = old.manage("drf_create_token", "admin").stdout.strip().split()[2]
        old.start(web_workers=2)
        admin = Api(old.url, token)
        pool_id = next(p["id"] for p in admin.call("GET", "/api/v1/pools/").json()["results"] if p["name"] == "demo-pool")
        labelled = judge(old.url, pool_id, [(f"rater{i}", "rejudge-rater") for i in (1, 2, 3)], args.labels_per_rater,
                         demo_training_answers(old_code), seed=23)
        before_reports = reports(admin, pool_id)
        before_counts = table_counts(old.database)
        before_labels = labels_digest(old.database)
        print(f"old release: {labelled} production labels judged over HTTP; {before_labels[0]} labels in all; "
              f"reports {', '.join(before_reports)}; {sum(before_counts.values())} rows in {len(before_counts)} tables")

        # ---- migrate with the old web serving
        polled: dict[str, int] = {}
        stop = threading.Event()

        def poll() -> None:
            rater = login(old.url, "rater1", "rejudge-rater")
            while not stop.is_set():
                # The login page and a rater's API call: every release has both (not always /healthz).
                for path in ("/login/", f"/api/v1/pools/{pool_id}/my-progress/"):
                    try:
                        code = str(rater.session.get(old.url + path, timeout=10).status_code)
                    except requests.RequestException as exc:
                        code = type(exc).__name__
                    polled[f"{path.split('/')[-2] or path} {code}"] = polled.get(f"{path.split('/')[-2] or path} {code}", 0) + 1
                time.sleep(0.05)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        new = LocalStack("drill", code=REPO, database=old.database, bucket=old.bucket, keep=args.keep, extra_env=env,
                         port=ports[1])
        new.secret, new.queue = old.secret, old.queue  # same deployment: same key, same queues
        t = time.monotonic()
        plan = new.manage("migrate", "--plan").stdout.strip()
        migrated = new.manage("migrate", "--no-input").stdout
        took = time.monotonic() - t
        stop.set()
        poller.join()
        applied = [line for line in migrated.splitlines() if "Applying" in line]
        print(f"migrate with this checkout ({took:.1f}s, {len(applied)} migration(s) applied; plan: "
              f"{plan.splitlines()[-1] if plan else 'nothing'}); the old web answered meanwhile: {polled}")
        serving = all(k.endswith(" 200") for k in polled) and polled
        checks.append(("web served during the migration", bool(serving), str(polled)))
        old.stop(drop=False)
        new.prepare(fresh_database=False)
        new.start(web_workers=2)
        admin = Api(new.url, token)
        after_counts = table_counts(new.database)
        after_labels = labels_digest(new.database)
        lost = {t: (before_counts[t], after_counts.get(t)) for t in before_counts
                if after_counts.get(t) is None or after_counts[t] < before_counts[t]}
        grew = {t: (before_counts.get(t), n) for t, n in after_counts.items() if n != before_counts.get(t)}
        checks.append(("no rows lost in any table", not lost,
                       f"{len(before_counts)} tables before, {len(after_counts)} after; fewer rows: {lost or 'none'}; "
                       f"changed: {grew or 'none'}"))
        checks.append(("every label identical", before_labels == after_labels,
                       f"{before_labels[0]} labels, digest {before_labels[1][:12]} -> {after_labels[1][:12]}"))
        after_reports = reports(admin, pool_id)
        for kind in before_reports:
            added: list[str] = []
            d = diff(strip(before_reports[kind]), strip(after_reports[kind]), added=added)
            checks.append((f"{kind} report equal before and after", not d,
                           ("every number equal" if not d else "; ".join(d[:5]))
                           + (f" (sections only the new release computes: {', '.join(added)})" if added else "")))

        # ---- (b) backup and restore
        made = exports(admin, pool_id)
        bad = {f: e for f, e in made.items() if e["sha256"] != e["recorded"]}
        checks.append(("exports match their recorded SHA-256", not bad, ", ".join(
            f"{f} {e['size']} B {e['sha256'][:12]}" for f, e in made.items())))
        backup = Path(tempfile.mkdtemp(prefix="rejudge-drill-backup-"))
        t = time.monotonic()
        subprocess.run(["pg_dump", "-h", "127.0.0.1", "-U", "postgres", "-Fc", "-f", str(backup / "db.dump"),
                        new.database], check=True)
        objects = bucket_objects(new.bucket)
        for key, body in objects.items():
            path = backup / "bucket" / key
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(body)
        print(f"backup in {backup}: db.dump {(backup / 'db.dump').stat().st_size} B, {len(objects)} objects "
              f"({sum(map(len, objects.values()))} B), {time.monotonic() - t:.1f}s")
        restored = LocalStack("drillrestore", code=REPO, keep=args.keep, extra_env=env, port=ports[2])
        restored.secret = new.secret
        restored.prepare()
        subprocess.run(["pg_restore", "-h", "127.0.0.1", "-U", "postgres", "--no-owner", "-d", restored.database,
                        str(backup / "db.dump")], check=True)
        client = s3_client()
        for path in (backup / "bucket").rglob("*"):
            if path.is_file():
                client.put_object(Bucket=restored.bucket, Key=path.relative_to(backup / "bucket").as_posix(),
                                  Body=path.read_bytes())
        restored.start(web_workers=2)
        radmin = Api(restored.url, token)
        same = {f: download(radmin, e["id"]) == e["sha256"] for f, e in made.items()}
        checks.append(("restored stack serves byte-identical exports", all(same.values()),
                       ", ".join(f"{f} {'identical' if ok else 'DIFFERENT'}" for f, ok in same.items())))
        again = exports(radmin, pool_id)
        fresh = {f: again[f]["sha256"] == made[f]["sha256"] for f in made}
        checks.append(("exports made anew on the restored stack are byte-identical", all(fresh.values()),
                       ", ".join(f"{f} {'identical' if ok else 'DIFFERENT'}" for f, ok in fresh.items())))
        checks.append(("restored row counts equal", table_counts(restored.database) == table_counts(new.database)
                       or _only_new_exports(table_counts(restored.database), table_counts(new.database)),
                       "every table (the restored stack's new export rows aside)"))
        print("\ndrill checks:")
        for name, ok, detail in checks:
            print(f"  [{'PASS' if ok else 'FAIL'}] {name}: {detail}")
        status = 0 if all(ok for _, ok, _ in checks) else 1
    except Exception as exc:  # noqa: BLE001
        import traceback

        traceback.print_exc()
        print(f"DRILL ABORTED: {type(exc).__name__}: {exc}")
        for stack in (old, new, restored):
            if stack:
                print(f"--- {stack.tag} web log\n{stack.log('web', 1500)}\n--- worker log\n{stack.log('worker', 1500)}")
    finally:
        for stack in (restored, new, old):
            if stack:
                stack.stop(drop=not args.keep)
        if not args.keep:
            import shutil

            for folder in (old_code, backup):
                if folder:
                    shutil.rmtree(folder, ignore_errors=True)
        print(f"wall {time.monotonic() - wall:.0f}s; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}; exit {status}")
    return status


def _only_new_exports(restored: dict, original: dict) -> bool:
    """The restored stack made its own exports (and their jobs): those tables may have grown."""
    grown = {t for t in set(restored) | set(original) if restored.get(t) != original.get(t)}
    return grown <= {"annotation_artefact", "annotation_job", "annotation_jobattempt"}


if __name__ == "__main__":
    sys.exit(main())
