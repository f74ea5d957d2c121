"""How a lease ends, for every kind of leased item: a pool pair (queue/leases.py) and a ranking
task (services/ranking/leases.py). Both keep one invariant under the item's row lock: the item's
`active_leases` counts its live leases, and its queue flags follow from its counters. Ending a lease
(completed aside, which the submit services do with their own bookkeeping) is the same for both:

- lock the item first, then the lease (the lock order of every change to an item, so concurrent
  submits, expiries and releases cannot deadlock);
- only a live lease ends, and an expiry only once it is due;
- the item's lease count goes down by one and its flags are recomputed, in the same transaction.

A heartbeat (`lease_extend`) and a rater's giving an item back (`lease_give_back`) are the same
for both kinds too.

What differs by kind is declared in a `LeasedItems`: which models, and how an item's flags are
recomputed and whether it counts leases at all (gold and training pairs do not).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import models, transaction
from django.utils import timezone


@dataclass(frozen=True)
class LeasedItems:
    """One kind of leased item: `lease_model` has a foreign key `item_field` to `item_model`, a
    `state` with an ACTIVE member, `expires_at` and `ended_at`; the item has `active_leases`."""

    lease_model: type[models.Model]
    item_model: type[models.Model]
    item_field: str
    #: Recomputes the item's queue flags from its counters (called with the item row locked).
    refresh_flags: Callable[[Any], None]
    #: The item fields `refresh_flags` and the lease count write.
    flag_fields: tuple[str, ...]
    #: Whether this item's live leases are counted (a pool pair's are; gold and training pairs' not).
    counts_leases: Callable[[Any], bool] = lambda item: True


def lease_end(items: LeasedItems, lease_id: int, state: str, now, *, only_if_due: bool = False) -> bool:
    """Ends a live lease in `state` (released or expired) and gives its place back to the item; with
    `only_if_due`, only a lease past its expiry. False when there was nothing to end."""
    item_id = items.lease_model.objects.filter(pk=lease_id).values_list(f"{items.item_field}_id", flat=True).first()
    if item_id is None:
        return False
    with transaction.atomic():
        item = items.item_model.objects.select_for_update().get(pk=item_id)
        lease = items.lease_model.objects.select_for_update().get(pk=lease_id)
        if lease.state != items.lease_model.State.ACTIVE or (only_if_due and lease.expires_at >= now):
            return False
        lease.state, lease.ended_at = state, now
        lease.save(update_fields=["state", "ended_at"])
        if items.counts_leases(item):
            item.active_leases = max(0, item.active_leases - 1)
            items.refresh_flags(item)
            item.save(update_fields=list(items.flag_fields))
        return True


def leases_expire_due(items: LeasedItems, *, now, limit: int, **within) -> int:
    """Ends up to `limit` overdue live leases (`within`: a filter on the leases, e.g. one pool's),
    returning their items to the queue; how many ended."""
    State = items.lease_model.State
    due = items.lease_model.objects.filter(state=State.ACTIVE, expires_at__lt=now, **within)
    return sum(lease_end(items, pk, State.EXPIRED, now, only_if_due=True)
               for pk in list(due.values_list("pk", flat=True)[:limit]))


def lease_extend(items: LeasedItems, lease, *, seconds: int, paused: bool, now) -> bool:
    """A heartbeat: a live lease now expires `seconds` from `now`. A paused rater's lease is given
    back instead, so their open page does not keep items from others. False when the lease is no
    longer live (the caller says whether the item still needs an answer); `lease` is re-read."""
    State = items.lease_model.State
    if paused:
        lease_end(items, lease.pk, State.RELEASED, now)
    updated = items.lease_model.objects.filter(pk=lease.pk, state=State.ACTIVE).update(
        expires_at=now + timedelta(seconds=seconds))
    lease.refresh_from_db()
    return bool(updated)


def lease_give_back(items: LeasedItems, *, token: str, rater, now=None):
    """The rater gives their leased item back unanswered (they skip it, the clip does not play)."""
    lease = items.lease_model.objects.get(token=token, rater=rater)
    lease_end(items, lease.pk, items.lease_model.State.RELEASED, now or timezone.now())
    lease.refresh_from_db()
    return lease
