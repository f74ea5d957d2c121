"""The `proxy_analysis` report kind: per semantic proxy, how many captions pass each threshold per
clip. Created by annotation.services.proxies.matrices; the proxies pages lay it out
(selectors/ranking.py)."""
from __future__ import annotations

from annotation.services.reports.kind import ReportKind

KIND = ReportKind(name="proxy_analysis", title=None)
