"""Rejudge's researcher client: list, download and verify releases; read their judgments with
ir_measures / pandas; score run files locally as the platform's ``evaluate`` does."""
from __future__ import annotations

__version__ = "0.1.0"

from .client import Client, Release  # noqa: E402
from .errors import (APIError, MissingExtra, RejudgeError, ReleaseFormatError, RunFileError,  # noqa: E402
                     VerificationError)
from .evaluate import CONVENTIONS, DEFAULT_MEASURES, JUDGED_THRESHOLD, Evaluation, evaluate  # noqa: E402
from .local import LocalRelease, open_release  # noqa: E402
from .verify import verify  # noqa: E402

__all__ = ["APIError", "CONVENTIONS", "Client", "DEFAULT_MEASURES", "Evaluation", "JUDGED_THRESHOLD", "LocalRelease",
           "MissingExtra",
           "RejudgeError", "Release", "ReleaseFormatError", "RunFileError", "VerificationError", "evaluate",
           "open_release", "verify"]
