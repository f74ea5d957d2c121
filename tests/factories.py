"""Small builders for test data (plain functions, no factory library needed)."""
from __future__ import annotations

from annotation.models import Caption, Clip, Dataset
from annotation.services.datasets.counts import dataset_counts_refresh
from annotation.services.accounts.users import user_create

_counter = [0]


def unique(prefix: str) -> str:
    _counter[0] += 1
    return f"{prefix}{_counter[0]}"


def make_user(role: str, username: str | None = None, password: str = "pw-123456"):
    return user_create(username=username or unique(role), password=password, role=role)


def make_dataset(name: str | None = None, clips: int = 5, captions: int = 3) -> Dataset:
    dataset = Dataset.objects.create(name=name or unique("ds"))
    made = [Clip.objects.create(dataset=dataset, external_id=f"v{i}", video_id=f"v{i}") for i in range(1, clips + 1)]
    for i in range(1, captions + 1):
        Caption.objects.create(dataset=dataset, external_id=f"q{i}", text=f"caption {i}", original_clip=made[(i - 1) % clips])
    dataset_counts_refresh(datasets=[dataset])  # rows made here, not by the import that keeps the counts
    return dataset


def make_rater(username: str | None = None):
    from annotation.services.accounts.raters import rater_create

    return rater_create(username=username or unique("rater"), password="pw-123456")


def make_pool_with_runs(*, captions: int = 4, clips: int = 6, depth: int = 3, redundancy: float = 0.0, seed: int = 0,
                        runs: tuple[tuple[str, list], ...] | None = None, **pool_options):
    """A dataset, runs (each a list of (caption, [clips in rank order])) and a pool over them.

    Default: two runs over `captions` captions ranking `depth` clips each, partly overlapping.
    """
    from annotation.models import Prediction, Run
    from annotation.services.pools.build import pool_create

    dataset = make_dataset(clips=clips, captions=captions)
    caption_by_ext = {c.external_id: c for c in dataset.captions.all()}
    clip_by_ext = {c.external_id: c for c in dataset.clips.all()}
    if runs is None:
        runs = (
            ("A", [(f"q{q}", [f"v{(q + r) % clips + 1}" for r in range(depth)]) for q in range(1, captions + 1)]),
            ("B", [(f"q{q}", [f"v{(q + r + 1) % clips + 1}" for r in range(depth)]) for q in range(1, captions + 1)]),
        )
    made = []
    for name, rows in runs:
        run = Run.objects.create(dataset=dataset, name=name, checksum=unique("sum"), depth=depth)
        Prediction.objects.bulk_create([
            Prediction(run=run, caption=caption_by_ext[q], clip=clip_by_ext[v], rank=r, score=1 - r / 100)
            for q, ranked in rows for r, v in enumerate(ranked, start=1)])
        made.append(run)
    pool = pool_create(dataset=dataset, name=unique("pool"), runs=made, depth=depth, redundancy=redundancy, seed=seed,
                       **pool_options)
    return pool, made


def lease_pair_for(rater, pair, *, seconds: int = 300):
    """A live lease on exactly this pair, as the queue would hand it out (a pool pair counts the
    lease). Tests that need a given rater to label a given pair use it: the queue itself decides
    which pair comes next, and labels are only taken through a lease."""
    from datetime import timedelta

    from django.db import transaction
    from django.utils import timezone

    from annotation.models import Lease, PooledPair
    from annotation.services.queue.leases import PAIR_FLAG_FIELDS, refresh_pair_flags

    with transaction.atomic():
        locked = PooledPair.objects.select_for_update().get(pk=getattr(pair, "pk", pair))
        lease = Lease.objects.create(pair=locked, rater=rater, expires_at=timezone.now() + timedelta(seconds=seconds))
        if locked.role == PooledPair.Role.POOL:
            locked.active_leases += 1
            refresh_pair_flags(locked)
            locked.save(update_fields=PAIR_FLAG_FIELDS)
    return lease


def label_pair(rater, pair, value: str, **options):
    """Leases `pair` to `rater` and submits `value` through that lease (label_submit's rules)."""
    from annotation.services.queue.labels import label_submit

    lease = lease_pair_for(rater, pair)
    return label_submit(rater=rater, client_id=options.pop("client_id", None) or unique("c"), lease=lease.token,
                        value=value, **options)


def lease_task_for(rater, task, *, seconds: int = 600):
    """The rater's most recent lease on this ranking task, or a new live one as the queue would
    hand it out (counted on the task). Orderings are only taken through a lease."""
    from datetime import timedelta

    from django.db import transaction
    from django.utils import timezone

    from annotation.models import RankingLease, RankingTask
    from annotation.services.ranking.leases import TASK_FLAG_FIELDS, refresh_task_flags

    held = RankingLease.objects.filter(rater=rater, task_id=task.pk).order_by("-created_at", "-pk").first()
    if held is not None:
        return held
    with transaction.atomic():
        locked = RankingTask.objects.select_for_update().get(pk=task.pk)
        lease = RankingLease.objects.create(task=locked, rater=rater, expires_at=timezone.now() + timedelta(seconds=seconds))
        locked.active_leases += 1
        refresh_task_flags(locked)
        locked.save(update_fields=TASK_FLAG_FIELDS)
    return lease


def label_statements(rater, pool, labels: int, client_prefix: str) -> list[list[str]]:
    """The SQL each of `labels` judged labels sends through the API (the rater's token; the next
    pair is asked for first and not counted), without transaction control: one list per label.
    The statement-budget tests of the queue read it."""
    from django.db import connection, reset_queries
    from django.test.utils import CaptureQueriesContext
    from rest_framework.test import APIClient

    from annotation.services.accounts.users import api_token_for

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_for(user=rater)}")
    out = []
    for n in range(labels):
        assignment = client.post(f"/api/v1/pools/{pool.pk}/next/", {}, format="json").json()["assignment"]
        assert assignment is not None, f"no pair for label {n + 1} of {labels}"
        reset_queries()
        with CaptureQueriesContext(connection) as captured:
            response = client.post("/api/v1/labels/", {"client_id": f"{client_prefix}{n}",
                                                         "lease_id": assignment["lease_id"], "value": "relevant"},
                                    format="json")
        assert response.status_code == 201, response.content
        out.append([q["sql"] for q in captured.captured_queries if "SAVEPOINT" not in q["sql"]
                    and q["sql"] not in ("BEGIN", "BEGIN IMMEDIATE", "COMMIT")])
    return out
