"""Which releases the public may read while a campaign runs (REJUDGE_RELEASES_PUBLIC).

A release is immutable, but whether the public may read it is not: it is held back from everyone
but admins and researchers while

1. one of the pools it was made from is still being judged (a pool pair still needs a label:
   annotation/selectors/pools.py pools_being_judged), so a release made mid-campaign is public
   only once its pools are done; or
2. a pool still being judged, on the release's dataset, has a gold pair whose caption and clip the
   release decides (a resolved pair of one of its pools, a verdict of one of its judgment sets),
   so a rater cannot read a running pool's gold answers out of an older release. When one of the
   release's pools no longer exists, its pairs cannot be checked, and any gold pair of a pool
   still being judged on the dataset holds the release back.

Once the pools are done (no pool pair needs a label, so no rater is served gold any more) the
release is public again. Who may read releases at all is annotation/roles.py may_read_releases.
"""
from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Exists, OuterRef

from annotation.models import Pool, PooledPair, Release
from annotation.models.judgment_sets import ImportedJudgment
from annotation.selectors.pools import pools_being_judged


def _source_ids(release: Release, kind: str) -> set[int]:
    return {int(s["id"]) for s in (release.sources or []) if isinstance(s, dict) and s.get("kind") == kind
            and isinstance(s.get("id"), int)}


def _held_back(release: Release, running: set[int], gold_by_dataset: dict[int, list[int]]) -> bool:
    pools = _source_ids(release, "pool")
    if pools & running:
        return True
    gold_pools = gold_by_dataset.get(release.dataset_id)
    if not gold_pools:
        return False
    if len(set(Pool.objects.filter(pk__in=pools).values_list("pk", flat=True))) < len(pools):
        return True  # a source pool is gone: its pairs cannot be checked against the gold pairs
    gold = PooledPair.objects.filter(pool_id__in=gold_pools, role=PooledPair.Role.GOLD,
                                     caption_id=OuterRef("caption_id"), clip_id=OuterRef("clip_id"))
    decided = PooledPair.objects.filter(pool_id__in=pools, role=PooledPair.Role.POOL,
                                        state=PooledPair.State.RESOLVED).filter(Exists(gold))
    if pools and decided.exists():
        return True
    sets = _source_ids(release, "judgment_set")
    return bool(sets) and ImportedJudgment.objects.filter(judgment_set_id__in=sets).filter(Exists(gold)).exists()


def releases_held_back(releases: Iterable[Release]) -> set[int]:
    """The ids of those of `releases` the public may not read now (see the module docstring)."""
    running = set(pools_being_judged().values_list("pk", flat=True))
    if not running:
        return set()  # the usual case outside a campaign: one query
    gold_by_dataset: dict[int, list[int]] = {}
    for pool_id, dataset_id in (Pool.objects.filter(pk__in=running)
                                .filter(Exists(PooledPair.objects.filter(pool_id=OuterRef("pk"),
                                                                         role=PooledPair.Role.GOLD)))
                                .values_list("pk", "dataset_id")):
        gold_by_dataset.setdefault(dataset_id, []).append(pool_id)
    return {release.pk for release in releases if _held_back(release, running, gold_by_dataset)}
