"""django-prometheus's request middleware, with each labelled series looked up once per process.

The after-middleware labels about a dozen series per request (by method, transport, view, status,
charset) and prometheus_client's `labels()` checks, sorts and locks on every call: more Python than
the queue's own work on the two requests every judged pair makes. The series a label set names
never changes (prometheus_client keeps one child per label set and never drops it unless asked), so
the child is kept here by (metric, labels) and reused: the same counters and histograms are
updated, in the same files under multiprocess mode (config/gunicorn.conf.py).
"""
from __future__ import annotations

from django_prometheus import middleware

# A bound on the kept children, should a label ever take unbounded values (a view name cannot).
MAX_KEPT = 10_000


class PrometheusAfterMiddleware(middleware.PrometheusAfterMiddleware):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._children: dict = {}

    def label_metric(self, metric, request, response=None, **labels):
        if not labels:
            return metric
        key = (metric, tuple(labels.items()))
        child = self._children.get(key)
        if child is None:
            if len(self._children) >= MAX_KEPT:
                self._children.clear()
            child = self._children[key] = metric.labels(**labels)
        return child
