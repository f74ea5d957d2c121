"""Logging filters named by settings.LOGGING."""
from __future__ import annotations

import logging


class ClientErrorsWithoutTraceback(logging.Filter):
    """Django logs a refused request (403, 404, 400) with the exception that made it, so each
    PermissionDenied printed a traceback: noise for an expected answer. Below 500 the line stays
    and the traceback goes; server errors keep theirs."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and status < 500:
            record.exc_info = None
            record.exc_text = None
        return True
