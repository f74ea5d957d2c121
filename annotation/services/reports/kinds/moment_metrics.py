"""The `moment_metrics` report kind: R@K of moment runs at temporal IoU thresholds against a moment
pool's corrected and original moments. Created by annotation.services.reports.moments (its
parameters are checked there and by its API view); its own pages and CSV show it, so it lays out
no tables here."""
from __future__ import annotations

from annotation.services.reports.kind import ReportKind

KIND = ReportKind(name="moment_metrics", title=None)
