"""Reports and exports at FIRE's MSVD scale, on PostgreSQL.

Generates (COPY) a dataset of 27,763 captions (about a fifth sharing their text with another) over
670 clips, three runs ranking 10 clips per caption, a depth-10 pool of their ~555,000 distinct
pairs with provenance, and ~650,000 votes from 40 raters (every pair once, 17% a second vote, a
third where the first two disagree), plus gold answers. Then times, each in a fresh process so its
peak memory is its own: the agreement report (1,000 bootstrap replicates), the metrics report,
the sample-estimate report, the exports (CSV, JSON Lines, qrels, FIRE JSON), and reading the
exported FIRE file back as published judgments.

    .venv/bin/python bench/bench_reports.py [--captions 27763] [--reuse]

Goals (issue 5): each report under 30 s, a full export under 60 s, peak memory under 1 GB.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from _setup import bench_database_url, copy_rows, django_for_bench, next_id, reset_sequence, peak_rss_mb

DATASET = "bench-reports"
CLIPS = 670
WINDOW, TOP = 20, 10
RUN_OFFSETS = {"run_a": 0, "run_b": 5, "run_c": 10}  # each run ranks 10 of a caption's 20 candidates
RATERS = 40
STEPS = [("report", "agreement"), ("report", "metrics"), ("report", "sample_estimate"),
         ("export", "csv"), ("export", "jsonl"), ("export", "qrels"), ("export", "fire_json"),
         ("import", "fire_json")]










def generate(n_captions: int, seed: int = 0) -> int:
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction
    from django.utils import timezone

    from annotation.services.datasets.counts import dataset_counts_refresh
    from annotation.models import (Caption, Clip, Dataset, Label, PairProvenance, Pool, PooledPair, PoolMembership,
                                   PoolRun, Prediction, RaterProfile, Run)

    rng = np.random.default_rng(seed)
    Dataset.objects.filter(name=DATASET).delete()
    now = timezone.now()
    t0 = time.perf_counter()
    with transaction.atomic():
        dataset = Dataset.objects.create(name=DATASET, description="bench_reports.py")
        clips = Clip.objects.bulk_create([Clip(dataset=dataset, external_id=f"vid{i}", video_id=f"vid{i}")
                                          for i in range(CLIPS)])
        clip_ids = np.array([c.pk for c in clips], dtype=np.int64)
        words = [f"w{i}" for i in range(400)]
        texts: list[str] = []
        for q in range(n_captions):
            if q and rng.random() < 0.2:
                texts.append(texts[int(rng.integers(0, q))])  # MSVD repeats many caption texts
            else:
                texts.append(" ".join(rng.choice(words, size=int(rng.integers(3, 13)))))
        original = np.arange(n_captions) % CLIPS
        captions = Caption.objects.bulk_create(
            [Caption(dataset=dataset, external_id=f"vid{original[q]}#{q}", text=texts[q],
                     original_clip_id=int(clip_ids[original[q]])) for q in range(n_captions)], batch_size=5000)
        caption_ids = np.array([c.pk for c in captions], dtype=np.int64)
        dataset_counts_refresh(datasets=[dataset])  # rows made here, not by the import that keeps the counts

        # Each caption's 20 candidates start at its original clip; run r ranks window[offset:offset+10].
        window = (original[:, None] + np.arange(WINDOW)[None, :]) % CLIPS
        runs = {}
        run_lists = {}
        for name, offset in RUN_OFFSETS.items():
            run = Run.objects.create(dataset=dataset, name=name, checksum=f"bench-{name}", depth=TOP,
                                     prediction_count=n_captions * TOP, caption_count=n_captions)
            order = np.argsort(rng.random((n_captions, TOP)), axis=1)
            run_lists[name] = offset + order  # window positions in rank order
            runs[name] = run
            positions = run_lists[name]
            copy_rows(Prediction, ["run_id", "caption_id", "clip_id", "rank", "score"],
                  ((run.pk, int(caption_ids[q]), int(clip_ids[window[q, positions[q, r]]]), r + 1,
                    round(1 - (r + 1) / 100, 4)) for q in range(n_captions) for r in range(TOP)))

        pool = Pool.objects.create(dataset=dataset, name="bench pool", depth=TOP, redundancy=0.17, seed=seed)
        for name, run in runs.items():
            PoolRun.objects.create(pool=pool, run=run, pairs_added=n_captions * 5)
        n_pairs = n_captions * WINDOW
        first_pair = next_id(PooledPair)
        pair_id = first_pair + np.arange(n_pairs).reshape(n_captions, WINDOW)
        truth = rng.random((n_captions, WINDOW)) < 0.15
        truth[:, 0] = rng.random(n_captions) < 0.95  # the original clip is usually judged relevant
        double = rng.random((n_captions, WINDOW)) < 0.17

        # Votes: 92% accurate raters; a second vote on 17% of pairs, a third where they disagree.
        def vote(mask_truth):
            right = rng.random(mask_truth.shape) < 0.92
            return np.where(right, mask_truth, ~mask_truth)

        v1, v2, v3 = vote(truth), vote(truth), vote(truth)
        n_votes = np.where(double, np.where(v1 != v2, 3, 2), 1)
        relevant_votes = v1.astype(int) + np.where(n_votes >= 2, v2, 0) + np.where(n_votes == 3, v3, 0)
        resolved = 2 * relevant_votes > n_votes
        queue = rng.permutation(n_pairs).reshape(n_captions, WINDOW)
        copy_rows(PooledPair, ["id", "pool_id", "caption_id", "clip_id", "role", "is_original_positive", "required_labels",
                           "vote_count", "state", "available", "queue_order", "resolved_label", "created_at",
                           "resolved_at"],
              ((int(pair_id[q, j]), pool.pk, int(caption_ids[q]), int(clip_ids[window[q, j]]), "pool", j == 0,
                int(n_votes[q, j]), int(n_votes[q, j]), "resolved", False, int(queue[q, j]),
                "relevant" if resolved[q, j] else "not_relevant", now, now)
               for q in range(n_captions) for j in range(WINDOW)))
        reset_sequence(PooledPair)
        proposed = {name: np.zeros((n_captions, WINDOW), dtype=np.int64) for name in runs}
        for name, positions in run_lists.items():
            np.put_along_axis(proposed[name], positions, np.arange(1, TOP + 1)[None, :].repeat(n_captions, 0), axis=1)
        copy_rows(PairProvenance, ["pair_id", "run_id", "rank"],
              ((int(pair_id[q, j]), runs[name].pk, int(proposed[name][q, j]))
               for name in runs for q in range(n_captions) for j in range(WINDOW) if proposed[name][q, j]))

        User = get_user_model()
        User.objects.filter(username__startswith="bench-rater-").delete()
        users = User.objects.bulk_create([User(username=f"bench-rater-{i}") for i in range(RATERS)])
        RaterProfile.objects.filter(pseudonym__gte=90_000).delete()
        RaterProfile.objects.bulk_create([RaterProfile(user=u, pseudonym=90_000 + i) for i, u in enumerate(users)])
        PoolMembership.objects.bulk_create([PoolMembership(pool=pool, rater=u, training="passed") for u in users])
        user_ids = np.array([u.pk for u in users])
        first = rng.integers(0, RATERS, size=(n_captions, WINDOW))
        second = (first + 1 + rng.integers(0, RATERS - 2, size=first.shape)) % RATERS
        third = (second + 1 + (first == (second + 1) % RATERS)) % RATERS
        seconds = rng.lognormal(2.0, 0.6, size=(n_captions, WINDOW, 3)).round(2)
        label_id = next_id(Label)
        word = {True: "relevant", False: "not_relevant"}

        def labels():
            nonlocal label_id
            for q in range(n_captions):
                for j in range(WINDOW):
                    pid = int(pair_id[q, j])
                    for k, (who, value) in enumerate(((first, v1), (second, v2), (third, v3))[:n_votes[q, j]]):
                        yield (label_id, pid, int(user_ids[who[q, j]]), word[bool(value[q, j])], f"b{label_id}",
                               float(seconds[q, j, k]), True, k + 1, now)
                        label_id += 1

        n_labels = copy_rows(Label, ["id", "pair_id", "rater_id", "value", "client_id", "seconds", "counted", "sequence",
                                 "created_at"], labels())
        reset_sequence(Label)
        # Gold pairs (known answers) that every rater answered, for per-rater gold accuracy.
        gold = PooledPair.objects.bulk_create([
            PooledPair(pool=pool, caption_id=int(caption_ids[g]), clip_id=int(clip_ids[(original[g] + 300) % CLIPS]),
                       role="gold", known_answer="not_relevant", available=False, queue_order=g) for g in range(50)])
        Label.objects.bulk_create([Label(pair=p, rater_id=int(u), value="relevant" if rng.random() < 0.1 else
                                         "not_relevant", client_id=f"g{p.pk}-{u}", counted=False, seconds=5.0)
                                   for p in gold for u in user_ids])
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    print(f"generated in {time.perf_counter() - t0:.0f}s: {n_captions:,} captions ({len(set(texts)):,} distinct texts), "
          f"{n_pairs:,} pool pairs, {n_labels:,} votes from {RATERS} raters, 3 runs x {n_captions * TOP:,} predictions")
    return pool.pk


def run_step(kind: str, name: str, pool_id: int) -> None:
    """One timed step in this (fresh) process; prints a JSON line for the parent."""
    from annotation.models import Artefact, Pool
    from annotation.services.exports.labels import artefact_file, export_create
    from annotation.services.judgment_sets.imports import judgments_import
    from annotation.services.reports.create import report_create

    pool = Pool.objects.get(pk=pool_id)
    t = time.perf_counter()
    if kind == "report":
        params = {"n_boot": 1000} if name == "agreement" else {}
        report = report_create(pool=pool, kind=name, params=params)
        summary = {"report": report.pk}
        if name == "agreement":
            summary |= {k: round(report.result["agreement"][k]["alpha"], 4) for k in ("first_two", "all")}
    elif kind == "import":
        # Read back the FIRE file just exported, as published labels of the dataset (then drop them).
        exported = Artefact.objects.filter(params__pool_id=pool.pk, kind="fire_json").latest("pk")
        judgment_set = judgments_import(dataset=pool.dataset, path=artefact_file(artefact=exported),
                                        name="bench-import").judgment_set
        summary = {k: v for k, v in judgment_set.counts.items() if k != "file_datasets"}
        judgment_set.delete()
    else:
        artefact = export_create(pool=pool, fmt=name)
        summary = {"size_mb": round(artefact.size / 1e6, 1), **artefact.params["counts"]}
    elapsed = time.perf_counter() - t
    print(json.dumps({"step": f"{kind} {name}", "seconds": elapsed, "peak_rss_mb": peak_rss_mb(),
                      "summary": summary}))


def _run_all(args, url: str) -> None:
    from django.conf import settings
    from django.db import connection

    from annotation.models import Pool

    print(f"PostgreSQL database: {connection.settings_dict['NAME']}; exports under {settings.EXPORT_ROOT}")
    existing = Pool.objects.filter(dataset__name=DATASET).first()
    # Every step runs in a child process, so that this one stays small: Linux keeps a process's
    # peak RSS across fork and exec, which would otherwise show the generator's memory in each step.
    if args.reuse and existing:
        pool_id = existing.pk
    else:
        out = subprocess.run([sys.executable, __file__, "--database-url", url, "--generate", str(args.captions)],
                             capture_output=True, text=True, check=True)
        print(out.stdout.strip().splitlines()[-2])
        pool_id = int(out.stdout.strip().splitlines()[-1])
    print(f"{'step':<24}{'seconds':>9}{'peak RSS MB':>13}  result")
    for kind, name in STEPS:
        out = subprocess.run([sys.executable, __file__, "--database-url", url, "--step", kind, name, str(pool_id)],
                             capture_output=True, text=True, check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        goal = 30 if kind == "report" else 60  # the import has no goal of its own; exports' is used
        flag = "" if row["seconds"] < goal and row["peak_rss_mb"] < 1024 else "  <-- over the goal"
        print(f"{row['step']:<24}{row['seconds']:>9.1f}{row['peak_rss_mb']:>13.0f}  {row['summary']}{flag}")
    print("goals: reports < 30 s, exports < 60 s, peak RSS < 1024 MB (each step in its own process, "
          "after Django setup)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--captions", type=int, default=27_763)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--reuse", action="store_true",
                        help="Keep the data of an earlier --reuse run instead of generating (its database: "
                             "--database-url, else rejudge_bench_reports, kept; without --reuse each run has its own).")
    parser.add_argument("--step", nargs=3, metavar=("KIND", "NAME", "POOL_ID"), help=argparse.SUPPRESS)
    parser.add_argument("--generate", type=int, metavar="CAPTIONS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    url = bench_database_url(args.database_url, "rejudge_bench_reports", keep=args.reuse)
    if args.step:
        django_for_bench(url)
        run_step(args.step[0], args.step[1], int(args.step[2]))
        return
    if args.generate:
        django_for_bench(url)
        print(generate(args.generate))
        return
    # The exported files (~650 MB) go to a folder of their own, removed at the end.
    export_root = tempfile.mkdtemp(prefix="bench-reports-")
    os.environ["EXPORT_ROOT"] = export_root
    try:
        django_for_bench(url)
        _run_all(args, url)
    finally:
        shutil.rmtree(export_root, ignore_errors=True)


if __name__ == "__main__":
    main()
