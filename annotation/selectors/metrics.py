"""The numbers /metrics reports about the work (config/metrics.py turns them into Prometheus gauges).

Computed from the database at each scrape, so every web process reports the same values whichever
one Prometheus reaches, and a worker host needs no exporter. Each query is cheap at 500K-pair pools
(bench/bench_metrics_scrape.py):
- queue depth: per pool, a count over the partial index of available pool pairs (pair_queue, an
  index-only scan of what is still to hand out);
- live leases: the partial index of active leases (lease_live_expiry), a few rows per rater;
- labels in the last minute: among the newest RECENT_LABELS_SCANNED ids only (a range of the
  primary key), not a scan of the label table, which has no index on created_at alone; ids grow
  with creation time;
- jobs by status: the job_status_idx index.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.models import Job, Label, Lease, Pool, PooledPair

# More labels than this in one minute would be ~170 per second: far past any rater crowd; the
# gauge would then read this cap, a floor of the true rate.
RECENT_LABELS_SCANNED = 10_000


@dataclass(frozen=True)
class PoolRow:
    pool_id: int
    name: str
    dataset: str
    queue_depth: int = 0
    live_leases: int = 0
    labels_last_minute: int = 0


@dataclass(frozen=True)
class WorkMetrics:
    pools: list[PoolRow]
    jobs_by_status: dict[str, int]
    jobs_running_by_kind: dict[str, int] = field(default_factory=dict)


def work_metrics(*, now=None) -> WorkMetrics:
    now = now or timezone.now()
    # Per pool, a count(*) over its slice of the partial queue index: an index-only scan. (One
    # GROUP BY over all pairs made PostgreSQL scan the whole table once a third of it was queued.)
    queued = (PooledPair.objects.filter(pool=OuterRef("pk"), available=True, role=PooledPair.Role.POOL)
              .order_by().values("pool").annotate(n=Count("*")).values("n"))
    leases = dict(Lease.objects.filter(state=Lease.State.ACTIVE, expires_at__gt=now)
                  .values_list("pair__pool_id").annotate(n=Count("pk")).order_by())
    newest = Label.objects.order_by("-pk").values("pk")[:1]
    labels = dict(Label.objects.filter(pk__gt=Subquery(newest) - RECENT_LABELS_SCANNED,
                                       created_at__gte=now - timedelta(minutes=1))
                  .values_list("pair__pool_id").annotate(n=Count("pk")).order_by())
    pools = [PoolRow(pool_id=pk, name=name, dataset=dataset, queue_depth=queue_depth,
                     live_leases=leases.get(pk, 0), labels_last_minute=labels.get(pk, 0))
             for pk, name, dataset, queue_depth in Pool.objects.order_by("pk")
             .annotate(queued=Coalesce(Subquery(queued), 0)).values_list("pk", "name", "dataset__name", "queued")]
    by_status = dict(Job.objects.values_list("status").annotate(n=Count("pk")).order_by())
    running = dict(Job.objects.filter(status=Job.Status.RUNNING).values_list("kind").annotate(n=Count("pk")).order_by())
    return WorkMetrics(pools=pools, jobs_by_status={status: by_status.get(status, 0) for status in Job.Status.values},
                       jobs_running_by_kind=running)
