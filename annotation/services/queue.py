"""Handing pairs to raters: short leases, taken with SELECT ... FOR UPDATE SKIP LOCKED.

Invariants, kept in the same transaction as every change:
- a pool pair's `active_leases + vote_count <= required_labels` (never more holders than it needs);
- a rater never gets a pair they labelled or already hold (unique live lease per pair and rater);
- `available` is true exactly when the pair is open and short of labels counting live leases, so
  the queue query walks one partial index in hand-out order and stays fast as the pool grows.
Locks are always taken pair first, then lease, so concurrent submits and expiries cannot deadlock.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import timedelta

from django.core.cache import cache
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from annotation.models import Label, Lease, Pool, PooledPair, PoolMembership
from annotation.services.raters import rater_profile

MAX_HELD_PER_POOL = 2  # the pair on screen and the next one, preloaded
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
    needed = pair.required_labels - pair.vote_count
    pair.available = pair.state == PooledPair.State.OPEN and pair.active_leases < needed
    pair.priority = 1 if pair.vote_count > 0 else 0


PAIR_FLAG_FIELDS = ["active_leases", "available", "priority"]


def lease_next(*, pool: Pool, rater, exclude_lease_ids=(), now=None, rng: random.Random | None = None) -> Assignment:
    """The rater's next pair in this pool, leased to them for `pool.lease_seconds`.

    Pairs the rater already holds come back first (a reloaded page resumes), except those in
    `exclude_lease_ids` (the ones the client is already showing or preloading)."""
    now = now or timezone.now()
    membership = PoolMembership.objects.filter(pool=pool, rater=rater).select_related("rater__rater_profile").first()
    if membership is None:
        return Assignment(None, "not_a_member")
    profile = getattr(membership.rater, "rater_profile", None) or rater_profile(user=rater)
    if profile.paused:
        return Assignment(None, "paused")
    # Lazily, but at most every few seconds per pool and process: the periodic job does the rest.
    if cache.add(f"lazy-expiry:{pool.pk}", 1, timeout=LAZY_EXPIRY_EVERY):
        leases_expire(now=now, pool=pool, limit=50)

    held = list(Lease.objects.filter(rater=rater, pair__pool=pool, state=Lease.State.ACTIVE)
                .select_related("pair__caption", "pair__clip").order_by("created_at"))
    for lease in held:
        if lease.pk not in set(exclude_lease_ids):
            Lease.objects.filter(pk=lease.pk, state=Lease.State.ACTIVE).update(
                expires_at=now + timedelta(seconds=pool.lease_seconds))
            lease.refresh_from_db(fields=["expires_at", "state"])
            return Assignment(lease)
    if len(held) >= MAX_HELD_PER_POOL:
        return Assignment(None, "holding_max")

    training = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.TRAINING)
    if membership.training != PoolMembership.Training.PASSED and training.exists():  # passed: no need to look
        if membership.training == PoolMembership.Training.FAILED:
            return Assignment(None, "training_failed")
        lease = _claim_known_pair(pool, rater, PooledPair.Role.TRAINING, now, ordered=True)
        return Assignment(lease, None if lease else "training_pending")

    rng = rng or random.Random()
    if pool.gold_rate > 0 and rng.random() < pool.gold_rate:
        lease = _claim_known_pair(pool, rater, PooledPair.Role.GOLD, now, ordered=False)
        if lease:
            return Assignment(lease)
    lease = _claim_pool_pair(pool, rater, now)
    return Assignment(lease, None if lease else "no_work_left")


def _not_mine(rater):
    return (~Exists(Label.objects.filter(pair=OuterRef("pk"), rater=rater))
            & ~Exists(Lease.objects.filter(pair=OuterRef("pk"), rater=rater, state=Lease.State.ACTIVE)))


def _claim_pool_pair(pool: Pool, rater, now) -> Lease | None:
    """SKIP LOCKED first, so raters never queue behind each other; if that finds nothing, look
    again waiting for locks, because pairs that are locked for an instant (another rater's
    submit) may still need this rater and "no work left" must only be said when it is true."""
    for attempt in range(6):
        skip = attempt % 2 == 0
        with transaction.atomic():
            pair = (PooledPair.objects.select_for_update(skip_locked=skip, of=("self",))
                    .select_related("caption", "clip")
                    .filter(pool=pool, role=PooledPair.Role.POOL, available=True)
                    .filter(_not_mine(rater))
                    .order_by("-priority", "queue_order")
                    .first())
            if pair is None:
                if skip:
                    continue
                return None
            refresh_pair_flags(pair)
            if not pair.available:
                continue  # changed between our snapshot and the lock; look again
            lease = Lease.objects.create(pair=pair, rater=rater, expires_at=now + timedelta(seconds=pool.lease_seconds))
            pair.active_leases += 1
            refresh_pair_flags(pair)
            pair.save(update_fields=PAIR_FLAG_FIELDS)
            lease.pair = pair
            return lease
    return None


def _claim_known_pair(pool: Pool, rater, role: str, now, *, ordered: bool) -> Lease | None:
    """Gold and training pairs: every rater answers each once; no capacity to count."""
    candidates = PooledPair.objects.filter(pool=pool, role=role).select_related("caption", "clip").filter(_not_mine(rater))
    pair = candidates.order_by("queue_order", "pk").first() if ordered else candidates.order_by("?").first()
    # order_by("?") is over the few known pairs of one pool, never over the pool's pairs.
    if pair is None:
        return None
    lease = Lease.objects.create(pair=pair, rater=rater, expires_at=now + timedelta(seconds=pool.lease_seconds))
    lease.pair = pair
    return lease


def lease_renew(*, lease_id: int, rater, now=None) -> Lease:
    """Heartbeat: extends a live lease. A lease that is no longer live raises LeaseGone, saying
    whether the pair still needs a label (the client then submits its answer anyway)."""
    now = now or timezone.now()
    lease = Lease.objects.select_related("pair__pool").get(pk=lease_id, rater=rater)
    updated = Lease.objects.filter(pk=lease.pk, state=Lease.State.ACTIVE).update(
        expires_at=now + timedelta(seconds=lease.pair.pool.lease_seconds))
    lease.refresh_from_db()
    if not updated:
        pair = lease.pair
        still_needed = pair.state == PooledPair.State.OPEN and pair.vote_count + pair.active_leases < pair.required_labels
        raise LeaseGone(lease, still_needed)
    return lease


def lease_release(*, lease_id: int, rater, now=None) -> Lease:
    """The rater gives the pair back without judging it (e.g. they skip it)."""
    lease = Lease.objects.get(pk=lease_id, rater=rater)
    _end_lease(lease.pk, Lease.State.RELEASED, now or timezone.now())
    lease.refresh_from_db()
    return lease


def _end_lease(lease_id: int, state: str, now, *, only_if_due: bool = False) -> bool:
    pair_id = Lease.objects.filter(pk=lease_id).values_list("pair_id", flat=True).first()
    if pair_id is None:
        return False
    with transaction.atomic():
        pair = PooledPair.objects.select_for_update().get(pk=pair_id)
        lease = Lease.objects.select_for_update().get(pk=lease_id)
        if lease.state != Lease.State.ACTIVE or (only_if_due and lease.expires_at >= now):
            return False
        lease.state, lease.ended_at = state, now
        lease.save(update_fields=["state", "ended_at"])
        if pair.role == PooledPair.Role.POOL:
            pair.active_leases = max(0, pair.active_leases - 1)
            refresh_pair_flags(pair)
            pair.save(update_fields=PAIR_FLAG_FIELDS)
        return True


def leases_expire(*, now=None, pool: Pool | None = None, limit: int = 1000) -> int:
    """Returns the pairs of overdue leases to the queue (the periodic job, and lazily at assignment)."""
    now = now or timezone.now()
    due = Lease.objects.filter(state=Lease.State.ACTIVE, expires_at__lt=now)
    if pool is not None:
        due = due.filter(pair__pool=pool)
    expired = 0
    for lease_id in list(due.values_list("pk", flat=True)[:limit]):
        expired += _end_lease(lease_id, Lease.State.EXPIRED, now, only_if_due=True)
    return expired
