"""The `proxy_ndcg` report kind: a run's graded nDCG against a semantic-proxy matrix. Created by
annotation.services.proxies.matrices; the proxies pages lay it out (selectors/ranking.py)."""
from __future__ import annotations

from annotation.services.reports.kind import ReportKind

KIND = ReportKind(name="proxy_ndcg", title=None)
