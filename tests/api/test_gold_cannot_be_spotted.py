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
from annotation.services.queue.leases import item_id_for
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
    log is emptied first and the count taken before the next request.

    A hot statement's PREPARE (annotation/prepared.py) is not counted: it is sent once per database
    connection, the first time any request of any rater runs that statement, so it falls on
    whichever pair happens to come first (a gold one about one run in four, which failed the test),
    and a web worker's connection serves everyone's requests."""

    def __enter__(self):
        reset_queries()
        return super().__enter__()

    def __exit__(self, *exc):
        super().__exit__(*exc)
        self.count = sum(1 for q in self.captured_queries
                         if "SAVEPOINT" not in q["sql"] and q["sql"] not in ("BEGIN", "BEGIN IMMEDIATE", "COMMIT")
                         and not q["sql"].startswith("PREPARE "))


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


def gold_and_pool(n_captions: int = 40, gold_rate: float = 0.3):
    """A pool of 240 pairs with 40 gold pairs that repeat none of them (offset 7 is outside every
    run's ranks), so the twin rule leaves every gold pair free to hand out."""
    pool, _ = make_pool_with_runs(captions=n_captions, clips=14, depth=5, gold_rate=gold_rate)
    known_pairs_add(pool=pool, items=[{"caption": f"q{q}", "clip": f"v{(q + 7) % 14 + 1}", "answer": "relevant",
                                       "role": "gold"} for q in range(1, n_captions + 1)])
    rater = make_rater()
    memberships_grant(pool=pool, users=[rater])
    return pool, rater


def returns_by_item(sequence: list[str]) -> dict[str, tuple[int, float]]:
    """Per item shown: how often it came back, and how many hand-outs later it first came back
    (infinity: never), the two things a rater cycling the queue can count."""
    first_seen, first_return, count = {}, {}, {}
    for position, item in enumerate(sequence):
        count[item] = count.get(item, 0) + 1
        if item in first_seen:
            first_return.setdefault(item, position - first_seen[item])
        else:
            first_seen[item] = position
    return {item: (count[item] - 1, first_return.get(item, float("inf"))) for item in count}


def assert_gold_blends_in(returns: dict, gold_items: set) -> None:
    gold = [returns[item] for item in returns if item in gold_items]
    pooled = [returns[item] for item in returns if item not in gold_items]
    assert len(gold) >= 5 and len(pooled) >= 5, (len(gold), len(pooled))
    for measure, index in (("times it came back", 0), ("hand-outs until it came back", 1)):
        separation = auc([g[index] for g in gold], [p[index] for p in pooled])
        assert 0.35 <= separation <= 0.65, (measure, separation, gold, pooled)


@pytest.mark.parametrize("give_back", ["release", "skip"])
def test_cycling_next_and_giving_back_shows_gold_no_more_and_no_sooner_than_pool_pairs(give_back):
    """Issue 22, finding 1: pool pairs came out in a fixed order and gold at random, so a rater who
    cycled next/release saw the same pool pair again and again (55 times in 60), and the only
    other items were the gold pairs. 200 cycles through the API: `release` gives the pair back at
    once; `skip` asks for the next pair while holding it (as the page's preload does), then gives
    back the one skipped."""
    pool, rater = gold_and_pool()
    c = APIClient()
    c.force_authenticate(rater)
    shown, held = [], None
    for cycle in range(200):
        exclude = [held["lease_id"]] if give_back == "skip" and held else []
        body = c.post(f"/api/v1/pools/{pool.pk}/next/", {"exclude": exclude}, format="json").json()
        if body["assignment"] is None:
            assert body["reason"] == "no_work_left", body
            break
        a = body["assignment"]
        shown.append(a["item_id"])
        if give_back == "release":
            assert c.post(f"/api/v1/leases/{a['lease_id']}/release/").status_code == 204
        elif held:
            assert c.post(f"/api/v1/leases/{held['lease_id']}/release/").status_code == 204
        held = a
    assert len(shown) >= 150, len(shown)
    gold_items = {item_id_for("pair", pk) for pk in PooledPair.objects.filter(pool=pool, role="gold").values_list("pk", flat=True)}
    assert gold_items & set(shown) and set(shown) - gold_items
    assert_gold_blends_in(returns_by_item(shown), gold_items)
    # A pair given back does not come straight back to the same rater, gold or not.
    assert len(shown) == len(set(shown)), [item for item in set(shown) if shown.count(item) > 1][:5]


def test_past_the_end_of_the_pool_given_back_gold_and_pool_pairs_come_back_alike():
    """A pair given back comes back to the rater only once nothing else is left for them, then the
    one given back longest ago first, gold or pool: a rater releasing everything for three times
    the pool's size sees gold come back as often and as soon as pool pairs. (Any rule that brings
    given-back pairs back by kind, e.g. after a time, returned gold later than pool pairs: gold is
    drawn at the gold rate, pool pairs at the rest.)"""
    from annotation.services.queue.leases import lease_next, lease_release

    pool, rater = gold_and_pool(n_captions=12)
    items = PooledPair.objects.filter(pool=pool).exclude(role="training").count()
    rng = random.Random(3)
    shown = []
    for cycle in range(3 * items):
        lease = lease_next(pool=pool, rater=rater, rng=rng).lease
        assert lease is not None, cycle
        shown.append(item_id_for("pair", lease.pair_id))
        lease_release(token=lease.token, rater=rater)
    assert set(shown) == {item_id_for("pair", pk) for pk in PooledPair.objects.filter(pool=pool).values_list("pk", flat=True)}
    gold_items = {item_id_for("pair", pk) for pk in PooledPair.objects.filter(pool=pool, role="gold").values_list("pk", flat=True)}
    returns = returns_by_item(shown)
    assert min(count for count, _ in returns.values()) >= 1  # everything came back
    assert_gold_blends_in(returns, gold_items)
    # Nothing came back before every pair had been shown once.
    assert len(set(shown[:items])) == items
