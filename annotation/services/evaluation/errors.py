"""The one error of scoring: a request that cannot be scored (an unknown measure, format or
option, nothing to score); the message says why. Bad files are ImportRejected (formats/errors.py)."""
from __future__ import annotations


class EvaluationError(ValueError):
    """A request that cannot be scored (unknown measure or option, no query in common); the message says why."""
