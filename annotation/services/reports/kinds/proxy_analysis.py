"""The `proxy_analysis` report kind: per semantic proxy, how many captions pass each threshold per
clip. Created by annotation.services.proxies (matrices.py computes it, operations.py starts its job
from these parameters); the proxies pages lay it out (selectors/ranking.py)."""
from __future__ import annotations

from annotation.analysis.params import REQUIRED, Param
from annotation.services.reports.kind import ReportKind

PARAMS = {
    "artefact_ids": Param(list, REQUIRED, "ids of proxy matrices of the dataset, in the order the report lists them",
                          1, None, unique_sorted=False, max_items=10),
    "thresholds": Param(list, None, "thresholds t: a caption counts for a clip when its S >= t; default 0.05, "
                        "0.10, ..., 1.00", 0, 2, items=float, nullable=True, max_items=200),
}

KIND = ReportKind(name="proxy_analysis", title=None, params=PARAMS)
