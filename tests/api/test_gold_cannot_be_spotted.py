"""Issue 12, finding 2: nothing a rater can see tells gold pairs from pool pairs.

A rater works a pool with gold mixed in through the API, the way a script would, and records
everything the responses show (ids, fields, values, statuses, how progress moves, and as a
stand-in for response time the number of SQL statements each request runs). Only afterwards does
the test look up which pairs were gold. Before the fix, sequential pair ids separated them
perfectly (every gold id above every pool id) and `counted: false` marked every gold answer."""
from __future__ import annotations

import random

import pytest
from django.core.cache import cache
from django.db import connection, reset_queries
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from annotation.models import Lease, PooledPair
from annotation.services.pools.build import known_pairs_add
from annotation.services.accounts.raters import memberships_grant
from tests.factories import make_pool_with_runs, make_rater

pytestmark = pytest.mark.django_db


def shape(value):
    """The structure of a response with the content (texts, ids, times) taken out."""
    if isinstance(value, dict):
        return tuple(sorted((key, shape(item)) for key, item in value.items()))
    if isinstance(value, list):
        return ("list", len(value))
    return type(value).__name__


class Statements(CaptureQueriesContext):
    """Counts the statements of one request, read at once on exit. The test client's
    request_started signal empties the query log and captured_queries reads the live log, so the
    log is emptied first and the count taken before the next request."""

    def __enter__(self):
        reset_queries()
        return super().__enter__()

    def __exit__(self, *exc):
        super().__exit__(*exc)
        self.count = sum(1 for q in self.captured_queries
                         if "SAVEPOINT" not in q["sql"] and q["sql"] not in ("BEGIN", "BEGIN IMMEDIATE", "COMMIT"))


def auc(scores_positive: list, scores_negative: list) -> float:
    """Probability that a random gold item sorts after a random pool item (0.5 = chance)."""
    wins = sum((p > n) + 0.5 * (p == n) for p in scores_positive for n in scores_negative)
    return wins / (len(scores_positive) * len(scores_negative))


def test_a_rater_cannot_tell_gold_from_pool_pairs():
    pool, _ = make_pool_with_runs(captions=12, clips=14, depth=5, gold_rate=0.3)
    # Known pairs are added after the pool is built, as admins do: their database ids are the highest.
    known_pairs_add(pool=pool, items=[{"caption": f"q{q}", "clip": f"v{(q + 7) % 14 + 1}", "answer": "relevant",
                                       "role": "gold"} for q in range(1, 13)])
    rater = make_rater()
    memberships_grant(pool=pool, users=[rater])
    c = APIClient()
    c.force_authenticate(rater)
    progress_url = f"/api/v1/pools/{pool.pk}/my-progress/"
    seen = []
    left = c.get(progress_url).json()["left_for_you"]
    rng = random.Random(7)
    while True:
        # The every-few-seconds sweep of overdue leases would add statements at random moments.
        cache.set(f"lazy-expiry:{pool.pk}", 1, 3600)
        with Statements(connection) as next_queries:
            response = c.post(f"/api/v1/pools/{pool.pk}/next/", {}, format="json")
        body = response.json()
        if body["assignment"] is None:
            assert body["reason"] == "no_work_left"
            break
        a = body["assignment"]
        with Statements(connection) as beat_queries:
            beat = c.post(f"/api/v1/leases/{a['lease_id']}/heartbeat/")
        with Statements(connection) as submit_queries:
            submitted = c.post("/api/v1/labels/", {"client_id": f"c{len(seen)}", "lease_id": a["lease_id"],
                                                   "value": rng.choice(["relevant", "not_relevant"]), "seconds": 2.0},
                               format="json")
        progress = c.get(progress_url).json()
        seen.append({
            "lease_id": a["lease_id"], "item_id": a["item_id"],
            "signature": (response.status_code, shape(body), a["mode"], next_queries.count,
                          beat.status_code, shape(beat.json()), beat_queries.count,
                          submitted.status_code, shape(submitted.json()), submitted.json()["feedback"],
                          submit_queries.count, left - progress["left_for_you"]),
        })
        left = progress["left_for_you"]
    mine = {entry["item_id"]: entry for entry in c.get("/api/v1/my/labels/?limit=1000").json()["results"]}

    # Only now: which were gold?
    for entry in seen:
        entry["gold"] = Lease.objects.get(token=entry["lease_id"]).pair.role == PooledPair.Role.GOLD
    gold = [e for e in seen if e["gold"]]
    pool_side = [e for e in seen if not e["gold"]]
    assert len(gold) >= 6 and len(pool_side) >= 30, (len(gold), len(pool_side))

    # Every field, value, status and statement count a gold pair showed, some pool pair showed too,
    # and every answer moved "left for you" by exactly one.
    pool_signatures = {e["signature"] for e in pool_side}
    assert {e["signature"] for e in gold} <= pool_signatures
    assert {e["signature"][-1] for e in seen} == {1}
    assert len({shape(entry) for entry in mine.values()}) == 1 and "counted" not in next(iter(mine.values()))
    assert set(mine) == {e["item_id"] for e in seen}  # stable ids: the same item in the list as in the queue

    # Ids do not sort gold apart: no better than chance (sequential pair ids gave 1.0).
    for key in ("lease_id", "item_id"):
        separation = auc([e[key] for e in gold], [e[key] for e in pool_side])
        assert 0.15 < separation < 0.85, (key, separation)
    assert not any(entry[key].isdigit() for entry in seen for key in ("lease_id", "item_id"))


def test_a_lost_lease_says_the_same_for_gold_and_pool_pairs():
    """The heartbeat's 410 used to say whether the pair still needed a label: never "no" for gold,
    often "no" for a pool pair that another rater had taken meanwhile."""
    from datetime import timedelta

    from django.utils import timezone

    from annotation.services.queue.leases import lease_next, leases_expire

    pool, _ = make_pool_with_runs(captions=1, clips=3, depth=1, runs=(("A", [("q1", ["v1"])]),))
    known_pairs_add(pool=pool, items=[{"caption": "q1", "clip": "v3", "answer": "relevant", "role": "gold"}])
    rater, other = make_rater(), make_rater()
    memberships_grant(pool=pool, users=[rater, other])
    gold = Lease.objects.create(pair=PooledPair.objects.get(pool=pool, role="gold"), rater=rater,
                                expires_at=timezone.now() + timedelta(minutes=5))
    pooled = lease_next(pool=pool, rater=rater, exclude_leases=[gold.token]).lease
    assert pooled.pair.role == "pool"
    assert leases_expire(now=timezone.now() + timedelta(hours=1)) == 2
    lease_next(pool=pool, rater=other)  # someone else takes the pool pair: it no longer needs this rater
    c = APIClient()
    c.force_authenticate(rater)
    bodies = [c.post(f"/api/v1/leases/{lease.token}/heartbeat/") for lease in (gold, pooled)]
    assert [b.status_code for b in bodies] == [410, 410]
    assert bodies[0].json() == bodies[1].json() == {"detail": "the lease has expired", "state": "expired"}
