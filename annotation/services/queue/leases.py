"""Handing pairs to raters: short leases, taken with SELECT ... FOR UPDATE SKIP LOCKED.

Invariants, kept in the same transaction as every change:
- a pool pair's `active_leases + vote_count <= required_labels` (never more holders than it needs);
- a rater never gets a pair they labelled or already hold (unique live lease per pair and rater);
  a pair they gave back comes back to them only when nothing else is left for them, then the one
  given back longest ago first, gold or pool alike (a pair that came straight back showed the
  queue's fixed order, and gold apart from it by its random one);
- a device (the page's random id) resumes only its own leases, so one account on two devices is
  shown different pairs, and neither device's answers are refused as "already labelled";
- training comes strictly in its order: the next training pair is the first one unanswered, and
  nothing else is handed out while it is held;
- `available` is true exactly when the pair is open and short of labels counting live leases, so
  the queue query walks one partial index in hand-out order and stays fast as the pool grows.
Locks are always taken pair first, then lease, so concurrent submits and expiries cannot deadlock.
"""
from __future__ import annotations

import functools
import hashlib
import hmac
import random
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.utils import timezone

from annotation import prepared
from annotation.analysis.votes import has_room, room_sql
from annotation.models import (Caption, Clip, CrowdStudy, CrowdWorker, Label, Lease, Pool, PooledPair, PoolMembership,
                               RaterProfile)
from annotation.models.labels import new_lease_token
from annotation.services.crowd import gate as crowd_gate
from annotation.services.queue.lease_lifecycle import LeasedItems, lease_extend, lease_give_back, leases_expire_due
from annotation.services.queue.rows import raw_first
from annotation.services.queue.table_statistics import queue_statistics_due, queue_statistics_refresh

MAX_HELD_PER_POOL = 2  # per device: the pair on screen and the next one, preloaded
MAX_DEVICES = 3  # a rater's devices holding pairs at once in a pool (more get holding_max)
LAZY_EXPIRY_EVERY = 5  # seconds


@dataclass(frozen=True)
class Assignment:
    lease: Lease | None
    reason: str | None = None  # why there is none: not_a_member, paused, training_failed, holding_max, no_work_left

    @property
    def mode(self) -> str | None:
        if self.lease is None:
            return None
        return "training" if self.lease.pair.role == PooledPair.Role.TRAINING else "production"


def item_id_for(kind: str, pk: int) -> str:
    """The stable, opaque id a rater sees for a pair or ranking task: the page needs one to tell
    work it has already answered from new work, but a sequential id would show which pairs were
    added after the pool (gold and training pairs are). Keyed by SECRET_KEY, so it cannot be
    reversed or ordered."""
    digest = hmac.new(settings.SECRET_KEY.encode(), f"{kind}:{pk}".encode(), hashlib.sha256).hexdigest()
    return digest[:24]


def min_watch_seconds(start: float | None, end: float | None, duration: float | None) -> float:
    """How long a clip must have played before a relevant / not relevant answer is taken: the
    REJUDGE MIN_WATCH_SECONDS setting, or the clip's span (or length) when that is shorter, so a
    half-second clip is not held for two. The page enforces it on play time; label_submit on the
    lease's age, which no page can shorten."""
    cap = max(0.0, float(settings.REJUDGE.get("MIN_WATCH_SECONDS", 2.0)))
    span = end - start if start is not None and end is not None and end > start else duration
    return round(min(cap, span) if span and span > 0 else cap, 2)


def pair_min_watch(pair) -> float:
    """A moment pair's own span wins over its clip's."""
    if pair.start is not None and pair.end is not None:
        return min_watch_seconds(pair.start, pair.end, None)
    clip = pair.clip
    return min_watch_seconds(clip.start, clip.end, clip.duration)


class LeaseGone(Exception):
    """The lease is no longer live (expired, completed or released)."""

    def __init__(self, lease: Lease, still_needed: bool) -> None:
        self.lease, self.still_needed = lease, still_needed
        super().__init__(f"lease {lease.pk} is {lease.state}")


def refresh_pair_flags(pair: PooledPair) -> None:
    """Recomputes the queue columns from the counters (call with the pair row locked)."""
    if pair.role != PooledPair.Role.POOL:
        pair.available, pair.priority = False, 0
        return
    pair.available = pair.state == PooledPair.State.OPEN and has_room(
        required=pair.required_labels, votes=pair.vote_count, leases=pair.active_leases)
    pair.priority = 1 if pair.vote_count > 0 else 0


PAIR_FLAG_FIELDS = ["active_leases", "available", "priority"]


# "Next pair" runs for every pair a rater judges, so its reads are plain SQL: the ORM's query
# building costs more than PostgreSQL's answer. Table names come from the models (see _sql).

# The pool, if the rater is a member, with what deciding their next pair needs, the rater's live
# leases in it included (each a lookup in lease_rater_state): the oldest one on this device that
# the page does not exclude (to resume), and how many they hold on this device and in all.
# Only the pool columns lease_next reads (the fields below; any other is loaded if asked for, as a
# deferred field): the whole row, 26 columns, cost more Python CPU to describe and convert than
# PostgreSQL spends answering (bench/bench_queue_latency.py --profile).
MAX_EXCLUDED = 10  # lease tokens a page may exclude: its screen, its preload, answers on their way
_HELD = """(SELECT <what> FROM {lease} s JOIN {pair} h ON h.id = s.pair_id
        WHERE s.rater_id = m.rater_id AND s.state = %(live)s AND h.pool_id = p.id <where>)"""
_POOL_FOR_RATER_SQL = """
SELECT <pool_fields>, m.training AS member_training,
       (SELECT r.paused FROM {profile} r WHERE r.user_id = m.rater_id) AS rater_paused,
       EXISTS (SELECT 1 FROM {pair} t WHERE t.pool_id = p.id AND t.role = %(training)s) AS has_training,
       EXISTS (SELECT 1 FROM <crowd_worker> w JOIN <crowd_study> cs ON cs.id = w.study_id
               WHERE w.user_id = m.rater_id AND cs.pool_id = p.id) AS is_crowd_worker,
       <resume> AS resume_lease_id, <held_here> AS held_here, <held_total> AS held_total
FROM {pool} p JOIN {membership} m ON m.pool_id = p.id
WHERE p.id = %(pool)s AND m.rater_id = %(rater)s
""".replace("<crowd_worker>", CrowdWorker._meta.db_table).replace("<crowd_study>", CrowdStudy._meta.db_table).replace(
    "<resume>", _HELD.replace("<what>", "s.id").replace("<where>", "AND s.device = %(device)s AND s.token NOT IN ("
                                                        + ", ".join(f"%(x{i})s" for i in range(MAX_EXCLUDED))
                                                        + ") ORDER BY s.created_at, s.id LIMIT 1")).replace(
    "<held_here>", _HELD.replace("<what>", "COUNT(*)").replace("<where>", "AND s.device = %(device)s")).replace(
    "<held_total>", _HELD.replace("<what>", "COUNT(*)").replace("<where>", "")).replace(
    "<pool_fields>", ", ".join(f"p.{Pool._meta.get_field(name).column}" for name in (
        "id", "lease_seconds", "gold_rate", "judging_stopped_reason")))


def _pool_for_rater(pool_id: int, rater, device: str, excluded: list[str]) -> Pool | None:
    if len(excluded) > MAX_EXCLUDED:
        raise ValueError(f"at most {MAX_EXCLUDED} leases can be excluded")
    padding = [""] * (MAX_EXCLUDED - len(excluded))  # no lease token is empty
    params = {"pool": pool_id, "rater": rater.pk, "training": PooledPair.Role.TRAINING, "live": Lease.State.ACTIVE,
              "device": device, **{f"x{i}": token for i, token in enumerate(excluded + padding)}}
    return raw_first(Pool, _sql(_POOL_FOR_RATER_SQL), params, inline=("training", "live"))

# A pair with the caption and clip the judging screen shows.
_PAIR_FOR_DISPLAY_SQL = """
SELECT pp.*, c.text AS caption_text, v.external_id AS clip_external_id, v.media AS clip_media,
       v.start AS clip_start, v."end" AS clip_end, v.duration AS clip_duration
FROM {pair} pp JOIN {caption} c ON c.id = pp.caption_id JOIN {clip} v ON v.id = pp.clip_id
WHERE pp.id = %(pair)s
"""


@functools.cache
def _sql(template: str) -> str:
    return template.format(pool=Pool._meta.db_table, pair=PooledPair._meta.db_table, lease=Lease._meta.db_table,
                           label=Label._meta.db_table, membership=PoolMembership._meta.db_table,
                           profile=RaterProfile._meta.db_table, caption=Caption._meta.db_table,
                           clip=Clip._meta.db_table, lock="{lock}")


def pair_for_display(pair_id: int) -> PooledPair:
    """The pair with its caption and clip attached, read in one query."""
    pair = raw_first(PooledPair, _sql(_PAIR_FOR_DISPLAY_SQL), {"pair": pair_id})
    pair.caption = Caption(pk=pair.caption_id, text=pair.caption_text)
    pair.clip = Clip(pk=pair.clip_id, external_id=pair.clip_external_id, media=pair.clip_media, start=pair.clip_start,
                     end=pair.clip_end, duration=pair.clip_duration)
    return pair


def lease_next(*, pool: Pool | int, rater, device: str = "", exclude_leases=(), now=None,
               rng: random.Random | None = None) -> Assignment:
    """The rater's next pair in this pool (a Pool or its id), leased to them for the pool's lease time.

    Pairs the rater already holds on this `device` come back first (a reloaded page resumes),
    except those whose lease tokens are in `exclude_leases` (the ones the client is already showing
    or preloading); another device's leases never do. This runs on every "next" a rater asks for,
    so it reads what it needs in few, plain queries."""
    now = now or timezone.now()
    pool_id = pool.pk if isinstance(pool, Pool) else pool
    excluded = list(dict.fromkeys(exclude_leases))
    pool = _pool_for_rater(pool_id, rater, device, excluded)
    if pool is None:
        return Assignment(None, "not_a_member")
    if pool.rater_paused:
        return Assignment(None, "paused")
    if queue_statistics_due():
        queue_statistics_refresh()  # see table_statistics: plans made for near-empty tables
    # Lazily, but at most every few seconds per pool and process: the periodic job does the rest.
    if cache.add(f"lazy-expiry:{pool.pk}", 1, timeout=LAZY_EXPIRY_EVERY) and leases_expire(now=now, pool=pool, limit=50):
        pool = _pool_for_rater(pool_id, rater, device, excluded)  # the rater's own leases may be among them

    if pool.resume_lease_id is not None:
        renewed = Lease.objects.filter(pk=pool.resume_lease_id, state=Lease.State.ACTIVE).update(
            expires_at=now + timedelta(seconds=pool.lease_seconds))
        if renewed:
            return Assignment(Lease.objects.select_related("pair__caption", "pair__clip").get(pk=pool.resume_lease_id))
    if pool.held_here >= MAX_HELD_PER_POOL or pool.held_total >= MAX_HELD_PER_POOL * MAX_DEVICES:
        return Assignment(None, "holding_max")
    # A crowd worker (None for everyone else) gets new work only within their study's quota.
    crowd_worker = crowd_gate.crowd_worker_in_pool(pool_id=pool.pk, rater=rater) if pool.is_crowd_worker else None
    if crowd_worker and (refusal := crowd_gate.crowd_quota_refusal(worker=crowd_worker, now=now)):
        return Assignment(None, refusal)

    if pool.member_training != PoolMembership.Training.PASSED and pool.has_training:
        if pool.member_training == PoolMembership.Training.FAILED:
            return Assignment(None, "training_failed")
        lease = _claim_training_pair(pool, rater, device, now)
        return Assignment(lease, None if lease else "training_pending")

    if pool.judging_stopped_reason:
        # The pool's judging budget is spent (services/judging): nothing new until an admin
        # resumes it. The pairs' states say so too, but that sweep skips rows locked at the time.
        return Assignment(None, "no_work_left")
    rng = rng or random.Random()
    if pool.gold_rate > 0 and rng.random() < pool.gold_rate:
        lease = _claim_gold_pair(pool, rater, device, now)
        if lease:
            return _unless_crowd_overrun(crowd_worker, lease, now)
    lease = _claim_pool_pair(pool, rater, device, now) or _claim_given_back(pool, rater, device, now)
    if lease:
        return _unless_crowd_overrun(crowd_worker, lease, now)
    return Assignment(None, "no_work_left")


def _unless_crowd_overrun(crowd_worker, lease: Lease, now) -> Assignment:
    if crowd_worker and crowd_gate.crowd_quota_overrun(worker=crowd_worker, lease=lease):
        lease_release(token=lease.token, rater=crowd_worker.user, now=now)
        return Assignment(None, crowd_gate.QUOTA_REACHED)
    return Assignment(lease)


# Takes the first available pair the rater has neither labelled, holds nor gave back (_NOT_MINE;
# nor answered or holds as the pair's gold twin: see _GOLD_TWIN_SEEN), in hand-out order, and
# counts the new lease on it, in one statement. `available` is recomputed from the old counters
# (SQL evaluates SET from the row before the update) exactly as refresh_pair_flags does. On
# PostgreSQL the inner SELECT locks the row it picks ({lock}); SQLite has one writer at a time.
_CLAIM_SQL = """
UPDATE {pair} SET active_leases = active_leases + 1,
                  available = {room_after_claim}
WHERE id = (
    SELECT p.id FROM {pair} p
    WHERE p.pool_id = %(pool)s AND p.role = %(role)s AND p.available
      {not_mine}
      AND NOT EXISTS (SELECT 1 FROM {pair} k WHERE k.pool_id = p.pool_id AND k.role = %(gold)s
                        AND k.caption_id = p.caption_id AND k.clip_id = p.clip_id AND (
                          EXISTS (SELECT 1 FROM {label} l WHERE l.pair_id = k.id AND l.rater_id = %(rater)s)
                          OR EXISTS (SELECT 1 FROM {lease} s WHERE s.pair_id = k.id AND s.rater_id = %(rater)s AND s.state = %(live)s)))
    ORDER BY p.priority DESC, p.queue_order
    LIMIT 1 {lock})
  AND available
RETURNING id
""".replace("{room_after_claim}", room_sql(extra_leases=1))


# On PostgreSQL a pair is picked (claimed, for a pool pair: counted as held), leased, and read with
# the caption and clip the screen shows, in one statement and one transaction: {pick} is a
# statement that yields the pair's whole row (an UPDATE ... RETURNING: the row as the claim left
# it, since the outer query's snapshot would show it as before). Three statements and two
# transactions before; each statement is planned anew, and planning costs PostgreSQL more CPU
# than running these. SQLite (no INSERT in a WITH) keeps the separate statements.
# Of the pair, what the assignment shows and the queue reads after the pick (its role: training or
# production, a crowd quota); any other field loads on demand, as a deferred field. All 25 columns
# cost more Python CPU to describe and convert than PostgreSQL spends on the statement.
_PAIR_SHOWN = [f for f in PooledPair._meta.concrete_fields
               if f.name in ("id", "pool", "caption", "clip", "role", "state", "start", "end")]
_PAIR_COLUMNS = [f.column for f in _PAIR_SHOWN]
_LEASE_AND_SHOW_SQL = """
WITH picked AS ({pick}),
leased AS (
  INSERT INTO {lease} (pair_id, rater_id, token, state, device, created_at, expires_at)
  SELECT picked.id, %(rater)s, %(token)s, %(live)s, %(device)s, %(created)s, %(expires)s FROM picked
  RETURNING id, pair_id, created_at)
SELECT leased.id, leased.created_at, <pair_columns>,
       c.text, v.external_id, v.media, v.start, v."end", v.duration
FROM leased JOIN picked pp ON pp.id = leased.pair_id
     JOIN {caption} c ON c.id = pp.caption_id JOIN {clip} v ON v.id = pp.clip_id
"""
_KNOWN_PAIR_PICK_SQL = "SELECT p.* FROM {pair} p WHERE p.id = %(pair)s"
# Parameters that are constants (roles, lease states) and named by the partial indexes' predicates:
# written into the prepared statement's text so its generic plan can still use those indexes.
_LEASE_CONSTANTS = ("role", "gold", "pool_role", "open", "training", "live", "released")


def _in_one_statement() -> bool:
    return connection.vendor == "postgresql"


def _lease_picked(pick_sql: str, params: dict, pool: Pool, rater, device: str, now) -> Lease | None:
    """Runs _LEASE_AND_SHOW_SQL around `pick_sql` (table names already filled in): the new lease
    with its pair, caption and clip attached, or None when the pick found nothing."""
    token, expires_at = new_lease_token(), now + timedelta(seconds=pool.lease_seconds)
    sql = _lease_and_show_sql().replace("{pick}", pick_sql)
    with connection.cursor() as cursor:
        prepared.execute(cursor, sql, {**params, "rater": rater.pk, "token": token, "live": Lease.State.ACTIVE,
                                       "device": device, "created": timezone.now(), "expires": expires_at},
                         inline=_LEASE_CONSTANTS)
        row = cursor.fetchone()
    if row is None:
        return None
    n = len(_PAIR_COLUMNS)
    lease_pk, created_at, pair_values, (text, external_id, media, start, end, duration) = (
        row[0], row[1], row[2:2 + n], row[2 + n:])
    pair = PooledPair.from_db(connection.alias, [f.attname for f in _PAIR_SHOWN], pair_values)
    pair.caption = Caption(pk=pair.caption_id, text=text)
    pair.clip = Clip(pk=pair.clip_id, external_id=external_id, media=media, start=start, end=end, duration=duration)
    lease = Lease.from_db(connection.alias, ["id", "pair_id", "rater_id", "token", "state", "device", "created_at",
                                             "expires_at", "ended_at"],
                          [lease_pk, pair.pk, rater.pk, token, Lease.State.ACTIVE, device, created_at, expires_at, None])
    lease.pair, lease.rater = pair, rater
    return lease


@functools.cache
def _lease_and_show_sql() -> str:
    columns = ", ".join("pp." + connection.ops.quote_name(c) for c in _PAIR_COLUMNS)
    return _LEASE_AND_SHOW_SQL.replace("<pair_columns>", columns).format(
        lease=Lease._meta.db_table, caption=Caption._meta.db_table, clip=Clip._meta.db_table, pick="{pick}")


def _claim_pool_pair(pool: Pool, rater, device: str, now) -> Lease | None:
    """SKIP LOCKED first, so raters never queue behind each other; if that finds nothing, look
    again waiting for locks, because pairs that are locked for an instant (another rater's
    submit) may still need this rater and "no work left" must only be said when it is true."""
    locking = connection.features.has_select_for_update_skip_locked
    params = {"pool": pool.pk, "role": PooledPair.Role.POOL, "gold": PooledPair.Role.GOLD, **_not_mine_params(rater)}
    for lock in ("FOR UPDATE OF p SKIP LOCKED", "FOR UPDATE OF p") if locking else ("",):
        if _in_one_statement():
            pick = _sql(_CLAIM_SQL.replace("{not_mine}", _NOT_MINE).replace("RETURNING id", "RETURNING *")).format(lock=lock)
            lease = _lease_picked(pick, params, pool, rater, device, now)
            if lease is not None:
                return lease
            continue
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(_sql(_CLAIM_SQL.replace("{not_mine}", _NOT_MINE)).format(lock=lock), params)
                row = cursor.fetchone()
            if row is not None:
                lease = Lease.objects.create(pair_id=row[0], rater=rater, device=device,
                                             expires_at=now + timedelta(seconds=pool.lease_seconds))
        if row is not None:
            lease.pair = pair_for_display(row[0])
            return lease
    return None


# Not for this rater: a pair they labelled, hold, or gave back (released). The last makes cycling
# next/release or next/skip show nothing: a pair given back does not come straight back, gold or
# pool; it comes back only through _claim_given_back, which treats both alike.
_NOT_MINE = """
      AND NOT EXISTS (SELECT 1 FROM {label} l WHERE l.pair_id = p.id AND l.rater_id = %(rater)s)
      AND NOT EXISTS (SELECT 1 FROM {lease} s WHERE s.pair_id = p.id AND s.rater_id = %(rater)s
                        AND s.state IN (%(live)s, %(released)s))
"""


def _not_mine_params(rater) -> dict:
    return {"rater": rater.pk, "live": Lease.State.ACTIVE, "released": Lease.State.RELEASED}


def _lease_known_pair(pool: Pool, rater, device: str, pair_id: int, now) -> Lease:
    if _in_one_statement():
        return _lease_picked(_sql(_KNOWN_PAIR_PICK_SQL), {"pair": pair_id}, pool, rater, device, now)
    with transaction.atomic():
        lease = Lease.objects.create(pair_id=pair_id, rater=rater, device=device,
                                     expires_at=now + timedelta(seconds=pool.lease_seconds))
    lease.pair = pair_for_display(pair_id)
    return lease


# Gold pairs: every rater answers each once, so there is no capacity to count. Read in one
# statement and leased in one, as pool pairs are, so a gold assignment takes the same path (and
# about the same time) as any other. random() runs over the few gold pairs of one pool.
_GOLD_PAIR_SQL = """
SELECT p.id FROM {pair} p
WHERE p.pool_id = %(pool)s AND p.role = %(role)s
  {not_mine}
  {twin}
ORDER BY random()
LIMIT 1
"""

# A gold pair often repeats a pool pair (the same caption and clip, its answer known). A rater
# shown both would know the pair seen twice is gold or its twin, so gold is handed out only once
# its pool twin needs no more labels, and never to a rater who answered or holds a twin (a pool
# pair, or a training pair whose answer they were shown); the pool claim skips the converse.
# Training is exempt: every rater must finish it, and it shows its answers anyway.
_GOLD_TWIN_SEEN = """
  AND NOT EXISTS (SELECT 1 FROM {pair} k WHERE k.pool_id = p.pool_id AND k.id <> p.id
                    AND k.caption_id = p.caption_id AND k.clip_id = p.clip_id AND (
                      (k.role = %(pool_role)s AND k.state = %(open)s)
                      OR EXISTS (SELECT 1 FROM {label} l WHERE l.pair_id = k.id AND l.rater_id = %(rater)s)
                      OR EXISTS (SELECT 1 FROM {lease} s WHERE s.pair_id = k.id AND s.rater_id = %(rater)s AND s.state = %(live)s)))
"""


def _claim_gold_pair(pool: Pool, rater, device: str, now) -> Lease | None:
    params = {"pool": pool.pk, "role": PooledPair.Role.GOLD, "pool_role": PooledPair.Role.POOL,
              "open": PooledPair.State.OPEN, **_not_mine_params(rater)}
    sql = _sql(_GOLD_PAIR_SQL.replace("{not_mine}", _NOT_MINE).replace("{twin}", _GOLD_TWIN_SEEN))
    if _in_one_statement():
        return _lease_picked(sql.replace("SELECT p.id FROM", "SELECT p.* FROM", 1), params, pool, rater, device, now)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return _lease_known_pair(pool, rater, device, row[0], now) if row else None


# When nothing else is left for the rater: the pair they gave back longest ago (by its latest
# release) that is still theirs to take, gold or pool alike, so how often and how soon a pair
# returns says nothing of its role. Both twin rules hold as on first hand-out. Runs only once the
# claims above found nothing, so the hot path does not pay for it.
_GIVEN_BACK_SQL = """
SELECT p.id, p.role FROM {lease} r JOIN {pair} p ON p.id = r.pair_id
WHERE r.rater_id = %(rater)s AND r.state = %(released)s AND p.pool_id = %(pool)s
  AND NOT EXISTS (SELECT 1 FROM {lease} n WHERE n.pair_id = r.pair_id AND n.rater_id = r.rater_id AND n.id > r.id)
  AND NOT EXISTS (SELECT 1 FROM {label} l WHERE l.pair_id = p.id AND l.rater_id = %(rater)s)
  AND ((p.role = %(pool_role)s AND p.available
        AND NOT EXISTS (SELECT 1 FROM {pair} k WHERE k.pool_id = p.pool_id AND k.role = %(gold)s
                          AND k.caption_id = p.caption_id AND k.clip_id = p.clip_id AND (
                            EXISTS (SELECT 1 FROM {label} l WHERE l.pair_id = k.id AND l.rater_id = %(rater)s)
                            OR EXISTS (SELECT 1 FROM {lease} s WHERE s.pair_id = k.id AND s.rater_id = %(rater)s AND s.state = %(live)s))))
       OR (p.role = %(gold)s {twin}))
ORDER BY r.ended_at, r.id
LIMIT 1
"""

# Leases one given-back pool pair if it is still available, counting the lease as _CLAIM_SQL does.
_CLAIM_GIVEN_BACK_SQL = """
UPDATE {pair} SET active_leases = active_leases + 1,
                  available = {room_after_claim}
WHERE id = %(pair)s AND available
RETURNING id
""".replace("{room_after_claim}", room_sql(extra_leases=1))


def _claim_given_back(pool: Pool, rater, device: str, now) -> Lease | None:
    params = {"pool": pool.pk, "pool_role": PooledPair.Role.POOL, "gold": PooledPair.Role.GOLD,
              "open": PooledPair.State.OPEN, **_not_mine_params(rater)}
    with connection.cursor() as cursor:
        cursor.execute(_sql(_GIVEN_BACK_SQL.replace("{twin}", _GOLD_TWIN_SEEN)), params)
        row = cursor.fetchone()
    if row is None:
        return None
    pair_id, role = row
    if role == PooledPair.Role.GOLD:
        return _lease_known_pair(pool, rater, device, pair_id, now)
    if _in_one_statement():
        # None: another rater took its last place meanwhile; the page asks again.
        return _lease_picked(_sql(_CLAIM_GIVEN_BACK_SQL).replace("RETURNING id", "RETURNING *"), {"pair": pair_id},
                             pool, rater, device, now)
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(_sql(_CLAIM_GIVEN_BACK_SQL), {"pair": pair_id})
            if cursor.fetchone() is None:
                return None  # another rater took its last place meanwhile: the page asks again
        lease = Lease.objects.create(pair_id=pair_id, rater=rater, device=device,
                                     expires_at=now + timedelta(seconds=pool.lease_seconds))
    lease.pair = pair_for_display(pair_id)
    return lease


# Training comes strictly in its order: the first training pair the rater has not answered, and
# whether they hold it (on any device). Held, nothing else is handed out: `exclude` cannot skip it,
# and a second device waits. A training pair given back comes back at once: it is still next.
_NEXT_TRAINING_SQL = """
SELECT p.id, EXISTS (SELECT 1 FROM {lease} s WHERE s.pair_id = p.id AND s.rater_id = %(rater)s AND s.state = %(live)s)
FROM {pair} p
WHERE p.pool_id = %(pool)s AND p.role = %(role)s
  AND NOT EXISTS (SELECT 1 FROM {label} l WHERE l.pair_id = p.id AND l.rater_id = %(rater)s)
ORDER BY p.queue_order, p.id
LIMIT 1
"""


def _claim_training_pair(pool: Pool, rater, device: str, now) -> Lease | None:
    with connection.cursor() as cursor:
        cursor.execute(_sql(_NEXT_TRAINING_SQL), {"pool": pool.pk, "role": PooledPair.Role.TRAINING, "rater": rater.pk,
                                                  "live": Lease.State.ACTIVE})
        row = cursor.fetchone()
    if row is None or row[1]:
        return None
    return _lease_known_pair(pool, rater, device, row[0], now)


def lease_renew(*, token: str, rater, now=None) -> Lease:
    """Heartbeat: extends a live lease. A lease that is no longer live raises LeaseGone, saying
    whether the pair still needs a label (the client then submits its answer anyway). A paused
    rater's leases are given back instead, so their open page does not keep pairs from others."""
    now = now or timezone.now()
    lease = Lease.objects.select_related("pair__pool").get(token=token, rater=rater)
    paused = RaterProfile.objects.filter(user=rater, paused=True).exists()
    if not lease_extend(PAIRS, lease, seconds=lease.pair.pool.lease_seconds, paused=paused, now=now):
        pair = lease.pair
        still_needed = pair.state == PooledPair.State.OPEN and has_room(
            required=pair.required_labels, votes=pair.vote_count, leases=pair.active_leases)
        raise LeaseGone(lease, still_needed)
    return lease


def lease_release(*, token: str, rater, now=None) -> Lease:
    """The rater gives the pair back without judging it (e.g. they skip it)."""
    return lease_give_back(PAIRS, token=token, rater=rater, now=now)


#: Pool pairs as leased items (queue/lease_lifecycle.py): only a pool pair counts its leases.
PAIRS = LeasedItems(lease_model=Lease, item_model=PooledPair, item_field="pair", refresh_flags=refresh_pair_flags,
                    flag_fields=tuple(PAIR_FLAG_FIELDS), counts_leases=lambda pair: pair.role == PooledPair.Role.POOL)



def leases_expire(*, now=None, pool: Pool | None = None, limit: int = 1000) -> int:
    """Returns the pairs of overdue leases to the queue (the periodic job, and lazily at assignment)."""
    return leases_expire_due(PAIRS, now=now or timezone.now(), limit=limit,
                             **({"pair__pool": pool} if pool is not None else {}))
