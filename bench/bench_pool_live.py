"""Cost of one poll of the pool page (GET pools/{id}/live/, selectors/dashboard.py pool_live) on
a large pool, against the full pool_progress the page renders once.

    .venv/bin/python bench/bench_pool_live.py [--pairs 500000] [--labels-per-pair 1.1] [--raters 20]

Rows are loaded with COPY: `--pairs` pool pairs, about `--labels-per-pair` labels each spread
over `--raters` members, the last day's labels one every ~20 s per rater. Prints the median and
p95 of pool_live and pool_progress over repeated calls. Goal (issue 14 item 7): a poll every 5 s
per open page costs well under the poll interval (median under 250 ms at 500,000 pairs).
"""
from __future__ import annotations

import argparse
import statistics
import time
import uuid

from _setup import copy_rows, django_for_bench, next_id, reset_sequence


def build(n_pairs: int, labels_per_pair: float, n_raters: int):
    from datetime import timedelta

    from django.db import connection
    from django.utils import timezone

    from annotation.models import Caption, Clip, Dataset, Label, Pool, PooledPair
    from annotation.services.accounts.raters import memberships_grant, rater_create

    name = f"bench-live-{n_pairs}"
    Dataset.objects.filter(name=name).delete()
    dataset = Dataset.objects.create(name=name)
    n_clips, n_captions = 2000, max(1, n_pairs // 10)
    Clip.objects.bulk_create([Clip(dataset=dataset, external_id=f"v{i}", video_id=f"v{i}", media=f"demo/v{i}.mp4")
                              for i in range(n_clips)], batch_size=5000)
    clips = list(Clip.objects.filter(dataset=dataset).order_by("pk").values_list("pk", flat=True))
    Caption.objects.bulk_create([Caption(dataset=dataset, external_id=f"q{i}", text=f"caption {i}")
                                 for i in range(n_captions)], batch_size=5000)
    captions = list(Caption.objects.filter(dataset=dataset).order_by("pk").values_list("pk", flat=True))
    pool = Pool.objects.create(dataset=dataset, name="bench", depth=10, redundancy=0.1)
    raters = [rater_create(username=f"{name}-r{i}-{uuid.uuid4().hex[:4]}", password="pw-123456") for i in range(n_raters)]
    memberships_grant(pool=pool, users=raters)
    first = next_id(PooledPair)
    now = timezone.now()
    states = ["resolved"] * 6 + ["open"] * 3 + ["adjudication"]
    copy_rows(PooledPair, ["id", "pool_id", "caption_id", "clip_id", "role", "state", "resolved_label", "created_at"],
              ((first + i, pool.pk, captions[i // 10], clips[(i * 7 + i // 10) % n_clips], "pool", states[i % 10],
                "relevant" if i % 3 == 0 and states[i % 10] == "resolved" else "", now.isoformat())
               for i in range(n_pairs)))
    reset_sequence(PooledPair)
    n_labels = int(n_pairs * labels_per_pair)
    span = timedelta(days=30).total_seconds()

    def label_rows():
        for k in range(n_labels):
            pair = first + (k % n_pairs)
            rater = raters[(k + k // n_pairs) % n_raters].pk  # a second label on a pair comes from another rater
            age = span * (1 - k / n_labels)  # the newest labels last: the last day holds ~1/30 of them
            yield (pair, rater, "relevant", f"b{k}", 4.0, (now - timedelta(seconds=age)).isoformat())
    copy_rows(Label, ["pair_id", "rater_id", "value", "client_id", "seconds", "created_at"], label_rows())
    reset_sequence(Label)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE)")
    return pool, n_labels


def timed(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=500_000)
    parser.add_argument("--labels-per-pair", type=float, default=1.1)
    parser.add_argument("--raters", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    django_for_bench(args.database_url)
    from annotation.selectors.dashboard import pool_live
    from annotation.selectors.pools import pool_progress

    t = time.perf_counter()
    pool, n_labels = build(args.pairs, args.labels_per_pair, args.raters)
    print(f"built {args.pairs:,} pairs, {n_labels:,} labels, {args.raters} raters in {time.perf_counter() - t:.1f} s")
    live = pool_live(pool=pool)
    print(f"last hour {live['labels_last_hour']} labels; rater 0: {live['raters'][0]['labels_window']} labels in 24 h, "
          f"{live['raters'][0]['active_seconds'] / 3600:.1f} h active, {live['raters'][0]['rate_per_hour']:.0f}/h")
    for name, fn in (("pool_live (one poll)", lambda: pool_live(pool=pool)),
                     ("pool_progress (page render)", lambda: pool_progress(pool=pool))):
        fn()
        times = sorted(timed(fn, args.repeat))
        p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
        print(f"{name}: median {statistics.median(times) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms over {len(times)} calls")


if __name__ == "__main__":
    main()
