"""Every report kind, by name: the one list the API, the pages, the `report` command and the jobs
read. A new kind is a module under kinds/ declaring a `ReportKind`, added here."""
from __future__ import annotations

from annotation.models import Report
from annotation.services.reports.kind import ReportKind
from annotation.services.reports.kinds import (agreement, corrected_leaderboard, evaluation, human_proxy, infap,
                                               judging_estimates,
                                               judging_simulation, judgment_set_agreement, machine_judge, metrics,
                                               moment_metrics, proxy_analysis, proxy_ndcg, sample_estimate)
from annotation.services.reports.tables import ReportTable

REPORT_KINDS: dict[str, ReportKind] = {kind.name: kind for kind in (
    agreement.KIND, metrics.KIND, sample_estimate.KIND, judging_estimates.KIND, machine_judge.KIND,
    judging_simulation.KIND, evaluation.KIND, judgment_set_agreement.KIND,
    moment_metrics.KIND, infap.KIND, proxy_ndcg.KIND, proxy_analysis.KIND, human_proxy.KIND,
    corrected_leaderboard.KIND,
)}

#: The kinds `report_create` computes from a pool and its parameters (the pool report form, `POST
#: pools/{id}/reports/`, `report --kind`); the others are created by their own area's service.
POOL_REPORT_KINDS: tuple[str, ...] = tuple(name for name, kind in REPORT_KINDS.items() if kind.compute)


def kind_title(kind: str) -> str:
    """The kind in words where pages name it; the bare name for kinds that have none."""
    found = REPORT_KINDS.get(kind)
    return found.title if found and found.title else kind


def report_tables(*, report: Report, rater_names: dict | None = None) -> list[ReportTable]:
    """The report's tables in the papers' layout; empty for kinds laid out by their own pages.
    rater_names (pseudonym -> text, from selectors.reports.report_rater_names) replaces the
    platform's rater pseudonyms on pages; CSV downloads keep the bare pseudonyms."""
    kind = REPORT_KINDS.get(report.kind)
    if kind is None or kind.tables is None or not report.result:
        return []
    return kind.tables(report.result, rater_names) if kind.names_raters else kind.tables(report.result)
