"""The `human_proxy` report kind: how often each semantic proxy orders a ranking study's captions
as people did. Created by annotation.services.ranking (report.py; operations.py starts its job,
whose only input is the study: no parameter is chosen); the proxies pages lay it out
(selectors/ranking.py)."""
from __future__ import annotations

from annotation.services.reports.kind import ReportKind

KIND = ReportKind(name="human_proxy", title=None, params={})
