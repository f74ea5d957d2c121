"""The exports area's background operations (services/operations/): a pool's labels written as a
file in one of the export formats (labels.py).

Each format is an operation, `export_<format>`, whose parameters are the format's declared ones
and the aggregation rule (labels.export_format_params: one declaration); its jobs are kinded
`export_<format>` and store {"pool_id", "format", "params"}, as before. The whole export reads
one snapshot, so its streams agree while raters keep labelling.

Jobs queued before the registry under annotation.tasks.export_labels name no operation, and the
registry maps one old task name to one operation, so one more operation, `export_labels`, runs
them: it reads the format from the job's stored params, as the old task did (and can be started
with a format and its params, checked the same way).
"""
from __future__ import annotations

from django.urls import reverse

from annotation.analysis.params import REQUIRED, Param
from annotation.models import Job, Pool
from annotation.services.exports.labels import (EXPORT_FORMATS, ExportError, export_create, export_format_params,
                                                export_params_clean, export_params_complete)
from annotation.services.jobs import task_names
from annotation.services.operations.operation import Operation
from annotation.services.operations.start import operation_job


def _export_run(job: Job, progress) -> dict:
    p = job.params
    artefact = export_create(pool=Pool.objects.get(pk=p["pool_id"]), fmt=p["format"], params=p["params"], job=job,
                             progress=progress)
    return {"export_id": artefact.pk, "name": artefact.name, "size": artefact.size, "sha256": artefact.sha256,
            "download_url": reverse("api:export-download", args=[artefact.pk])}


def _format_operation(fmt: str) -> Operation:
    def check(*, target: Pool, params: dict) -> dict:
        return export_params_complete(fmt=fmt, params=params, pool=target)

    return Operation(
        name=f"export_{fmt}", title=f"Export a pool's labels as {fmt}", params=export_format_params(fmt), check=check,
        run=_export_run, target=Pool, error=ExportError, snapshot=True,
        pack=lambda pool, params: {"pool_id": pool.pk, "format": fmt, "params": params})


#: The operation of each export format, by format.
FORMAT_OPERATIONS: dict[str, Operation] = {fmt: _format_operation(fmt) for fmt in EXPORT_FORMATS}


def export_operation(fmt: str) -> Operation:
    export_format_params(fmt)  # refuses an unknown format, naming the field
    return FORMAT_OPERATIONS[fmt]


def export_start(*, pool: Pool, fmt: str, params: dict | None, created_by) -> Job:
    """Checks the request first (so a mistake gets a 400, not a failed job), then queues the
    format's operation."""
    return operation_job(export_operation(fmt), target=pool, params=params, created_by=created_by)


def _any_format_check(*, target: Pool, params: dict) -> dict:
    return {"format": params["format"],
            "params": export_params_clean(fmt=params["format"], params=params["params"], pool=target)}


EXPORT_LABELS = Operation(
    name="export_labels", title="Export a pool's labels (the format read from the job)", run=_export_run,
    params={"format": Param(str, REQUIRED, "the export format", choices=tuple(EXPORT_FORMATS), what="export format"),
            "params": Param(dict, {}, "the format's parameters, by name (as the format declares them)")},
    check=_any_format_check, target=Pool, target_field="pool_id", error=ExportError, snapshot=True,
    job_kind=lambda packed: f"export_{packed['format']}", legacy_task=task_names.EXPORT_LABELS)

OPERATIONS = (*FORMAT_OPERATIONS.values(), EXPORT_LABELS)
