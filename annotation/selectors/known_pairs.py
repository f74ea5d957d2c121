"""Pools whose training and gold pairs a new pool of the same dataset can copy."""
from __future__ import annotations

from django.db.models import Count, Q

from annotation.models import Pool, PooledPair


def known_pair_sources(*, dataset_id: int):
    """This dataset's pools that have training or gold pairs, with how many of each."""
    return (Pool.objects.filter(dataset_id=dataset_id)
            .annotate(training_count=Count("pairs", filter=Q(pairs__role=PooledPair.Role.TRAINING)),
                      gold_count=Count("pairs", filter=Q(pairs__role=PooledPair.Role.GOLD)))
            .filter(Q(training_count__gt=0) | Q(gold_count__gt=0)).order_by("name"))
