"""The runs a moment-metrics or inferred-AP report scores."""
from __future__ import annotations

from collections.abc import Sequence

from annotation.models import Pool, PoolRun, Run
from annotation.services.reports.kind import ReportError


def report_runs(pool: Pool, run_ids: Sequence[int] | None, kind: str) -> list[Run]:
    """The pool's runs by default; other runs of the dataset may be scored against its labels."""
    if run_ids is None:
        return [pr.run for pr in PoolRun.objects.filter(pool=pool).select_related("run").order_by("pk")]
    found = Run.objects.in_bulk(run_ids)
    runs = [found[pk] for pk in run_ids if pk in found and found[pk].dataset_id == pool.dataset_id]
    missing = sorted(set(run_ids) - {r.pk for r in runs})
    if missing:
        raise ReportError(f"runs {missing} do not exist in dataset '{pool.dataset.name}'")
    wrong = [r.name for r in runs if r.kind != kind]
    if wrong:
        raise ReportError(f"runs {wrong} are not {kind} runs")
    return runs
