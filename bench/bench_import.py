"""Import benchmark: a generated 1,000,000-line TREC run into PostgreSQL, against PostgreSQL's own
COPY of the same rows into the same table, plus the full real benchmark files.

    .venv/bin/python bench/bench_import.py [--lines 1000000] [--shared DATASETS_DIR]

Goal (issue 2): within 3x of COPY and under 500 MB peak memory.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _setup import REPO, django_for_bench, peak_rss_mb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--shared", type=Path, default=None,
                        help="folder of the shared datasets (msrvtt/, msvd/, ...): also import those real files")
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    django_for_bench(args.database_url)

    from django.db import connection, transaction

    from annotation.models import Caption, Clip, Dataset, Prediction, Run
    from annotation.services.datasets.imports import dataset_import
    from annotation.services.datasets.runs import run_import

    Dataset.objects.filter(name__startswith="bench-").delete()
    captions = args.lines // args.depth
    print(f"PostgreSQL: {connection.settings_dict['NAME']}; run of {args.lines:,} lines = {captions:,} captions x {args.depth} deep")

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        manifest = tmp / "bench.jsonl"
        with manifest.open("w") as out:
            for i in range(max(args.depth, captions)):
                out.write(f'{{"kind": "clip", "id": "v{i}"}}\n')
            for q in range(captions):
                out.write(f'{{"kind": "caption", "id": "q{q}", "text": "caption {q}", "clip": "v{q}"}}\n')
        dataset = dataset_import(path=manifest, name="bench-run-import")
        run_path = tmp / "big.trec"
        t = time.perf_counter()
        with run_path.open("w") as out:
            for q in range(captions):
                # a rotating window of clips so every caption ranks a different list
                out.writelines(f"q{q} Q0 v{(q + r) % args.depth} {r + 1} {1.0 - r / (args.depth + 1):.6f} bench\n"
                               for r in range(args.depth))
        print(f"generated {run_path.stat().st_size / 1e6:.0f} MB in {time.perf_counter() - t:.1f}s")
        rss_before = peak_rss_mb()

        # Both timings include the commit: Django declares foreign keys DEFERRABLE INITIALLY
        # DEFERRED on PostgreSQL, so their checks run at commit, and rows are not landed before it.
        t = time.perf_counter()
        run = run_import(dataset=dataset, path=run_path).run
        import_s = time.perf_counter() - t
        rss_after = peak_rss_mb()
        assert run.prediction_count == args.lines

        # PostgreSQL's own COPY of the same rows into the same (indexed, constrained) table.
        caption_pk = dict(Caption.objects.filter(dataset=dataset).values_list("external_id", "id"))
        clip_pk = dict(Clip.objects.filter(dataset=dataset).values_list("external_id", "id"))
        baseline = Run.objects.create(dataset=dataset, name="copy-baseline", checksum="baseline")
        tsv = tmp / "rows.tsv"
        with tsv.open("w") as out, run_path.open() as source:
            for line in source:
                q, _, v, rank, score, _ = line.split()
                out.write(f"{baseline.pk}\t{caption_pk[q]}\t{clip_pk[v]}\t{rank}\t{score}\n")
        table = Prediction._meta.db_table
        t = time.perf_counter()
        with transaction.atomic(), connection.cursor() as cursor, tsv.open() as data:
            cursor.cursor.copy_expert(f"COPY {table} (run_id, caption_id, clip_id, rank, score) FROM STDIN", data)
        copy_s = time.perf_counter() - t

    print(f"run_import: {import_s:.2f}s  ({args.lines / import_s:,.0f} lines/s)")
    print(f"COPY of the same rows into the same table, committed: {copy_s:.2f}s")
    print(f"ratio import/COPY: {import_s / copy_s:.2f}x  (goal <= 3x)")
    print(f"peak RSS of this process: {rss_after:.0f} MB (before the import {rss_before:.0f} MB; goal < 500 MB)")

    if args.shared and args.shared.is_dir():
        print("\nreal benchmark files:")
        for name, rel, fmt in [("msrvtt", "msrvtt/msrvtt_1ka_test.csv", "msrvtt-csv"), ("msvd", "msvd/msvd_test.tsv", "msvd-tsv"),
                               ("youcook2", "youcook2/youcookii_annotations_val.json", "youcook2-json"),
                               ("epic100", "epic100/EPIC_100_retrieval_test.csv", "epic100-csv")]:
            t = time.perf_counter()
            ds = dataset_import(path=args.shared / rel, name=f"bench-{name}", fmt=fmt, media_template=f"{name}/{{video_id}}.mp4")
            print(f"  {name:<9} {ds.clips.count():>6,} clips {ds.captions.count():>7,} captions  {time.perf_counter() - t:.2f}s")
    Dataset.objects.filter(name__startswith="bench-").delete()


if __name__ == "__main__":
    main()
