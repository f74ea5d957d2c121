"""GET /metrics: Prometheus metrics (prometheus_client's text format).

Two sources in one answer:
- request metrics from django-prometheus's middleware (latency histograms per view and method,
  responses by status). They live in each web process; under gunicorn, prometheus_client's
  multiprocess mode (PROMETHEUS_MULTIPROC_DIR, set by config/gunicorn.conf.py) sums the files all
  workers write, so whichever worker answers reports the whole server.
- the work (queue depth per pool, live leases, labels in the last minute, jobs by status), read
  from the database at each scrape (annotation/selectors/metrics.py): the same from any process
  or host, nothing to aggregate, and no exporter on the worker hosts.

Who may scrape: a caller sending `Authorization: Bearer <REJUDGE_METRICS_TOKEN>` (Prometheus'
`authorization` / `bearer_token` scrape setting), or a staff user signed in. Everyone else gets
403: the numbers name pools and datasets and show how the work goes. With no token set, only
staff can read it.
"""
from __future__ import annotations

import hmac
import os
import time

import prometheus_client
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import multiprocess
from prometheus_client.core import GaugeMetricFamily

from annotation.selectors.metrics import work_metrics

POOL_LABELS = ["pool", "pool_name", "dataset"]


class WorkCollector:
    """Gauges computed from the database when collected (never stored in the process)."""

    def collect(self):
        started = time.perf_counter()
        work = work_metrics()
        depth = GaugeMetricFamily("rejudge_queue_depth", "Pool pairs available to hand out (open, short of labels counting live leases).", labels=POOL_LABELS)
        leases = GaugeMetricFamily("rejudge_live_leases", "Leases held by raters and not yet expired.", labels=POOL_LABELS)
        labels = GaugeMetricFamily("rejudge_labels_last_minute", "Labels given in the last 60 seconds.", labels=POOL_LABELS)
        for pool in work.pools:
            key = [str(pool.pool_id), pool.name, pool.dataset]
            depth.add_metric(key, pool.queue_depth)
            leases.add_metric(key, pool.live_leases)
            labels.add_metric(key, pool.labels_last_minute)
        jobs = GaugeMetricFamily("rejudge_jobs", "Jobs by status.", labels=["status"])
        for status, n in work.jobs_by_status.items():
            jobs.add_metric([status], n)
        running = GaugeMetricFamily("rejudge_jobs_running", "Running jobs by kind.", labels=["kind"])
        for kind, n in sorted(work.jobs_running_by_kind.items()):
            running.add_metric([kind], n)
        cost = GaugeMetricFamily("rejudge_metrics_query_seconds", "Time spent reading the work gauges above from the database.")
        cost.add_metric([], time.perf_counter() - started)
        yield from (depth, leases, labels, jobs, running, cost)


def request_metrics_registry() -> prometheus_client.CollectorRegistry:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = prometheus_client.CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return registry
    return prometheus_client.REGISTRY


def may_scrape(request) -> bool:
    token = settings.REJUDGE_METRICS_TOKEN
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if token and scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode()):
        return True
    user = getattr(request, "user", None)
    return bool(user and user.is_authenticated and user.is_active and user.is_staff)


@never_cache
@require_GET
def metrics_view(request):
    if not may_scrape(request):
        raise PermissionDenied("metrics: send the scrape token (Authorization: Bearer ...) or sign in as staff")
    work = prometheus_client.CollectorRegistry(auto_describe=False)
    work.register(WorkCollector())
    body = prometheus_client.generate_latest(request_metrics_registry()) + prometheus_client.generate_latest(work)
    return HttpResponse(body, content_type=prometheus_client.CONTENT_TYPE_LATEST)
