"""Deleting a dataset, a pool or a judgment set: the one service the three delete operations
(services/datasets, pools and judgment_sets operations.py) run, and the one start they share.

The rows go in set-based statements (annotation/bulk_delete.py: no row is read into Python, so
memory stays flat at any size), inside the job's one transaction: a failure part-way leaves every
row where it was. The files the doomed rows name (a judgment set's file, a score-matrix run's file,
a report's or an export's artefact; a dataset's prepared media copies) are listed before the rows
go and removed only once the transaction has committed, so a rollback never finds a row whose file
is gone.

A delete started again while one for the same row is queued or running gets that job back, and a
delete whose row is already gone succeeds deleting nothing: retrying is harmless.
"""
from __future__ import annotations

import logging
from functools import cache

from django.apps import apps
from django.db import connection, transaction
from django.db.models import Model, QuerySet

from annotation.bulk_delete import (DeletePlan, DeleteProtected, delete_plan, delete_protected, delete_rows,
                                    doomed_counts)
from annotation.models import Artefact, Dataset, Job, JudgmentSet, Run
from annotation.services.datasets.runs import RUNS
from annotation.services.judgment_sets.storage import JUDGMENTS, judgment_file_remove
from annotation.services.media.prepare import FOLDER as PREPARED
from annotation.services.operations.operation import Operation
from annotation.services.operations.start import operation_existing, operation_start
from annotation.services.queue.table_statistics import stale_tables_analyze
from annotation.storage import stored_file_delete, stored_folder_delete

log = logging.getLogger(__name__)

#: The models whose rows name a stored file: model -> (field, storage area).
STORED_FILES: dict[type[Model], tuple[str, str]] = {
    JudgmentSet: ("stored_file", JUDGMENTS),
    Run: ("scores_file", RUNS),  # named by its checksum: other datasets' runs may share it
    Artefact: ("path", "exports"),
}


@cache
def plan_for(model: type[Model]) -> DeletePlan:
    return delete_plan(model)


def _blockers_text(found: dict[str, int]) -> str:
    return ", ".join(f"{count} {name.split('.')[-1].lower()}{'s' if count != 1 else ''}" for name, count in found.items())


def delete_blockers(root: QuerySet) -> str:
    """Why the rows may not be deleted ('' when they may): what protects them, counted."""
    return _blockers_text(delete_protected(plan_for(root.model), root))


def delete_counts(root: QuerySet) -> dict[str, int]:
    """What deleting `root`'s rows deletes: each model's name (plural) -> how many of its rows."""
    counts = doomed_counts(plan_for(root.model), root)
    return {apps.get_model(label)._meta.verbose_name_plural: n for label, n in counts.items() if n}


def _files_named(plan: DeletePlan, root: QuerySet) -> dict[str, set[str]]:
    """Storage area -> the files the doomed rows name (a few per judgment set, run or artefact)."""
    files: dict[str, set[str]] = {}
    for model, (name, area) in STORED_FILES.items():
        for rows in plan.rows(model, root):
            files.setdefault(area, set()).update(n for n in rows.exclude(**{name: ""}).values_list(name, flat=True)
                                                 .iterator() if n)
    return {area: names for area, names in files.items() if names}


def _folders_named(root: QuerySet) -> set[str]:
    """The media folders that are a doomed dataset's own: its clips' prepared copies
    (services/media/prepare.py keeps them under prepared/<dataset id>/)."""
    if root.model is not Dataset:
        return set()
    return {f"{PREPARED}/{pk}" for pk in root.values_list("pk", flat=True)}


def _files_remove(files: dict[str, set[str]], folders: set[str] = frozenset()) -> None:
    for folder in sorted(folders):
        try:
            stored_folder_delete("media", folder)
        except Exception:  # noqa: BLE001 - as below
            log.exception("deleted a dataset whose media folder %s could not be removed", folder)
    for area, names in files.items():
        for name in sorted(names):
            try:
                if area == JUDGMENTS:
                    judgment_file_remove(name)
                elif area == RUNS and Run.objects.filter(scores_file=name).exists():
                    continue  # another dataset imported the same matrix: its run still reads the file
                else:
                    stored_file_delete(area, name)
            except Exception:  # noqa: BLE001 - the rows are gone; a file left behind is logged, not raised
                log.exception("deleted rows named %s/%s, which could not be removed", area, name)


def _statistics_refresh(plan: DeletePlan) -> None:
    """Analyzes the doomed tables whose planner statistics are stale (where autovacuum is off or
    behind): planned from the statistics of a just-imported 1,000,000-clip table as if it were
    empty, the deletes' semi-joins took 17 s instead of 4."""
    if connection.vendor != "postgresql":
        return
    tables = sorted({m._meta.db_table for m in plan.order} | {k.model._meta.db_table for keys in plan.nulled.values()
                                                              for k in keys})
    stale_tables_analyze(tables)


def rows_delete(root: QuerySet, *, progress=None) -> dict:
    """Deletes `root`'s rows and everything depending on them (in the caller's transaction, which
    a job's is); their files go once it commits. Returns the rows deleted per model and the number
    of files named. Raises DeleteProtected (nothing written) when protected rows point into them."""
    plan = plan_for(root.model)
    with transaction.atomic():
        _statistics_refresh(plan)
        files, folders = _files_named(plan, root), _folders_named(root)
        counts = delete_rows(plan, root, progress)
        transaction.on_commit(lambda: _files_remove(files, folders), robust=True)
    return {"deleted": counts, "files": sum(len(names) for names in files.values())}


def delete_job_pending(operation: Operation, *, target: Model) -> Job | None:
    """A delete of `target` that is queued or running (its retry gets this one back)."""
    return (Job.objects.filter(operation=operation.name, status__in=[Job.Status.QUEUED, Job.Status.RUNNING],
                               **{f"params__{operation.target_field}": target.pk}).order_by("pk").first())


def delete_start(operation: Operation, *, target: Model, created_by, idempotency_key: str | None = None
                 ) -> tuple[Job, bool]:
    """Starts `operation` (a delete) on `target`; returns (job, created). A request sent again (the
    same idempotency key, or while a delete of the same row is still queued or running) gets the
    first job back. Raises the operation's error when protected rows point into the target's."""
    existing = operation_existing(created_by=created_by, idempotency_key=idempotency_key)
    if existing is None:
        existing = delete_job_pending(operation, target=target)
    if existing is not None:
        return existing, False
    return operation_start(operation, target=target, created_by=created_by, idempotency_key=idempotency_key)


class DeleteRefused(ValueError):
    """A delete refused: protected rows (a release's) refer to the row."""


def _check(*, target, params: dict) -> None:
    blockers = delete_blockers(type(target)._base_manager.filter(pk=target.pk))
    if blockers:
        raise DeleteRefused(f"{target._meta.verbose_name} '{target}' cannot be deleted: {blockers} refer to it "
                            f"(a release is kept for good)")


def _runner(model: type[Model], field: str):
    def run(job: Job, progress) -> dict:
        pk = job.params[field]
        root = model._base_manager.filter(pk=pk)
        existed = root.exists()  # a retried delete whose first run went through deletes nothing
        try:
            outcome = rows_delete(root, progress=progress)
        except DeleteProtected as exc:
            raise DeleteRefused(f"{model._meta.verbose_name} {pk} cannot be deleted: {_blockers_text(exc.blockers)} "
                                f"refer to it (a release is kept for good)") from exc
        return {field: pk, "existed": existed, **outcome}
    return run


def delete_operation(model: type[Model], field: str, *, name: str) -> Operation:
    """The operation that deletes a `model` row (named by `field` in the job's parameters) and
    everything depending on it: an area declares its own with this."""
    return Operation(name=name, title=f"Delete a {model._meta.verbose_name} and everything that depends on it",
                     run=_runner(model, field), check=_check, target=model, target_field=field, error=DeleteRefused)
