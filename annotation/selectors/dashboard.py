"""Reads for the admin pages: overviews of datasets, pools and raters, and agreement so far."""
from __future__ import annotations

from datetime import timedelta

import numpy as np
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db.models import Avg, Count, F, IntegerField, Max, OuterRef, Prefetch, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation import roles
from annotation.analysis.activity import IDLE_CUTOFF_SECONDS, active_seconds, labels_per_hour
from annotation.analysis.agreement import agreement_report
from annotation.models import Dataset, Job, Label, Pool, PooledPair, PoolMembership, Run
from annotation.selectors.pools import pairs_to_judge, pool_progress

VOTE_CODES = {Label.Value.NOT_RELEVANT: 0, Label.Value.RELEVANT: 1}


def _count_of(model, fk: str):
    """A correlated COUNT subquery: one per counted table, so counts never multiply each other
    as they would with several joins in one GROUP BY."""
    rows = model.objects.filter(**{fk: OuterRef("pk")}).order_by().values(fk).annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(rows, output_field=IntegerField()), 0)


def _start_of_today():
    return timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)


def datasets_overview():
    """Datasets with their sizes: clips, captions and original positives are stored on the row
    (services/datasets.py); runs and pools, a handful per dataset, are counted through their
    foreign-key indexes. No count reads clips or captions, so one row costs the same at any size."""
    return Dataset.objects.annotate(run_count=_count_of(Run, "dataset"), pool_count=_count_of(Pool, "dataset")
                                    ).order_by("name")


def dataset_runs(*, dataset: Dataset):
    return Run.objects.filter(dataset=dataset).select_related("uploader").order_by("-created_at", "-id")


def recent_jobs(*, limit: int = 10):
    return Job.objects.select_related("created_by").order_by("-created_at", "-id")[:limit]


def pools_overview(*, dataset_id: int | None = None) -> list[dict]:
    """Each pool with its progress counts (a handful of queries per pool)."""
    pools = Pool.objects.select_related("dataset").order_by("-created_at")
    if dataset_id is not None:
        pools = pools.filter(dataset_id=dataset_id)
    return [{"pool": pool, "progress": pool_progress(pool=pool)} for pool in pools]


def pool_pair_total(*, pool: Pool) -> int:
    return PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL).count()


def pool_agreement(*, pool: Pool, n_boot: int = 200) -> dict:
    """Percent agreement and Krippendorff's alpha over the pool's multiply-labelled pairs, from the
    votes that count (relevant / not relevant; ambiguous and broken reports are not votes).

    Both variants of methodology §5 are returned: `first_two` (each pair's first two votes, the
    unbiased reliability sample) and `all` (third votes, asked for only after a disagreement,
    push it up). Only pairs with two or more votes are read: single votes are not pairable, so
    they change neither number, and skipping them keeps this fast on large pools."""
    labelled = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL, vote_count__gte=1).count()
    rows = np.array(list(Label.objects.filter(pair__pool=pool, pair__role=PooledPair.Role.POOL, counted=True,
                                              pair__vote_count__gte=2, value__in=list(VOTE_CODES))
                         .values_list("pair_id", "value", "sequence")), dtype=object).reshape(-1, 3)
    result = {"pairs_labelled": labelled, "pairs_multi": 0, "first_two": None, "all": None}
    if not len(rows):
        return result
    unit = rows[:, 0].astype(np.int64)
    value = np.array([VOTE_CODES[v] for v in rows[:, 1]], dtype=np.int64)
    order = rows[:, 2].astype(np.int64)
    report = agreement_report(unit, value, order=order, n_boot=n_boot, seed=pool.seed)
    result["pairs_multi"] = report["all"].n_units_multi
    for variant, outcome in report.items():
        result[variant] = outcome.to_dict(nan_as_none=True)
    return result


def pool_rater_summary(*, pool: Pool):
    """Per member: training, production labels (all and today), mean seconds per label, escalations,
    broken-clip reports and accuracy on gold pairs."""
    labels = "rater__labels"
    in_pool = Q(rater__labels__pair__pool=pool)
    production = in_pool & Q(rater__labels__pair__role__in=[PooledPair.Role.POOL, PooledPair.Role.GOLD])
    gold = in_pool & Q(rater__labels__pair__role=PooledPair.Role.GOLD)
    right = Q(rater__labels__value=F("rater__labels__pair__known_answer"))
    today = Q(rater__labels__created_at__gte=_start_of_today())
    return (PoolMembership.objects.filter(pool=pool).select_related("rater", "rater__rater_profile")
            .annotate(labels=Count(labels, filter=production),
                      labels_today=Count(labels, filter=production & today),
                      mean_seconds=Avg("rater__labels__seconds", filter=production),
                      ambiguous=Count(labels, filter=production & Q(rater__labels__value=Label.Value.AMBIGUOUS)),
                      broken=Count(labels, filter=production & Q(rater__labels__value=Label.Value.BROKEN)),
                      gold_answered=Count(labels, filter=gold),
                      gold_correct=Count(labels, filter=gold & right),
                      last_label_at=Max("rater__labels__created_at", filter=production))
            .order_by("rater__username"))


def pool_known_pair_counts(*, pool: Pool) -> dict:
    counts = dict(PooledPair.objects.filter(pool=pool, role__in=[PooledPair.Role.GOLD, PooledPair.Role.TRAINING])
                  .values_list("role").annotate(n=Count("pk")).order_by())
    return {"gold": counts.get(PooledPair.Role.GOLD, 0), "training": counts.get(PooledPair.Role.TRAINING, 0)}


def raters_overview():
    """Every rater with their profile, the pools they may work in, and their labels (all and today)."""
    memberships = PoolMembership.objects.select_related("pool").order_by("pool__name")
    return (get_user_model().objects.filter(groups__name=roles.RATER).select_related("rater_profile")
            .prefetch_related(Prefetch("memberships", queryset=memberships))
            .annotate(label_count=Count("labels"),
                      labels_today=Count("labels", filter=Q(labels__created_at__gte=_start_of_today())),
                      last_label_at=Max("labels__created_at"))
            .order_by("username"))


def rater_pool_cards(*, rater):
    """The rater's pools for their start page: training pairs to go through first, pairs still
    open, and how many labels the rater has given there."""
    return (PoolMembership.objects.filter(rater=rater).select_related("pool__dataset")
            .annotate(training_pairs=_count_of_in_pool(PooledPair, role=PooledPair.Role.TRAINING),
                      open_pairs=_count_of_in_pool(PooledPair, role=PooledPair.Role.POOL, state=PooledPair.State.OPEN),
                      my_labels=_rater_labels_in_pool(rater))
            .order_by("pool__name"))


def _rater_labels_in_pool(rater):
    """The rater's own labels in the membership's pool, read from the rater's labels, not by
    joining every pair of the pool to its labels."""
    rows = (Label.objects.filter(rater=rater, pair__pool=OuterRef("pool")).order_by().values("rater")
            .annotate(n=Count("pk")).values("n"))
    return Coalesce(Subquery(rows, output_field=IntegerField()), 0)


def _count_of_in_pool(model, **condition):
    rows = (model.objects.filter(pool=OuterRef("pool"), **condition).order_by().values("pool")
            .annotate(n=Count("pk")).values("n"))
    return Coalesce(Subquery(rows, output_field=IntegerField()), 0)


LIVE_WINDOW_HOURS = 24
LIVE_BASELINE_SECONDS = 600
PRODUCTION = (PooledPair.Role.POOL, PooledPair.Role.GOLD)


def _label_counts(labels) -> dict:
    """Pool labels (all and surplus) and each rater's production labels, over `labels`."""
    rows = labels.values_list("rater_id", "pair__role").annotate(
        n=Count("pk"), surplus=Count("pk", filter=~Q(surplus_reason=""))).order_by()
    counts = {"total": 0, "surplus": 0, "per_rater": {}}
    for rater_id, role, n, surplus in rows:
        if role == PooledPair.Role.POOL:
            counts["total"] += n
            counts["surplus"] += surplus
        if role in PRODUCTION:
            counts["per_rater"][rater_id] = counts["per_rater"].get(rater_id, 0) + n
    return counts


def _label_baseline(pool: Pool) -> dict:
    """Label counts up to a label id, cached for LIVE_BASELINE_SECONDS: counting every label of a
    500K-pair pool joins them all to their pairs (0.4 s), too much for a poll every 5 s. A poll
    adds the labels above that id, a range of the primary key. Production labels are never
    deleted (a training reset removes training answers only), so the baseline stays right."""
    key = f"pool-live-baseline:{pool.pk}:{pool.created_at.timestamp()}"
    baseline = cache.get(key)
    if baseline is None:
        top = Label.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        baseline = _label_counts(Label.objects.filter(pair__pool=pool, pk__lte=top)) | {"max_id": top}
        cache.set(key, baseline, LIVE_BASELINE_SECONDS)
    return baseline


def pool_live(*, pool: Pool, now=None, idle_cutoff: float = IDLE_CUTOFF_SECONDS) -> dict:
    """What the pool page polls every few seconds: progress counts, labels in the last hour, and
    each member's labels (all, today, last hour), active time and rate over the last 24 hours.

    Kept cheap at 500K-pair pools (bench/bench_pool_live.py): pair counts come from one GROUP BY
    over the (pool, role, state) index; label counts from a cached baseline plus the labels
    above its id; the per-rater times from the members' last day of labels through the (rater,
    created_at) index. Active time and rate: annotation/analysis/activity.py (gaps under
    `idle_cutoff` count)."""
    now = now or timezone.now()
    since = now - timedelta(hours=LIVE_WINDOW_HOURS)
    hour_ago = now - timedelta(hours=1)
    today = timezone.localtime(now).replace(hour=0, minute=0, second=0, microsecond=0)
    members = list(PoolMembership.objects.filter(pool=pool).select_related("rater").order_by("rater__username"))
    member_ids = [m.rater_id for m in members]
    by_state, relevant = {}, 0
    for state, answer, n in (PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL)
                             .values_list("state", "resolved_label").annotate(n=Count("pk")).order_by()):
        by_state[state] = by_state.get(state, 0) + n
        if state == PooledPair.State.RESOLVED and answer == PooledPair.Answer.RELEVANT:
            relevant += n
    pairs = sum(by_state.values())
    baseline = _label_baseline(pool)
    newer = _label_counts(Label.objects.filter(pair__pool=pool, pk__gt=baseline["max_id"]))
    recent = (Label.objects.filter(rater_id__in=member_ids, created_at__gte=min(since, today), pair__pool=pool)
              .values_list("rater_id", "created_at", "seconds", "pair__role"))
    per_rater: dict[int, list] = {rater_id: [] for rater_id in member_ids}
    for rater_id, created_at, seconds, role in recent:
        per_rater[rater_id].append((created_at, seconds, role))
    raters, last_hour = [], 0
    for member in members:
        rows = per_rater[member.rater_id]
        # Every label in the pool is time at work (training included); the counts shown are the
        # production labels (pool and gold pairs), as in the raters table.
        window = [(t, s) for t, s, _ in rows if t >= since]
        active = active_seconds([t.timestamp() for t, _ in window], [s for _, s in window], idle_cutoff=idle_cutoff)
        hour = sum(1 for t, _, role in rows if t >= hour_ago and role in PRODUCTION)
        last_hour += hour
        raters.append({
            "rater_id": member.rater_id, "rater": member.rater.username,
            "labels": baseline["per_rater"].get(member.rater_id, 0) + newer["per_rater"].get(member.rater_id, 0),
            "labels_today": sum(1 for t, _, role in rows if t >= today and role in PRODUCTION),
            "labels_last_hour": hour,
            "labels_window": len(window),
            "active_seconds": round(active, 1),
            "rate_per_hour": labels_per_hour(len(window), active),
            "last_label_at": max((t for t, _, _ in rows), default=None),
        })
    return {
        "at": now.isoformat(), "window_hours": LIVE_WINDOW_HOURS, "idle_cutoff_seconds": idle_cutoff,
        "pairs": pairs, "by_state": {state: by_state.get(state, 0) for state in PooledPair.State.values},
        "left": by_state.get(PooledPair.State.OPEN, 0),
        "to_judge": pairs_to_judge(by_state),
        "resolved_fraction": (by_state.get(PooledPair.State.RESOLVED, 0) / pairs_to_judge(by_state)
                              if pairs_to_judge(by_state) else None),
        "relevant": relevant,
        "labels": baseline["total"] + newer["total"], "surplus_labels": baseline["surplus"] + newer["surplus"],
        "labels_last_hour": last_hour, "raters": raters,
    }
