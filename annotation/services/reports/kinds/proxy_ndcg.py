"""The `proxy_ndcg` report kind: a run's graded nDCG against a semantic-proxy matrix. Created by
annotation.services.proxies (matrices.py computes it, operations.py starts its job from these
parameters); the proxies pages lay it out (selectors/ranking.py)."""
from __future__ import annotations

from annotation.analysis.params import REQUIRED, Param
from annotation.services.reports.kind import ReportKind

GAINS = ("linear", "exponential")
EMPTY_QUERY_RULES = ("skip", "zero")

PARAMS = {
    "artefact_id": Param(int, REQUIRED, "id of a proxy matrix of the run's dataset, whose S is the relevance", 1),
    "gain": Param(str, "linear", "linear: S (the reference code's); exponential: 2^S - 1", choices=GAINS),
    "empty": Param(str, "skip", "queries with no S > 0: left out of the means (skip) or scored 0 (zero)",
                   choices=EMPTY_QUERY_RULES),
}

KIND = ReportKind(name="proxy_ndcg", title=None, params=PARAMS)
