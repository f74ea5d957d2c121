"""Pages of the moments area: moment and sampled pools, their moment-metrics and inferred-AP
reports, and TRECVID's per-caption chart.

Pages render what is stored; building pools and computing reports go through the REST API from
the page script (frontend/static/frontend/moments/moments.js), so every rule and refusal is the API's.
"""
from __future__ import annotations

import re

from django.http import Http404
from django.shortcuts import get_object_or_404, render

from annotation import roles
from annotation.models import Pool
from annotation.page_access import page_for
from annotation.selectors.moments import (moment_and_sampled_pools, moment_pool_summary, pool_reports, runs_by_dataset,
                                          sampled_pool_summary)
from annotation.services.reports.kinds.infap import INFAP
from annotation.services.reports.kinds.moment_metrics import MOMENT_METRICS

READERS = ("admin", roles.RESEARCHER)


@page_for(*READERS)
def index(request):
    return render(request, "frontend/moments/index.html", {
        "pools": moment_and_sampled_pools(), "datasets": runs_by_dataset(), "is_admin": roles.is_admin(request.user)})


@page_for(*READERS)
def pool_detail(request, pool_id: int):
    pool = get_object_or_404(Pool.objects.select_related("dataset"), pk=pool_id)
    context = {"pool": pool, "is_admin": roles.is_admin(request.user), "runs": list(pool.runs.order_by("name"))}
    if hasattr(pool, "moment_design"):
        context |= {"kind": "moment", "summary": moment_pool_summary(pool=pool),
                    "reports": pool_reports(pool=pool, kind=MOMENT_METRICS)}
    elif hasattr(pool, "sampled_design"):
        context |= {"kind": "sampled", "summary": sampled_pool_summary(pool=pool), "reports": pool_reports(pool=pool, kind=INFAP)}
    else:
        raise Http404("This pool is neither a moment pool nor a sampled pool.")
    return render(request, "frontend/moments/pool.html", context)


def _column_groups(columns: list[str]) -> list[tuple[str, int]]:
    """'R@1 IoU=0.5', 'R@5 IoU=0.5', ..., 'Video R@1' -> [('IoU = 0.5', 3), ..., ('Video', 3)], the
    spanning header row of moment-retrieval papers."""
    groups: list[tuple[str, int]] = []
    for column in columns:
        match = re.search(r"IoU=(\S+)", column)
        name = f"IoU = {match.group(1)}" if match else "Video"
        if groups and groups[-1][0] == name:
            groups[-1] = (name, groups[-1][1] + 1)
        else:
            groups.append((name, 1))
    return groups


def _cell(corrected: float, original: float) -> dict:
    """FIRE's 'A (B + C)': A with corrected positives, B with original ones, C = A - B."""
    return {"corrected": corrected, "original": original, "delta": corrected - original,
            "delta_size": abs(corrected - original)}


@page_for(*READERS)
def moment_metrics(request, pool_id: int, report_id: int):
    pool = get_object_or_404(Pool.objects.select_related("dataset"), pk=pool_id)
    report = get_object_or_404(pool_reports(pool=pool, kind=MOMENT_METRICS), pk=report_id)
    result = report.result
    columns = result["columns"]
    rows = [{"run": row["run"], "cells": [_cell(100 * row["corrected"][c], 100 * row["original"][c]) for c in columns]}
            for row in result["runs"]]
    return render(request, "frontend/moments/moment_metrics.html", {
        "pool": pool, "report": report, "result": result, "groups": _column_groups(columns),
        "headers": [re.sub(r"\s*IoU=\S+", "", c).replace("Video ", "") for c in columns], "rows": rows})


@page_for(*READERS)
def infap(request, pool_id: int, report_id: int):
    pool = get_object_or_404(Pool.objects.select_related("dataset"), pk=pool_id)
    report = get_object_or_404(pool_reports(pool=pool, kind=INFAP), pk=report_id)
    result = report.result
    runs = result["runs"]
    chosen = request.GET.get("run", "")
    run = next((r for r in runs if str(r["run_id"]) == chosen), runs[0] if runs else None)
    measure = result["measure"]
    per_query = [{"query": q, "score": run["per_query"][measure][q], **result["per_query_summary"][q]}
                 for q in result["queries"]] if run else []
    return render(request, "frontend/moments/infap.html", {
        "pool": pool, "report": report, "result": result, "measure": measure, "run": run, "per_query": per_query,
        "means": [{"run": r, "values": [r["mean"][m] for m in result["measures"]]} for r in runs]})
