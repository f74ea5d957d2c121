"""An export of ~650,000 labels written to the local disk and to an S3-compatible object store,
then downloaded from each, with time and peak memory.

The data is bench_reports.py's (FIRE's MSVD scale: 27,763 captions, ~555,000 pooled pairs, ~650,000
votes from 40 raters), generated into PostgreSQL once (`--reuse` keeps it). Each step runs in a
fresh process, so its peak RSS (getrusage) is its own; tracemalloc's peak counts the Python
objects the step allocated on top of Django's setup:

  export local   export_create to EXPORT_ROOT (a temporary folder)
  export s3      export_create to the bucket: multipart parts of AWS_S3_FILE_BUFFER_SIZE
  download local the file read in 1 MB blocks (what the download view streams)
  download s3    the same through the storage API (REJUDGE_STORAGE_DOWNLOADS=stream), and the
                 signed URL a researcher is redirected to, read in 1 MB blocks over HTTP

    moto_server -H 127.0.0.1 -p 5055 &        # or any S3-compatible store (keys from AWS_* env)
    .venv/bin/python bench/bench_export_storage.py --s3-endpoint http://127.0.0.1:5055 [--reuse]

Goal (issue 17): the object store within 1.5x of the local disk, memory constant (not growing
with the file).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid

from _setup import bench_database_url, django_for_bench, peak_rss_mb

HERE = os.path.dirname(os.path.abspath(__file__))


def _step(kind: str, target: str, pool_id: int, fmt: str) -> None:
    """One timed step in this (fresh) process; prints a JSON line for the parent."""
    from annotation.models import Artefact, Pool
    from annotation.services.exports.labels import export_create
    from annotation.storage import stored_file_chunks, stored_file_url

    tracemalloc.start()
    t = time.perf_counter()
    summary: dict = {}
    if kind == "export":
        artefact = export_create(pool=Pool.objects.get(pk=pool_id), fmt=fmt)
        summary = {"artefact": artefact.pk, "size_mb": round(artefact.size / 1e6, 1),
                   "rows": artefact.params["counts"].get("rows"), "sha256": artefact.sha256}
    else:
        artefact = Artefact.objects.filter(params__pool_id=pool_id, params__format=fmt).latest("pk")
        digest, size = hashlib.sha256(), 0
        if kind == "download":
            for block in stored_file_chunks("exports", artefact.path):
                digest.update(block)
                size += len(block)
        else:  # "signed": what a researcher's client does after the redirect
            import requests

            with requests.get(stored_file_url("exports", artefact.path, filename=artefact.name), stream=True,
                              timeout=60) as response:
                response.raise_for_status()
                for block in response.iter_content(1 << 20):
                    digest.update(block)
                    size += len(block)
        summary = {"size_mb": round(size / 1e6, 1), "same_bytes": digest.hexdigest() == artefact.sha256}
    elapsed = time.perf_counter() - t
    traced_peak = tracemalloc.get_traced_memory()[1]
    print(json.dumps({"step": f"{kind} {target}", "seconds": elapsed, "peak_rss_mb": peak_rss_mb(),
                      "traced_peak_mb": traced_peak / 1e6, "summary": summary}))


def _child(url: str, env: dict, *args: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--database-url", url, *args], capture_output=True, text=True,
                         env=os.environ | env)
    if out.returncode:
        sys.exit(f"step {args} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _pool_id(url: str, captions: int, reuse: bool) -> int:
    django_for_bench(url)
    from annotation.models import Pool

    existing = Pool.objects.filter(dataset__name="bench-reports").first()
    if reuse and existing:
        return existing.pk
    out = subprocess.run([sys.executable, os.path.join(HERE, "bench_reports.py"), "--database-url", url,
                          "--generate", str(captions)], capture_output=True, text=True, check=True)
    print(out.stdout.strip().splitlines()[-2])
    return int(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--s3-endpoint", help="The S3-compatible store, e.g. http://127.0.0.1:5055 (moto_server).")
    parser.add_argument("--bucket", help="An existing bucket (default: a new one, removed at the end).")
    parser.add_argument("--format", default="csv", choices=["csv", "jsonl", "qrels", "fire_json"])
    parser.add_argument("--captions", type=int, default=27_763)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--reuse", action="store_true",
                        help="Keep the data of an earlier --reuse run instead of generating (its database: "
                             "--database-url, else rejudge_bench_reports, kept; without --reuse each run has its own).")
    parser.add_argument("--step", nargs=3, metavar=("KIND", "TARGET", "POOL_ID"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    url = bench_database_url(args.database_url, "rejudge_bench_reports", keep=args.reuse)
    if args.step:
        django_for_bench(url)
        _step(args.step[0], args.step[1], int(args.step[2]), args.format)
        return
    if not args.s3_endpoint:
        parser.error("--s3-endpoint is required (start moto_server, or name any S3-compatible store)")

    import boto3

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench-secret")
    region = os.environ.get("AWS_S3_REGION_NAME", "us-east-1")
    client = boto3.client("s3", endpoint_url=args.s3_endpoint, region_name=region)
    bucket = args.bucket or f"rejudge-bench-{uuid.uuid4().hex[:8]}"
    if not args.bucket:
        client.create_bucket(Bucket=bucket)
    export_root = tempfile.mkdtemp(prefix="bench-export-storage-")
    local = {"REJUDGE_STORAGE": "local", "EXPORT_ROOT": export_root}
    s3 = {"REJUDGE_STORAGE": "s3", "AWS_STORAGE_BUCKET_NAME": bucket, "AWS_S3_ENDPOINT_URL": args.s3_endpoint,
          "AWS_S3_REGION_NAME": region, "EXPORT_ROOT": export_root}
    try:
        pool_id = _pool_id(url, args.captions, args.reuse)
        print(f"pool {pool_id}, format {args.format}; local folder {export_root}; bucket {bucket} at {args.s3_endpoint}")
        print(f"{'step':<18}{'seconds':>9}{'peak RSS MB':>13}{'traced MB':>11}  result")
        rows = {}
        for kind, target, env in (("export", "local", local), ("download", "local", local), ("export", "s3", s3),
                                  ("download", "s3", s3 | {"REJUDGE_STORAGE_DOWNLOADS": "stream"}),
                                  ("signed", "s3", s3)):
            row = _child(url, env, "--step", kind, target, str(pool_id), "--format", args.format)
            rows[row["step"]] = row
            summary = {k: v for k, v in row["summary"].items() if k != "sha256"}
            print(f"{row['step']:<18}{row['seconds']:>9.2f}{row['peak_rss_mb']:>13.0f}{row['traced_peak_mb']:>11.1f}  "
                  f"{summary}")
        same = rows["export local"]["summary"]["sha256"] == rows["export s3"]["summary"]["sha256"]
        ratio = rows["export s3"]["seconds"] / rows["export local"]["seconds"]
        down = rows["download s3"]["seconds"] / max(rows["download local"]["seconds"], 1e-9)
        print(f"same file in both places: {same}; s3/local time: export {ratio:.2f}x, download {down:.2f}x "
              f"(goal: within 1.5x); memory: peak RSS per step above (goal: constant, not the file's size)")
    finally:
        shutil.rmtree(export_root, ignore_errors=True)
        if not args.bucket:
            for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
                for obj in page.get("Contents", []):
                    client.delete_object(Bucket=bucket, Key=obj["Key"])
            client.delete_bucket(Bucket=bucket)


if __name__ == "__main__":
    main()
