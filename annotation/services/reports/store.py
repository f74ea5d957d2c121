"""The one place a Report row is created: every kind's result is stored as plain JSON beside its
parameters and the library versions that computed it, so every published figure can be traced to a
report id."""
from __future__ import annotations

from annotation.models import Job, Pool, Report
from annotation.provenance import json_ready, report_versions


def report_store(*, kind: str, dataset_id: int, title: str, params: dict, result, pool: Pool | None = None,
                 job: Job | None = None, created_by=None, versions: dict[str, str] | None = None) -> Report:
    """Stores a computed report. `versions` defaults to the report libraries' (report_versions);
    a kind computed with other libraries names its own."""
    return Report.objects.create(kind=kind, dataset_id=dataset_id, pool=pool, title=title, params=json_ready(params),
                                 versions=versions or report_versions(), result=json_ready(result), job=job,
                                 created_by=created_by)
