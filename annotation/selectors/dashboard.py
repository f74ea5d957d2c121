"""Reads for the admin pages: overviews of datasets, pools and raters, and agreement so far."""
from __future__ import annotations

from contextlib import contextmanager
from datetime import timedelta

import numpy as np
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import Count, F, IntegerField, Max, OuterRef, Prefetch, Q, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation import roles
from annotation.analysis.activity import IDLE_CUTOFF_SECONDS, active_seconds, labels_per_hour
from annotation.analysis.agreement import agreement_report
from annotation.models import Dataset, Job, Label, Pool, PooledPair, PoolMembership, Run
from annotation.selectors.judging import pool_query_statuses
from annotation.selectors.pools import PRODUCTION_ROLES, pairs_to_judge, pool_pair_counts, pool_progress, start_of_today

VOTE_CODES = {Label.Value.NOT_RELEVANT: 0, Label.Value.RELEVANT: 1}


def _count_of(model, fk: str):
    """A correlated COUNT subquery: one per counted table, so counts never multiply each other
    as they would with several joins in one GROUP BY."""
    rows = model.objects.filter(**{fk: OuterRef("pk")}).order_by().values(fk).annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(rows, output_field=IntegerField()), 0)


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


def raters_overview():
    """Every rater with their profile, the pools they may work in, and their labels (all and today)."""
    memberships = PoolMembership.objects.select_related("pool").order_by("pool__name")
    return (get_user_model().objects.filter(groups__name=roles.RATER).select_related("rater_profile")
            .prefetch_related(Prefetch("memberships", queryset=memberships))
            .annotate(label_count=Count("labels"),
                      labels_today=Count("labels", filter=Q(labels__created_at__gte=start_of_today())),
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
LIVE_QUERY_ROWS = 50
CHART_HOURS = 48
PRODUCTION = PRODUCTION_ROLES
# Per rater, what the baseline keeps: counts that never change once a label is written (a rater
# may change relevant <-> not relevant, never into or out of ambiguous or doesn't play, and the
# client's seconds stay). Gold answers right are counted fresh: a change can flip them.
_RATER_FIELDS = ("labels", "ambiguous", "broken", "gold_answered", "seconds_sum", "seconds_n")


def _label_counts(labels) -> dict:
    """Over `labels`: the pool's production labels (pool and gold pairs: what raters were asked
    outside training) and their surplus, and each rater's production figures."""
    rows = (labels.filter(pair__role__in=PRODUCTION).values_list("rater_id", "pair__role").annotate(
        n=Count("pk"), surplus=Count("pk", filter=~Q(surplus_reason="")),
        ambiguous=Count("pk", filter=Q(value=Label.Value.AMBIGUOUS)),
        broken=Count("pk", filter=Q(value=Label.Value.BROKEN)),
        seconds_sum=Sum("seconds"), seconds_n=Count("seconds"), last=Max("created_at")).order_by())
    counts = {"total": 0, "surplus": 0, "per_rater": {}}
    for rater_id, role, n, surplus, ambiguous, broken, seconds_sum, seconds_n, last in rows:
        counts["total"] += n
        counts["surplus"] += surplus
        mine = counts["per_rater"].setdefault(rater_id, dict.fromkeys(_RATER_FIELDS, 0) | {"last": None})
        mine["labels"] += n
        mine["ambiguous"] += ambiguous
        mine["broken"] += broken
        mine["gold_answered"] += n if role == PooledPair.Role.GOLD else 0
        mine["seconds_sum"] += seconds_sum or 0.0
        mine["seconds_n"] += seconds_n
        mine["last"] = max(filter(None, (mine["last"], last)), default=None)
    return counts


def _label_baseline(pool: Pool) -> dict:
    """Label counts up to a label id, cached for LIVE_BASELINE_SECONDS: counting every label of a
    500K-pair pool joins them all to their pairs (0.4 s), too much for a poll every 5 s. A poll
    adds the labels above that id, a range of the primary key. Production labels are never
    deleted (a training reset removes training answers only), so the baseline stays right."""
    key = f"pool-live-baseline:v2:{pool.pk}:{pool.created_at.timestamp()}"
    baseline = cache.get(key)
    if baseline is None:
        top = Label.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        baseline = _label_counts(Label.objects.filter(pair__pool=pool, pk__lte=top)) | {"max_id": top}
        cache.set(key, baseline, LIVE_BASELINE_SECONDS)
    return baseline


def labels_rate(times, seconds, *, idle_cutoff: float = IDLE_CUTOFF_SECONDS) -> dict:
    """A rater's labels per active hour over one list of labels: the count and the active time come
    from the same labels, so a rate never stands beside a count it was not computed from (every
    page and the API give rates through here)."""
    active = active_seconds([t.timestamp() for t in times], list(seconds), idle_cutoff=idle_cutoff)
    return {"labels_window": len(times), "active_seconds": round(active, 1),
            "rate_per_hour": labels_per_hour(len(times), active)}


@contextmanager
def _snapshot_transaction():
    """One consistent read: on PostgreSQL a REPEATABLE READ transaction, so every statement of the
    snapshot sees the same committed labels (under READ COMMITTED a label committed between two
    statements shows in one figure and not in the next). Inside a caller's transaction, that one."""
    fresh = not connection.in_atomic_block
    with transaction.atomic():
        if fresh and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield


def pool_live(*, pool: Pool, now=None, idle_cutoff: float = IDLE_CUTOFF_SECONDS, chart_hours: int = CHART_HOURS,
              query_rows: int = LIVE_QUERY_ROWS) -> dict:
    """Every figure of the pool page, read in one snapshot (the page renders it and its poll
    rewrites it, so no two figures on the page come from different moments): pairs by state,
    production labels (pool and gold pairs; training answers are not labels of the pool) with
    those of the last hour, each member's training, labels (all, today, last hour), time per
    label, gold answers, active time and rate over the last 24 hours, labels per hour and per
    rater over the chart's `chart_hours`, and the queries table (stopped queries, then the first
    in turn).

    Kept cheap at 500K-pair pools (bench/bench_pool_live.py): pair counts come from one GROUP BY
    over the (pool, role, state) index; label counts from a cached baseline plus the labels
    above its id; the per-rater times from the members' labels of the window through the
    (rater, created_at) index. Active time and rate: labels_rate."""
    now = now or timezone.now()
    since = now - timedelta(hours=LIVE_WINDOW_HOURS)
    chart_since = now - timedelta(hours=chart_hours)
    hour_ago = now - timedelta(hours=1)
    today = start_of_today(now)
    with _snapshot_transaction():
        pool = Pool.objects.get(pk=pool.pk)  # the judging stop and settings of this snapshot
        members = list(PoolMembership.objects.filter(pool=pool).select_related("rater", "rater__rater_profile")
                       .order_by("rater__username"))
        member_ids = [m.rater_id for m in members]
        by_state, relevant, double = {}, 0, 0
        for state, answer, n, two in (PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL)
                                      .values_list("state", "resolved_label")
                                      .annotate(n=Count("pk"), two=Count("pk", filter=Q(required_labels__gte=2))).order_by()):
            by_state[state] = by_state.get(state, 0) + n
            double += two
            if state == PooledPair.State.RESOLVED and answer == PooledPair.Answer.RELEVANT:
                relevant += n
        known = dict(PooledPair.objects.filter(pool=pool, role__in=[PooledPair.Role.GOLD, PooledPair.Role.TRAINING])
                     .values_list("role").annotate(n=Count("pk")).order_by())
        baseline = _label_baseline(pool)
        newer = _label_counts(Label.objects.filter(pair__pool=pool, pk__gt=baseline["max_id"]))
        gold_right = dict(Label.objects.filter(pair__pool=pool, pair__role=PooledPair.Role.GOLD,
                                               value=F("pair__known_answer"))
                          .values_list("rater_id").annotate(n=Count("pk")).order_by())
        # Every production label of the chart's window (the 24 h of the rates included), any rater's.
        window_start = min(since, today, chart_since)
        recent = list(Label.objects.filter(pair__pool=pool, pair__role__in=PRODUCTION, created_at__gte=window_start)
                      .values_list("rater_id", "created_at", "seconds").order_by("created_at"))
        names = dict(get_user_model().objects.filter(pk__in={r for r, _, _ in recent}).values_list("pk", "username"))
        queries = _query_rows(pool, query_rows)
        pair_counts = pool_pair_counts(pools=pool)  # the counts a release of this pool would state
    per_rater: dict[int, list] = {rater_id: [] for rater_id in member_ids}
    for rater_id, created_at, seconds in recent:
        per_rater.setdefault(rater_id, []).append((created_at, seconds))
    raters = []
    for member in members:
        rows = per_rater[member.rater_id]
        window = [(t, s) for t, s in rows if t >= since]
        old, new = baseline["per_rater"].get(member.rater_id, {}), newer["per_rater"].get(member.rater_id, {})
        total = {k: old.get(k, 0) + new.get(k, 0) for k in _RATER_FIELDS}
        profile = getattr(member.rater, "rater_profile", None)
        raters.append({
            "rater_id": member.rater_id, "rater": member.rater.username,
            "paused": bool(profile and profile.paused),
            "training": member.training, "training_score": member.training_score,
            "labels": total["labels"],
            "labels_today": sum(1 for t, _ in rows if t >= today),
            "labels_last_hour": sum(1 for t, _ in rows if t >= hour_ago),
            **labels_rate([t for t, _ in window], [s for _, s in window], idle_cutoff=idle_cutoff),
            "mean_seconds": total["seconds_sum"] / total["seconds_n"] if total["seconds_n"] else None,
            "gold_answered": total["gold_answered"], "gold_correct": gold_right.get(member.rater_id, 0),
            "ambiguous": total["ambiguous"], "broken": total["broken"],
            "last_label_at": max(filter(None, (old.get("last"), new.get("last"))), default=None),
        })
    hourly: dict = {}
    chart_raters: dict = {}
    for rater_id, created_at, _ in recent:
        if created_at < chart_since:
            continue
        hour = created_at.replace(minute=0, second=0, microsecond=0)
        hourly[hour] = hourly.get(hour, 0) + 1
        chart_raters[rater_id] = chart_raters.get(rater_id, 0) + 1
    to_judge = pairs_to_judge(by_state)
    return {
        "at": now.isoformat(), "window_hours": LIVE_WINDOW_HOURS, "idle_cutoff_seconds": idle_cutoff,
        "pairs": sum(by_state.values()), "by_state": {state: by_state.get(state, 0) for state in PooledPair.State.values},
        "left": by_state.get(PooledPair.State.OPEN, 0), "to_judge": to_judge,
        "resolved_fraction": by_state.get(PooledPair.State.RESOLVED, 0) / to_judge if to_judge else None,
        "relevant": relevant, "double_labelled": double, "gold_pairs": known.get(PooledPair.Role.GOLD, 0),
        "training_pairs": known.get(PooledPair.Role.TRAINING, 0),
        "labels": baseline["total"] + newer["total"], "surplus_labels": baseline["surplus"] + newer["surplus"],
        "labels_last_hour": sum(1 for _, t, _ in recent if t >= hour_ago), "raters": raters,
        "chart": {"hours": chart_hours, "since": chart_since.isoformat(),
                  "per_hour": [{"hour": h.isoformat(), "labels": n} for h, n in sorted(hourly.items())],
                  "per_rater": sorted(({"rater": names.get(r, str(r)), "labels": n} for r, n in chart_raters.items()),
                                      key=lambda row: (-row["labels"], row["rater"]))},
        "queries": queries, "pair_counts": pair_counts,
        "pool_stopped_reason": pool.judging_stopped_reason or None,
    }


def _query_rows(pool: Pool, limit: int) -> dict:
    """The queries table: the stopped queries first (up to 100), then the first `limit` in turn."""
    stopped = pool_query_statuses(pool=pool, stopped_only=True, limit=100)
    shown = {row["caption"] for row in stopped["results"]}
    rows = stopped["results"] + [row for row in pool_query_statuses(pool=pool, limit=limit)["results"]
                                 if row["caption"] not in shown]
    return {"total": stopped["queries"], "stopped": stopped["stopped_queries"], "budget": pool.judging_query_budget,
            "rows": [{k: row[k] for k in ("caption", "caption_external_id", "caption_text", "pairs", "judged", "relevant",
                                          "left", "stopped", "stopped_why", "query_stopped")} for row in rows]}
