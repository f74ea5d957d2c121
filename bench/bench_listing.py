"""Listing cost at a million clips: GET /api/v1/datasets/, the admin overview, and the /media/
access check, on PostgreSQL (issue 12, finding 6).

Loads (COPY) a dataset of 1,000,000 clips and 1,000,000 captions (each written for its own clip)
next to one of the finding's size (1,200 clips x 1,000 captions), two runs and a pool of 200,000
pairs over the large one, with a rater who is a member. Then, through Django's test client in this
process (no network), times ~50 requests of each page with p50/p95, and the media check for a
file of the rater's pool (allowed) and one outside it (refused, the slowest case: every pair of the
clip is looked at).

"Before" is the old listing queries run by hand, per dataset, without touching the code: the API's
COUNT(DISTINCT) over one clips x captions join (0.65 s at 1,200 x 1,000 in the finding; at 1M x 1M
it is 10^12 joined rows, so it runs under a statement timeout) and the admin overview's correlated
COUNT subqueries over clips and captions.

    .venv/bin/python bench/bench_listing.py [--clips 1000000] [--requests 50] [--reuse]
"""
from __future__ import annotations

import argparse
import os
import secrets
import statistics
import tempfile
import time
import warnings
from pathlib import Path

# Run like the tests: DEBUG off over plain http, a throwaway key, no per-user API rate limit.
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
os.environ.setdefault("REJUDGE_HTTPS", "0")
os.environ.setdefault("REJUDGE_THROTTLE_USER", "off")
warnings.filterwarnings("ignore", message="No directory at")  # whitenoise: no collectstatic for a benchmark

from _setup import copy_rows, django_for_bench, next_id, reset_sequence  # noqa: E402

LARGE, FINDING = "bench-listing-large", "bench-listing-1200x1000"
POOL_PAIRS = 200_000
OLD_QUERY_TIMEOUT_S = 60










def _dataset(name: str, n_clips: int, n_captions: int):
    """A dataset of n_clips clips (media bench/<i>.mp4) and n_captions captions, caption i written for
    clip i mod n_clips; counts kept by the same service an import uses."""
    from annotation.models import Caption, Clip, Dataset
    from annotation.services.datasets.counts import dataset_counts_add

    dataset = Dataset.objects.create(name=name, description="bench_listing.py")
    first_clip = next_id(Clip)
    copy_rows(Clip, ["id", "dataset_id", "external_id", "video_id", "media"],
          ((first_clip + i, dataset.pk, f"v{i}", f"v{i}", f"{name}/{i}.mp4") for i in range(n_clips)))
    reset_sequence(Clip)
    words = ["a", "man", "dog", "is", "running", "cooking", "in", "the", "kitchen", "park", "red", "car"]
    first_caption = next_id(Caption)
    copy_rows(Caption, ["id", "dataset_id", "external_id", "text", "original_clip_id"],
          ((first_caption + q, dataset.pk, f"q{q}", " ".join(words[(q * k) % len(words)] for k in range(1, 8)),
            first_clip + q % n_clips) for q in range(n_captions)))
    reset_sequence(Caption)
    dataset_counts_add(dataset=dataset, clips=n_clips, captions=n_captions, original_positives=n_captions)
    return dataset, first_clip, first_caption


def generate(n_clips: int) -> None:
    from django.db import connection, transaction
    from django.utils import timezone

    from annotation.models import Dataset, Pool, PooledPair, PoolMembership, Run
    from annotation.services.accounts.users import user_ensure

    t0 = time.perf_counter()
    # This database is the benchmark's own; deleting a million clips through Django's cascade
    # would load them all, so start from empty tables instead.
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {Dataset._meta.db_table} CASCADE")
    with transaction.atomic():
        _dataset(FINDING, 1_200, 1_000)
        large, first_clip, first_caption = _dataset(LARGE, n_clips, n_clips)
        for name in ("run-a", "run-b"):
            Run.objects.create(dataset=large, name=name, checksum=f"bench-listing-{name}", depth=10)
        pool = Pool.objects.create(dataset=large, name="bench pool", depth=10, redundancy=0)
        now = timezone.now()
        # Caption q is pooled with clips q and q+1: 200,000 pairs over the first 100,000 captions;
        # at least the second half of the clips stays out of the pool.
        n_pairs = min(POOL_PAIRS, n_clips)
        copy_rows(PooledPair, ["pool_id", "caption_id", "clip_id", "role", "queue_order", "created_at"],
              ((pool.pk, first_caption + p // 2, first_clip + (p // 2 + p % 2) % n_clips, "pool", p, now)
               for p in range(n_pairs)))
        rater, _ = user_ensure(username="bench-listing-rater", password=secrets.token_urlsafe(12), role="rater")
        PoolMembership.objects.get_or_create(pool=pool, rater=rater)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    print(f"generated in {time.perf_counter() - t0:.0f}s: {n_clips:,} clips and captions, {n_pairs:,} pool pairs")


def _percentiles(seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return f"p50 {statistics.median(ms):8.2f} ms   p95 {p95:8.2f} ms   (n={len(ms)})"


def _timed(fn, n: int) -> list[float]:
    fn()  # warm: connection, caches, templates
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def _old_query(qs, timeout_s: int) -> str:
    """Runs a queryset of the old listing under a statement timeout; its time, or that it was cancelled."""
    from django.db import OperationalError, connection, transaction

    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(f"SET LOCAL statement_timeout = '{timeout_s}s'")
            t = time.perf_counter()
            list(qs)
            return f"{(time.perf_counter() - t) * 1000:10.1f} ms"
    except OperationalError as exc:
        if "statement timeout" not in str(exc):
            raise
        return f"  > {timeout_s} s (cancelled by statement_timeout)"


def measure(n_requests: int) -> None:
    from django.conf import settings
    from django.db import connection
    from django.db.models import Count, IntegerField, OuterRef, Subquery
    from django.db.models.functions import Coalesce
    from django.test import Client

    from annotation.models import Caption, Clip, Dataset, PooledPair
    from annotation.selectors.media import media_access_query, media_file_visible
    from annotation.services.accounts.users import user_ensure

    large, finding = Dataset.objects.get(name=LARGE), Dataset.objects.get(name=FINDING)
    print(f"PostgreSQL database {connection.settings_dict['NAME']}: {Dataset.objects.count()} datasets; "
          f"{large.name}: {large.clip_count:,} clips, {large.caption_count:,} captions; "
          f"{finding.name}: {finding.clip_count:,} x {finding.caption_count:,}")

    print("\nBEFORE: the old listing queries, by hand, one dataset at a time")

    def old_api(dataset):  # api/views/datasets.py before: COUNT(DISTINCT) over one clips x captions join
        return Dataset.objects.filter(pk=dataset.pk).annotate(
            n_clips=Count("clips", distinct=True), n_captions=Count("captions", distinct=True))

    def count_of(model):  # selectors/dashboard.py before: a correlated COUNT per table
        rows = model.objects.filter(dataset=OuterRef("pk")).order_by().values("dataset").annotate(n=Count("pk")).values("n")
        return Coalesce(Subquery(rows, output_field=IntegerField()), 0)

    def old_overview(dataset):
        return Dataset.objects.filter(pk=dataset.pk).annotate(n_clips=count_of(Clip), n_captions=count_of(Caption))

    for dataset in (finding, large):
        label = f"{dataset.clip_count:,} x {dataset.caption_count:,}"
        print(f"  API join, {label:<22}{_old_query(old_api(dataset), OLD_QUERY_TIMEOUT_S)}")
        print(f"  overview subqueries, {label:<12}{_old_query(old_overview(dataset), OLD_QUERY_TIMEOUT_S)}")

    print(f"\nAFTER: whole requests through Django's test client, {n_requests} each (both datasets listed)")
    admin, _ = user_ensure(username="bench-listing-admin", password=secrets.token_urlsafe(12), role="admin")
    researcher, _ = user_ensure(username="bench-listing-researcher", password=secrets.token_urlsafe(12), role="researcher")
    as_admin, as_researcher = Client(), Client()
    as_admin.force_login(admin)
    as_researcher.force_login(researcher)

    def get(client, url):
        def call():
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)
        return call

    print(f"  GET /api/v1/datasets/ (researcher)   {_percentiles(_timed(get(as_researcher, '/api/v1/datasets/'), n_requests))}")
    print(f"  GET /admin-ui/ (admin overview)      {_percentiles(_timed(get(as_admin, '/admin-ui/'), n_requests))}")
    print(f"  GET / (researcher home)              {_percentiles(_timed(get(as_researcher, '/'), n_requests))}")
    print(f"  GET /admin-ui/datasets/<large>/      {_percentiles(_timed(get(as_admin, f'/admin-ui/datasets/{large.pk}/'), n_requests))}")

    print(f"\nMEDIA: the /media/ access check for a rater, {n_requests * 4} calls each")
    rater = user_ensure(username="bench-listing-rater", password="x", role="rater")[0]
    pooled = PooledPair.objects.filter(pool__dataset=large).order_by("pk").values_list("clip__media", flat=True).first()
    outside = f"{LARGE}/{large.clip_count - 1}.mp4"  # the last clip: in no pool
    for label, path, expected in (("a clip of the rater's pool", pooled, True), ("a clip in no pool", outside, False)):
        assert media_file_visible(user=rater, path=path) is expected
        times = _timed(lambda p=path: media_file_visible(user=rater, path=p), n_requests * 4)
        print(f"  {label:<30}{_percentiles(times)}")
    sql, params = media_access_query(user=rater, path=pooled)
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) " + sql, params)
        plan = [row[0] for row in cursor.fetchall()]
    print("  plan: " + "\n        ".join(plan))

    # A whole Range request through the view, with the file on disk.
    media_root = Path(tempfile.mkdtemp(prefix="bench-listing-media-"))
    (media_root / pooled).parent.mkdir(parents=True, exist_ok=True)
    (media_root / pooled).write_bytes(os.urandom(1 << 20))
    settings.MEDIA_ROOT = media_root
    as_rater = Client()
    as_rater.force_login(rater)

    def range_request():
        response = as_rater.get(f"/media/{pooled}", HTTP_RANGE="bytes=0-65535")
        assert response.status_code == 206, response.status_code
        b"".join(response.streaming_content)

    print(f"  GET /media/<pooled clip> Range 64 KB  {_percentiles(_timed(range_request, n_requests * 4))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clips", type=int, default=1_000_000, help="Clips (and captions) of the large dataset.")
    parser.add_argument("--requests", type=int, default=50, help="Timed requests per page.")
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--reuse", action="store_true", help="Keep the data of an earlier run instead of generating.")
    args = parser.parse_args()
    django_for_bench(args.database_url, "rejudge_bench_listing")
    from annotation.models import Dataset

    if not args.reuse or not Dataset.objects.filter(name__in=[LARGE, FINDING]).count() == 2:
        generate(args.clips)
    measure(args.requests)


if __name__ == "__main__":
    main()
