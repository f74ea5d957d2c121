"""The `infap` report kind: inferred AP (xinfAP, and trec_eval's infAP on a uniform sample) of runs
on a sampled pool. Created by annotation.services.reports.moments (`max_result_size` defaults to
annotation.analysis.sample_eval.TRECVID_MAX_RESULT_SIZE); its own pages and CSV show it."""
from __future__ import annotations

from annotation.services.reports.kind import ReportKind

KIND = ReportKind(name="infap", title=None)
