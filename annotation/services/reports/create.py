"""The one place a report is created: numbers stored with the parameters and library versions
that produced them, so every published figure can be traced to a report id.

Each kind declares its parameters, computation and tables in kinds/ (registry.py lists them).
Pool kinds: `report_create` computes and stores one (the `report` command, the job, a pool's
machine judge); each is also an operation (operations.py, whose `report_start` queues its job).
Kinds computed by their own area (a judgment set's evaluation and agreement, a machine judge's
set report, judging simulations, proxy nDCG and statistics, human-to-proxy agreement) store their
result with `report_save` here; their jobs are their area's operations.
"""
from __future__ import annotations

from collections.abc import Callable

from django.db import transaction

from annotation.models import Job, Pool, Report
from annotation.selectors.reports import pool_raters_without_profile
from annotation.services.accounts.raters import rater_profile
from annotation.services.reports.kind import ReportError, ReportKind, kind_params_clean
from annotation.services.reports.registry import POOL_REPORT_KINDS, REPORT_KINDS
from annotation.services.reports.store import report_store

__all__ = ["ReportError", "report_create", "report_params_clean", "report_save"]


def _registered(kind: str) -> ReportKind:
    if kind not in REPORT_KINDS:
        raise ReportError(f"unknown report kind '{kind}'; use one of {', '.join(REPORT_KINDS)}")
    return REPORT_KINDS[kind]


def report_save(*, kind: str, dataset_id: int, title: str, params: dict, result, pool: Pool | None = None,
                job: Job | None = None, created_by=None, versions: dict[str, str] | None = None) -> Report:
    """Stores a report of a registered kind that its area computed (see store.report_store for
    `versions`)."""
    _registered(kind)
    return report_store(kind=kind, dataset_id=dataset_id, title=title, params=params, result=result, pool=pool,
                        job=job, created_by=created_by, versions=versions)


def _pool_kind(kind: str) -> ReportKind:
    if kind not in POOL_REPORT_KINDS:
        raise ReportError(f"unknown report kind '{kind}'; use one of {', '.join(POOL_REPORT_KINDS)}")
    return REPORT_KINDS[kind]


def report_params_clean(*, kind: str, params: dict | None, pool: Pool) -> dict:
    """The full parameter set of a pool report: given values checked, defaults filled in."""
    return kind_params_clean(kind=_pool_kind(kind), params=params, pool=pool)


def _ensure_pseudonyms(pool: Pool) -> None:
    """Reports name raters only by pseudonym; a rater created outside the rater screens may not
    have one yet."""
    for user in pool_raters_without_profile(pool=pool):
        rater_profile(user=user)


def report_create(*, pool: Pool, kind: str, params: dict | None = None, created_by=None, job: Job | None = None,
                  progress: Callable | None = None) -> Report:
    """Computes a report of the pool and stores it with its parameters and library versions."""
    report_kind = _pool_kind(kind)
    clean = kind_params_clean(kind=report_kind, params=params, pool=pool)
    _ensure_pseudonyms(pool)
    result = report_kind.compute(pool=pool, params=clean, progress=progress)
    with transaction.atomic():
        return report_save(kind=kind, dataset_id=pool.dataset_id, pool=pool, title=f"{report_kind.title}: {pool.name}",
                           params=clean | report_kind.fixed_params, result=result, job=job, created_by=created_by)
