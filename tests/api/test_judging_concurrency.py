"""40 raters at once on a bandit-ordered pool with redundancy and stopping rules, on PostgreSQL,
through the REST API: the queue's guarantees hold exactly while every label rewrites its query's
order and may stop it.

Checked while the raters work (a watcher reads the pairs over and over) and at the end: never
more holders than labels needed (active_leases + vote_count <= required_labels), no rater labels
a pair twice, every acknowledged label is stored once, every pair ends with the labels it needs
(resolved, disputed, escalated, set aside) or stopped untouched by its query's rule, and no
request failed (a deadlock would be a 500 on a label).
"""
from __future__ import annotations

import threading
import time
import uuid

import pytest
from django.db import connection

from annotation.models import Caption, Clip, Dataset, Label, Lease, PooledPair, PoolQuery, Prediction, Run
from annotation.services.pools.build import pool_create
from tests.api.test_queue_concurrency import make_raters, run_raters

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CAPTIONS, DEPTH, RUNS = 150, 6, 3


def build_bandit_pool():
    dataset = Dataset.objects.create(name=f"judging-conc-{uuid.uuid4().hex[:6]}")
    clips = Clip.objects.bulk_create([Clip(dataset=dataset, external_id=f"v{i}", video_id=f"v{i}") for i in range(400)])
    captions = Caption.objects.bulk_create([Caption(dataset=dataset, external_id=f"q{i}", text=f"caption {i}")
                                            for i in range(CAPTIONS)])
    runs = []
    for r in range(RUNS):
        run = Run.objects.create(dataset=dataset, name=f"run{r}", checksum=uuid.uuid4().hex, depth=DEPTH)
        # Runs overlap in part (offset r*2), so one label updates several runs' posteriors.
        Prediction.objects.bulk_create([Prediction(run=run, caption=c, clip=clips[(i * 7 + k + 2 * r) % 400], rank=k + 1,
                                                   score=-k) for i, c in enumerate(captions) for k in range(DEPTH)])
        runs.append(run)
    return pool_create(dataset=dataset, name="bandit", runs=runs, depth=DEPTH, redundancy=0.3, seed=4, lease_seconds=300,
                       broken_reports_limit=2,
                       judging={"strategy": "bandit", "warmup_depth": 1, "stop_misses_in_a_row": 4})


def watch(pool, stop: threading.Event, seen: list) -> None:
    """Reads every pair's counters in one statement (one snapshot), again and again."""
    try:
        while not stop.is_set():
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT COUNT(*) FROM {PooledPair._meta.db_table} WHERE pool_id = %s "
                               "AND active_leases + vote_count > required_labels", [pool.pk])
                seen.append(cursor.fetchone()[0])
            time.sleep(0.05)
    finally:
        connection.close()


def test_forty_raters_on_a_bandit_pool_keep_every_guarantee(require_postgres):
    pool = build_bandit_pool()
    total = PooledPair.objects.filter(pool=pool).count()
    assert total == CAPTIONS * (DEPTH + 2 * (RUNS - 1))  # 1,500: each run shifts the last by two ranks
    raters = make_raters(pool, 40)
    stop, seen = threading.Event(), []
    watcher = threading.Thread(target=watch, args=(pool, stop, seen))
    watcher.start()
    try:
        acknowledged = run_raters(pool, raters)
    finally:
        stop.set()
        watcher.join()
    assert seen and not any(seen), "a pair had more holders than the labels it needs"

    pairs = list(PooledPair.objects.filter(pool=pool))
    states = {p.state for p in pairs}
    assert states <= {"resolved", "adjudication", "disagreement", "set_aside", "stopped"}, states
    labels = list(Label.objects.filter(pair__pool=pool).values("pair_id", "rater_id", "client_id", "counted"))
    votes = {}
    for label in labels:
        votes[label["pair_id"]] = votes.get(label["pair_id"], 0) + label["counted"]
    for pair in pairs:
        assert votes.get(pair.pk, 0) == pair.vote_count <= pair.required_labels, pair.pk
        assert pair.active_leases == 0
        if pair.state == "resolved":
            assert pair.vote_count == pair.required_labels
        if pair.state == "stopped":
            # Only untouched pairs stop; a started one is finished first.
            assert pair.vote_count == 0 and not pair.available
    assert len({(l["pair_id"], l["rater_id"]) for l in labels}) == len(labels)  # nobody labels a pair twice
    stored = {(l["rater_id"], l["client_id"]) for l in labels}
    assert {(r, c) for r, c, _ in acknowledged} <= stored  # every acknowledged label kept
    assert not Lease.objects.filter(pair__pool=pool, state="active").exists()

    # The strategy's bookkeeping agrees with the pairs: per query, judged and relevant counts,
    # and a stopped query is one whose rule fired (4 misses in a row at the end of its judgments).
    queries = {q.caption_id: q for q in PoolQuery.objects.filter(pool=pool)}
    assert len(queries) == CAPTIONS
    stopped_queries = [q for q in queries.values() if q.stopped_reason]
    assert stopped_queries and all(q.stopped_reason == "misses_in_a_row" for q in stopped_queries)
    for caption_id, query in queries.items():
        mine = [p for p in pairs if p.caption_id == caption_id]
        judged = [p for p in mine if p.state in ("resolved", "disagreement")]
        assert query.judged == len(judged), caption_id
        assert query.relevant == sum(p.state == "resolved" and p.resolved_label == "relevant" for p in judged)
        if any(p.state == "stopped" for p in mine):
            assert query.stopped_reason
        if query.stopped_reason:
            # Pairs started before the stop are finished after it, so the run of misses that
            # stopped it may be followed by other judgments; it must be there.
            hits = "".join("r" if p.state == "resolved" and p.resolved_label == "relevant" else "m"
                           for p in sorted(judged, key=lambda p: (p.judged_at, p.pk)))
            assert "mmmm" in hits, (caption_id, hits)
    assert len({l["rater_id"] for l in labels}) == 40
