"""The reports area's background operations (services/operations/): a pool report of each kind
that has a computation, and a sampled pool's inferred AP and a moment pool's moment metrics.

A pool report kind is declared once, in kinds/ (its parameters, check and compute); its operation
is built from that declaration here (`report_operation`), so its parameters ARE the kind's. It is
named `report_<kind>` and its jobs are kinded so, as before; a job stores {"pool_id", "kind",
"params"} as the old `compute_report` task read it.

Jobs queued before the registry under annotation.tasks.compute_report name no operation, and the
registry maps one old task name to one operation, so one more operation, `compute_report`, runs
them: it reads the kind from the job's stored params, as the old task did. It can be started too
(a kind and that kind's params, the shape of `POST pools/{id}/reports/`) and is checked the same
way, so the meta-test walks it like any other.
"""
from __future__ import annotations

from django.urls import reverse

from annotation.analysis.params import REQUIRED, Param
from annotation.analysis.sample_eval import TRECVID_MAX_RESULT_SIZE
from annotation.models import Job, Pool, Run
from annotation.services.jobs import task_names
from annotation.services.operations.operation import Operation
from annotation.services.operations.start import operation_job
from annotation.services.reports.create import report_create
from annotation.services.reports.kind import ReportError, ReportKind, kind_params_clean
from annotation.services.reports.kinds import infap, moment_metrics
from annotation.services.reports.registry import POOL_REPORT_KINDS, REPORT_KINDS
from annotation.services.reports.runs import report_runs

# --- a pool report of any kind with a computation ----------------------------------------------


def _report_run(job: Job, progress) -> dict:
    p = job.params
    report = report_create(pool=Pool.objects.get(pk=p["pool_id"]), kind=p["kind"], params=p["params"],
                           created_by=job.created_by, job=job, progress=progress)
    return {"report_id": report.pk, "kind": report.kind, "url": reverse("api:report-detail", args=[report.pk])}


def _kind_operation(kind: ReportKind) -> Operation:
    def check(*, target: Pool, params: dict) -> None:
        if kind.check is not None:
            kind.check(pool=target, params=params)

    return Operation(
        name=f"report_{kind.name}", title=f"Compute a report: {kind.title or kind.name}", params=kind.params,
        check=check, run=_report_run, target=Pool, error=ReportError,
        pack=lambda pool, params: {"pool_id": pool.pk, "kind": kind.name, "params": params})


#: The operation of each pool report kind, by kind.
KIND_OPERATIONS: dict[str, Operation] = {name: _kind_operation(REPORT_KINDS[name]) for name in POOL_REPORT_KINDS}


def report_operation(kind: str) -> Operation:
    if kind not in KIND_OPERATIONS:
        raise ReportError(f"unknown report kind '{kind}'; use one of {', '.join(POOL_REPORT_KINDS)}", param="kind")
    return KIND_OPERATIONS[kind]


def report_start(*, pool: Pool, kind: str, params: dict | None, created_by) -> Job:
    """Checks the request first (so a mistake gets a 400, not a failed job), then queues the kind's
    operation."""
    return operation_job(report_operation(kind), target=pool, params=params, created_by=created_by)


def _any_kind_check(*, target: Pool, params: dict) -> dict:
    clean = kind_params_clean(kind=REPORT_KINDS[params["kind"]], params=params["params"], pool=target)
    return {"kind": params["kind"], "params": clean}


COMPUTE_REPORT = Operation(
    name="compute_report", title="Compute a pool report (its kind read from the job)", run=_report_run,
    params={"kind": Param(str, REQUIRED, "the report kind", choices=POOL_REPORT_KINDS, what="report kind"),
            "params": Param(dict, {}, "the kind's parameters, by name (as the kind declares them)")},
    check=_any_kind_check, target=Pool, target_field="pool_id", error=ReportError,
    job_kind=lambda packed: f"report_{packed['kind']}", legacy_task=task_names.COMPUTE_REPORT)


# --- a sampled pool's inferred AP, a moment pool's moment metrics ------------------------------

def _runs_check(pool: Pool, run_ids: list[int] | None, kind: str) -> None:
    try:
        report_runs(pool, run_ids, kind)
    except ReportError as exc:
        exc.param = "run_ids"
        raise


def _infap_check(*, target: Pool, params: dict) -> None:
    infap.sampled_design(target)
    _runs_check(target, params["run_ids"], Run.Kind.CLIP)


def _infap_run(job: Job, progress) -> dict:
    p = job.params
    report = infap.infap_report_create(pool=Pool.objects.get(pk=p["pool_id"]), run_ids=p.get("run_ids"),
                                       max_result_size=p.get("max_result_size", TRECVID_MAX_RESULT_SIZE),
                                       created_by=job.created_by, job=job)
    return {"report_id": report.pk, "kind": report.kind}


INFAP_REPORT = Operation(
    name="infap_report", title="Compute a sampled pool's inferred AP", params=infap.KIND.params, check=_infap_check,
    run=_infap_run, target=Pool, target_field="pool_id", job_kind=infap.INFAP, error=ReportError,
    legacy_task=task_names.INFAP_REPORT)


def _moment_metrics_check(*, target: Pool, params: dict) -> None:
    moment_metrics.moment_design(target)
    _runs_check(target, params["run_ids"], Run.Kind.MOMENT)


def _moment_metrics_run(job: Job, progress) -> dict:
    p = job.params
    report = moment_metrics.moment_metrics_report_create(
        pool=Pool.objects.get(pk=p["pool_id"]), run_ids=p.get("run_ids"), ks=p.get("ks", (1, 5, 10)),
        iou_thresholds=p.get("iou_thresholds", (0.5, 0.7)), created_by=job.created_by, job=job)
    return {"report_id": report.pk, "kind": report.kind}


MOMENT_METRICS_REPORT = Operation(
    name="moment_metrics_report", title="Compute a moment pool's moment metrics", params=moment_metrics.KIND.params,
    check=_moment_metrics_check, run=_moment_metrics_run, target=Pool, target_field="pool_id",
    job_kind=moment_metrics.MOMENT_METRICS, error=ReportError, legacy_task=task_names.MOMENT_METRICS_REPORT)


OPERATIONS = (*KIND_OPERATIONS.values(), COMPUTE_REPORT, INFAP_REPORT, MOMENT_METRICS_REPORT)
