"""Start targets of the reports area's operations (see __init__.py): a pool report of each kind,
the report of any kind that runs jobs queued before the registry, and a sampled pool's inferred
AP and a moment pool's moment metrics (the world's pool is given the design their endpoints ask
for; their checks come after the declared parameters)."""

from annotation.models import MomentPoolDesign, SampledPoolDesign
from annotation.services.reports.registry import POOL_REPORT_KINDS


def _pool(pool, runs, js):
    return pool, {}


def _sampled(pool, runs, js):
    SampledPoolDesign.objects.create(pool=pool, strata=[[1, pool.depth, 1.0]])
    return pool, {}


def _moment(pool, runs, js):
    MomentPoolDesign.objects.create(pool=pool, iou_threshold=0.7)
    return pool, {}


def _none(pool, runs, js):
    return {}


TARGETS = {
    **{f"report_{kind}": _pool for kind in POOL_REPORT_KINDS},
    "compute_report": lambda pool, runs, js: (pool, {"kind": "agreement"}),
    "infap_report": _sampled,
    "moment_metrics_report": _moment,
}
# The pool report endpoint takes the any-kind operation's fields: `kind` and the kind's `params`.
ENDPOINTS = {
    "compute_report": (lambda pool, runs, js: f"/api/v1/pools/{pool.pk}/reports/", {}, _none),
    "infap_report": (lambda pool, runs, js: f"/api/v1/pools/{pool.pk}/infap/", {"run_ids": "runs"}, _none),
    "moment_metrics_report": (lambda pool, runs, js: f"/api/v1/pools/{pool.pk}/moment-metrics/", {"run_ids": "runs"},
                              _none),
}
