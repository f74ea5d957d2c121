"""Admin pages of the proxies area: proxy matrices and ranking studies per dataset, and the
human-to-proxy, nDCG and proxy-statistics reports as tables. Work is started from the API or the
command line (compute_proxies, build_ranking_study); the overview's form computes a matrix
(POST datasets/{id}/proxies/), and its random-baseline form (a GET: nothing is stored) shows the
random-ranking nDCG of the dataset's matrices as `proxy_ndcg --random-baseline` prints it."""
from __future__ import annotations

from django.shortcuts import get_object_or_404, render

from annotation.models import RankingStudy
from annotation.page_access import page_for
from annotation.query_numbers import ID_MAX, NotAWholeNumber, whole_number
from annotation.selectors.ranking import proxy_overview, proxy_report_list, proxy_report_tables
from annotation.services.proxies.matrices import (EMPTY_QUERY_RULES, GAINS, MAX_RANDOM_DRAWS, RANDOM_DRAWS_DEFAULT,
                                                  RANDOM_SEED_DEFAULT, ProxyError, proxy_random_baseline_table)


# The proxies a matrix can be computed for, as the compute form names them.
PROXY_CHOICES = [("bow", "BOW (bag of words)"), ("pos", "POS (nouns and verbs)"), ("syn", "SYN (synsets)"),
                 ("met", "MET (METEOR)"), ("all", "All four")]


@page_for("admin")
def overview(request):
    entries = proxy_overview()
    asked = request.GET.get("baseline")
    for entry in entries:
        if asked == str(entry["dataset"].pk):
            entry["baseline"] = _random_baseline(entry["dataset"], request.GET)
    return render(request, "frontend/proxies/overview.html", {
        "entries": entries, "proxy_choices": PROXY_CHOICES, "modes": RankingStudy.Mode.choices, "gains": GAINS,
        "empty_rules": EMPTY_QUERY_RULES, "max_draws": MAX_RANDOM_DRAWS,
        "baseline_defaults": {"draws": RANDOM_DRAWS_DEFAULT, "seed": RANDOM_SEED_DEFAULT, "gain": GAINS[0],
                              "empty": EMPTY_QUERY_RULES[0]}})


def _random_baseline(dataset, query) -> dict:
    """The form's values (kept to fill it again) and the service's table, or the reason there is none."""
    asked = {"draws": query.get("draws", str(RANDOM_DRAWS_DEFAULT)), "seed": query.get("seed", str(RANDOM_SEED_DEFAULT)),
             "gain": query.get("gain", GAINS[0]), "empty": query.get("empty", EMPTY_QUERY_RULES[0])}
    try:  # the one parser of numbers in a query string: ASCII digits only, so no seed below 0
        draws, seed = (whole_number(asked[name], low=0, high=ID_MAX) for name in ("draws", "seed"))
    except NotAWholeNumber:
        return {"asked": asked, "error": "draws and seed must be whole numbers (0 or more, digits 0-9)"}
    try:
        table = proxy_random_baseline_table(dataset=dataset, draws=draws, seed=seed, gain=asked["gain"],
                                            empty=asked["empty"])
    except ProxyError as exc:
        return {"asked": asked, "error": str(exc)}
    return {"asked": asked, "table": table}


@page_for("admin")
def report_detail(request, report_id: int):
    report = get_object_or_404(proxy_report_list(), pk=report_id)
    return render(request, "frontend/proxies/report.html", {"report": report, **proxy_report_tables(report=report)})
