"""Reads about pools, the queue and raters' progress."""
from __future__ import annotations

from datetime import timedelta

from django.db.models import Count, Exists, F, OuterRef, Q
from django.db.models.functions import TruncHour
from django.utils import timezone

from annotation.models import Label, Pool, PooledPair, PoolMembership


def pool_list(*, dataset_id: int | None = None):
    pools = Pool.objects.select_related("dataset")
    return pools.filter(dataset_id=dataset_id) if dataset_id else pools


def pairs_to_judge(by_state: dict) -> int:
    """Pool pairs the campaign means to judge: not those outside a sampled design's sample, nor
    those of stopped queries (until an admin resumes them), or a finished pool never shows 100%."""
    left_out = (PooledPair.State.NOT_SAMPLED, PooledPair.State.STOPPED)
    return sum(n for state, n in by_state.items() if state not in left_out)


#: The pair counts every page, report, release and datasheet quotes, in words, in this order: the one
#: definition of what "judged" and "resolved" mean (issue 35: a datasheet called every pooled pair judged).
PAIR_COUNT_WORDS = {
    "pooled": "pooled pairs (the runs' top-depth pairs, deduplicated)",
    "judged": "judged pairs (at least one rater's counted label)",
    "resolved": "resolved pairs (a verdict: raters' majority, an admin's decision or an imported judgment)",
    "unresolved": "unresolved pairs (pooled, no verdict yet: open, escalated, disagreement, set aside, stopped or "
                  "not sampled)",
    "original_positives": "original positives among the pooled pairs (the caption's own clip)",
}


def pool_pair_counts(*, pools) -> dict[str, int]:
    """`{"pooled", "judged", "resolved", "unresolved", "original_positives"}` over the pool pairs
    (role 'pool'; gold and training pairs are not pooled) of one pool or several (PAIR_COUNT_WORDS
    says what each counts). One aggregate query."""
    pools = [pools] if isinstance(pools, Pool) else list(pools)
    counts = PooledPair.objects.filter(pool__in=pools, role=PooledPair.Role.POOL).aggregate(
        pooled=Count("id"), judged=Count("id", filter=Q(vote_count__gt=0)),
        resolved=Count("id", filter=Q(state=PooledPair.State.RESOLVED)),
        original_positives=Count("id", filter=Q(is_original_positive=True)))
    counts = {key: int(value or 0) for key, value in counts.items()}
    counts["unresolved"] = counts["pooled"] - counts["resolved"]
    return {key: counts[key] for key in PAIR_COUNT_WORDS}


def pool_progress(*, pool: Pool) -> dict:
    """Counts of pool pairs by state, labels, how many pairs still need labels, and the pair counts
    every page and release quotes (`pair_counts`: pool_pair_counts)."""
    pairs = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL)
    by_state = dict(pairs.values_list("state").annotate(n=Count("id")).order_by())
    total = sum(by_state.values())
    labels = Label.objects.filter(pair__pool=pool, pair__role=PooledPair.Role.POOL)
    label_counts = labels.aggregate(total=Count("id"), counted=Count("id", filter=Q(counted=True)),
                                    surplus=Count("id", filter=~Q(surplus_reason="")))
    resolved = by_state.get(PooledPair.State.RESOLVED, 0)
    to_judge = pairs_to_judge(by_state)
    return {
        "pairs": total,
        "to_judge": to_judge,
        "by_state": {state: by_state.get(state, 0) for state in PooledPair.State.values},
        "resolved_fraction": resolved / to_judge if to_judge else None,
        "left": by_state.get(PooledPair.State.OPEN, 0),
        "double_labelled": pairs.filter(required_labels__gte=2).count(),
        "relevant": pairs.filter(state=PooledPair.State.RESOLVED, resolved_label=PooledPair.Answer.RELEVANT).count(),
        "labels": label_counts["total"],
        "votes": label_counts["counted"],
        "surplus_labels": label_counts["surplus"],
        "raters": PoolMembership.objects.filter(pool=pool).count(),
        "pair_counts": pool_pair_counts(pools=pool),
    }


def pool_throughput(*, pool: Pool, hours: int = 48) -> dict:
    """Production labels (pool and gold pairs, as the pool page counts them) per hour, pool-wide
    and per rater, over the last `hours`."""
    since = timezone.now() - timedelta(hours=hours)
    labels = Label.objects.filter(pair__pool=pool, pair__role__in=[PooledPair.Role.POOL, PooledPair.Role.GOLD],
                                  created_at__gte=since)
    per_hour = [{"hour": row["hour"].isoformat(), "labels": row["n"]}
                for row in labels.annotate(hour=TruncHour("created_at")).values("hour").annotate(n=Count("id")).order_by("hour")]
    per_rater = [{"rater": row["rater__username"], "labels": row["n"]}
                 for row in labels.values("rater__username").annotate(n=Count("id")).order_by("-n")]
    return {"since": since.isoformat(), "per_hour": per_hour, "per_rater": per_rater}


#: The roles whose labels are the pool's work: pool pairs and the gold pairs mixed in among them.
#: Training answers are not labels of the pool: the pool page (dashboard.pool_live) and the
#: rater's own page (rater_progress) count by this one rule.
PRODUCTION_ROLES = (PooledPair.Role.POOL, PooledPair.Role.GOLD)


def start_of_today(now=None):
    """Midnight of the server's day: where every "today" on the pages starts."""
    return timezone.localtime(now).replace(hour=0, minute=0, second=0, microsecond=0)


def rater_progress(*, pool: Pool, rater) -> dict:
    """What a rater's page shows: their answers, and the pairs still open to them.

    `left_for_you` moves by exactly one for every answer the rater gives, whatever the pair's
    role, and counts what the queue can still hand them: pool pairs that still need labels and
    that they have not labelled, plus the gold pairs it would hand them while any such pool pair
    is left. A gold pair that repeats a pool pair (its twin) is handed out only once the twin is
    closed and to a rater who has not labelled the twin (services/queue/leases.py
    _GOLD_TWIN_SEEN), so it stands in for its twin and is not counted beside it: a 178-pair pool
    with gold twins starts at 178. A pool-wide count of open pairs would move on a pool answer
    and stand still on a gold one, which tells gold pairs apart. Training is not counted in
    either figure (PRODUCTION_ROLES)."""
    today = start_of_today()
    mine = Label.objects.filter(rater=rater, pair__pool=pool)
    membership = PoolMembership.objects.filter(pool=pool, rater=rater).first()
    training_total = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.TRAINING).count()
    answered = mine.aggregate(
        today=Count("id", filter=Q(created_at__gte=today, pair__role__in=PRODUCTION_ROLES)),
        total=Count("id", filter=Q(pair__role__in=PRODUCTION_ROLES)),
        training=Count("id", filter=Q(pair__role=PooledPair.Role.TRAINING)),
        open_pool=Count("id", filter=Q(pair__role=PooledPair.Role.POOL, pair__state=PooledPair.State.OPEN,
                                       pair__vote_count__lt=F("pair__required_labels"))))
    pool_left = max(0, pool_pairs_left(pool=pool) - answered["open_pool"])
    gold_left = _gold_left_for(pool=pool, rater=rater) if pool_left else 0
    return {
        "labelled_today": answered["today"],
        "labelled_total": answered["total"],
        "left_for_you": pool_left + gold_left,
        "training": {
            "status": membership.training if membership and training_total else "none",
            "answered": answered["training"],
            "total": training_total,
            "score": membership.training_score if membership else None,
            "pass_mark": pool.training_pass_mark,
        },
    }


def _gold_left_for(*, pool: Pool, rater) -> int:
    """Gold pairs the queue may still hand the rater: not answered, and no twin (another pair of
    the same caption and clip) that is an open pool pair or that the rater labelled."""
    labelled = Label.objects.filter(pair=OuterRef("pk"), rater=rater)
    twins = PooledPair.objects.filter(pool=pool, caption_id=OuterRef("caption_id"), clip_id=OuterRef("clip_id")
                                      ).exclude(pk=OuterRef("pk"))
    twin_in_the_way = twins.filter(Q(role=PooledPair.Role.POOL, state=PooledPair.State.OPEN)
                                   | Q(Exists(Label.objects.filter(pair=OuterRef("pk"), rater=rater))))
    return (PooledPair.objects.filter(pool=pool, role=PooledPair.Role.GOLD)
            .exclude(Exists(labelled)).exclude(Exists(twin_in_the_way)).count())


def rater_pools(*, rater):
    return PoolMembership.objects.filter(rater=rater).select_related("pool__dataset").order_by("pool__name")


def pairs_needing_admin(*, pool: Pool, state: str):
    return (PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL, state=state)
            .select_related("caption", "clip").prefetch_related("labels__rater").order_by("pk"))


def _pairs_left() -> Q:
    """A pool pair that still needs a label (open and short of votes), counting those under lease."""
    return Q(role=PooledPair.Role.POOL, state=PooledPair.State.OPEN, vote_count__lt=F("required_labels"))


def pool_pairs_left(*, pool: Pool) -> int:
    """Pool pairs that still need a label (open and short of votes), counting those under lease."""
    return PooledPair.objects.filter(_pairs_left(), pool=pool).count()


def pools_being_judged():
    """The pools still being judged: a pool pair still needs a label, so raters are still served
    its pairs (and its gold pairs among them). Releases of such a pool are held back from the
    public (selectors/release_access.py)."""
    return Pool.objects.filter(Exists(PooledPair.objects.filter(_pairs_left(), pool_id=OuterRef("pk"))))
