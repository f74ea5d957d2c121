"""Many raters at once on PostgreSQL, through the REST API.

40 raters (threads, each with its own database connection) work a 5,000-pair pool until it is
done. Checked: no pair gets more labels than it needs, no rater labels a pair twice, every pair
ends resolved, escalated or disputed (or set aside), and every label the server acknowledged is in
the database exactly once, even though raters replay some submissions. Then again with raters
that vanish holding leases: the others finish those pairs once the leases expire.
"""
from __future__ import annotations

import random
import threading
import time
import uuid

import pytest
from django.db import connection
from rest_framework.test import APIClient

from annotation.models import Caption, Clip, Dataset, Label, Lease, PooledPair, Prediction, Run
from annotation.services.pools.build import pool_create
from annotation.services.queue.leases import item_id_for
from annotation.services.accounts.raters import memberships_grant, rater_create

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CAPTIONS, DEPTH = 500, 10  # 5,000 distinct pairs


def build_pool(*, lease_seconds: int, redundancy: float = 0.1):
    dataset = Dataset.objects.create(name=f"conc-{uuid.uuid4().hex[:6]}")
    clips = Clip.objects.bulk_create([Clip(dataset=dataset, external_id=f"v{i}", video_id=f"v{i}") for i in range(600)])
    captions = Caption.objects.bulk_create([Caption(dataset=dataset, external_id=f"q{i}", text=f"caption {i}",
                                                    original_clip=clips[i]) for i in range(CAPTIONS)])
    run = Run.objects.create(dataset=dataset, name="r", checksum=uuid.uuid4().hex, depth=DEPTH)
    Prediction.objects.bulk_create([Prediction(run=run, caption=c, clip=clips[(i * 7 + r) % 600], rank=r + 1, score=-r)
                                    for i, c in enumerate(captions) for r in range(DEPTH)])
    pool = pool_create(dataset=dataset, name="p", runs=[run], depth=DEPTH, redundancy=redundancy, seed=11,
                       lease_seconds=lease_seconds, broken_reports_limit=2)
    assert pool.pairs.count() == CAPTIONS * DEPTH
    return pool


def make_raters(pool, n):
    raters = [rater_create(username=f"r{uuid.uuid4().hex[:8]}", password="pw-123456") for _ in range(n)]
    memberships_grant(pool=pool, users=raters)
    return raters


def verdict(item_id: str, rater_id: int) -> str:
    roll = random.Random(int(item_id[:12], 16) * 1_000_003 + rater_id).random()
    if roll < 0.01:
        return "ambiguous"
    if roll < 0.016:
        return "broken"
    return "relevant" if roll < 0.55 else "not_relevant"


def work(pool, rater, acknowledged, errors, deadline, *, vanish_after=None):
    client = APIClient()
    client.force_authenticate(rater)
    rng = random.Random(rater.pk)
    done = 0
    try:
        while time.monotonic() < deadline:
            response = client.post(f"/api/v1/pools/{pool.pk}/next/", {}, format="json")
            if response.status_code != 200:
                errors.append(f"next -> {response.status_code} {response.content[:200]}")
                return
            body = response.json()
            if body["assignment"] is None:
                if body["reason"] != "no_work_left":
                    errors.append(f"unexpected reason {body['reason']}")
                    return
                # Pairs held by vanished raters come back when their leases expire.
                if not PooledPair.objects.filter(pool=pool, state="open").exists():
                    return
                time.sleep(0.3)
                continue
            if vanish_after is not None and done >= vanish_after:
                return  # walks away holding the lease
            item_id = body["assignment"]["item_id"]
            sent = {"client_id": uuid.uuid4().hex, "lease_id": body["assignment"]["lease_id"],
                    "value": verdict(item_id, rater.pk), "seconds": 1.0}
            for attempt in range(2 if rng.random() < 0.1 else 1):  # some raters' pages retry
                reply = client.post("/api/v1/labels/", sent, format="json")
                if reply.status_code not in (200, 201):
                    errors.append(f"label -> {reply.status_code} {reply.content[:200]}")
                    return
                acknowledged.append((rater.pk, sent["client_id"], reply.json()["label"]["item_id"]))
            done += 1
        errors.append(f"rater {rater.pk} ran out of time")
    finally:
        connection.close()


def run_raters(pool, raters, *, vanishing=(), timeout=600):
    acknowledged, errors = [], []
    deadline = time.monotonic() + timeout
    threads = [threading.Thread(target=work, args=(pool, r, acknowledged, errors, deadline),
                                kwargs={"vanish_after": 3 if r in vanishing else None}) for r in raters]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:5]
    return acknowledged


def check_invariants(pool, acknowledged):
    pairs = list(PooledPair.objects.filter(pool=pool))
    states = {p.state for p in pairs}
    assert states <= {"resolved", "adjudication", "disagreement", "set_aside"}, states
    labels = list(Label.objects.filter(pair__pool=pool).values("id", "pair_id", "rater_id", "client_id", "counted", "value"))
    votes_per_pair: dict[int, int] = {}
    for label in labels:
        if label["counted"]:
            votes_per_pair[label["pair_id"]] = votes_per_pair.get(label["pair_id"], 0) + 1
    for pair in pairs:
        votes = votes_per_pair.get(pair.pk, 0)
        assert votes == pair.vote_count <= pair.required_labels <= 3, (pair.pk, votes, pair.vote_count, pair.required_labels)
        assert pair.active_leases == 0
        if pair.state == "resolved":
            assert votes == pair.required_labels
    # no rater labels a pair twice
    assert len({(l["pair_id"], l["rater_id"]) for l in labels}) == len(labels)
    # every acknowledged label is stored exactly once (replays returned the same row)
    stored = {(l["rater_id"], l["client_id"]): item_id_for("pair", l["pair_id"]) for l in labels}
    for rater_id, client_id, item_id in acknowledged:
        assert stored[(rater_id, client_id)] == item_id
    assert len(stored) == len({(r, c) for r, c, _ in acknowledged})
    assert not Lease.objects.filter(pair__pool=pool, state="active").exists()
    double = [p for p in pairs if p.required_labels >= 2]
    assert 350 < len(double) < 650  # about 10% of 5,000 need a second label
    return labels


def test_forty_raters_work_a_pool_to_the_end(require_postgres):
    pool = build_pool(lease_seconds=300)
    raters = make_raters(pool, 40)
    acknowledged = run_raters(pool, raters)
    labels = check_invariants(pool, acknowledged)
    assert len({l["rater_id"] for l in labels}) == 40  # the work was really shared
    assert PooledPair.objects.filter(pool=pool, required_labels=3).exists()  # disagreements took a third label


def test_raters_who_vanish_mid_lease(require_postgres):
    pool = build_pool(lease_seconds=2)
    raters = make_raters(pool, 40)
    vanishing = set(raters[:8])
    acknowledged = run_raters(pool, raters, vanishing=vanishing)
    check_invariants(pool, acknowledged)
    expired = Lease.objects.filter(pair__pool=pool, state="expired", rater__in=vanishing)
    assert expired.count() >= 8  # their held pairs went back to the queue and were finished by others
    for lease in expired:
        assert lease.pair.state != "open"
