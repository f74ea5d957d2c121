"""Admin pages of the proxies area: proxy matrices and ranking studies per dataset, and the
human-to-proxy, nDCG and proxy-statistics reports as tables. Work is started from the API or the
command line (compute_proxies, build_ranking_study); the overview's form computes a matrix
(POST datasets/{id}/proxies/)."""
from __future__ import annotations

from django.shortcuts import get_object_or_404, render

from annotation.models import RankingStudy
from annotation.selectors.ranking import proxy_overview, proxy_report_list, proxy_report_tables
from frontend.views.access import page_for


# The proxies a matrix can be computed for, as the compute form names them.
PROXY_CHOICES = [("bow", "BOW (bag of words)"), ("pos", "POS (nouns and verbs)"), ("syn", "SYN (synsets)"),
                 ("met", "MET (METEOR)"), ("all", "All four")]


@page_for("admin")
def overview(request):
    return render(request, "frontend/proxies/overview.html", {"entries": proxy_overview(), "proxy_choices": PROXY_CHOICES,
                                                              "modes": RankingStudy.Mode.choices})


@page_for("admin")
def report_detail(request, report_id: int):
    report = get_object_or_404(proxy_report_list(), pk=report_id)
    return render(request, "frontend/proxies/report.html", {"report": report, **proxy_report_tables(report=report)})
