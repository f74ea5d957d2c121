"""Issue 26: one place creates a report or starts its job (annotation/services/reports/create.py).

Read from the source, like test_import_graph.py: outside services/reports/, no module creates a
Report row or calls report_store; report_save refuses a kind the registry does not list, and a
pool report's start (reports/operations.py report_start) a kind that is not a pool report's."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from annotation.models import Job
from annotation.services.reports.create import ReportError, report_save
from annotation.services.reports.operations import report_start

ROOT = Path(__file__).resolve().parents[2]
REPORTS = ROOT / "annotation" / "services" / "reports"


def _calls(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                found.add(func.id)
            elif isinstance(func, ast.Attribute):
                inner = func.value
                owner = inner.value.id if (isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name)) else ""
                found.add(f"{owner}.{inner.attr}.{func.attr}" if owner else func.attr)
    return found


def test_only_the_reports_package_stores_reports():
    offenders = {}
    for path in (ROOT / "annotation").rglob("*.py"):
        if REPORTS in path.parents or "migrations" in path.parts:
            continue
        bad = _calls(path) & {"report_store", "Report.objects.create", "Report.objects.bulk_create"}
        if bad:
            offenders[str(path.relative_to(ROOT))] = bad
    assert offenders == {}


def test_the_store_is_called_from_create_and_the_two_kinds_that_start_themselves_only():
    callers = {str(p.relative_to(REPORTS)) for p in REPORTS.rglob("*.py") if "report_store" in _calls(p)}
    # infap and moment_metrics keep their own start and store: create.py imports the registry,
    # which imports them, so their calling create.py would be an import circle.
    assert callers == {"create.py", "kinds/infap.py", "kinds/moment_metrics.py"}


@pytest.mark.django_db
def test_an_unknown_kind_is_refused_before_anything_is_made():
    with pytest.raises(ReportError, match="unknown report kind 'nope'"):
        report_start(pool=None, kind="nope", params={}, created_by=None)
    with pytest.raises(ReportError, match="unknown report kind 'nope'"):
        report_save(kind="nope", dataset_id=1, title="t", params={}, result={})
    assert Job.objects.count() == 0
