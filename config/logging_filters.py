"""Logging filters and the JSON formatter named by settings.LOGGING."""
from __future__ import annotations

import logging

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter


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


class JsonLinesFormatter(JsonFormatter):
    """One JSON object per line (REJUDGE_LOG_FORMAT=json): time (ISO 8601, UTC), level, logger,
    message, request_id, then any extra fields the call passed (e.g. status_code)."""

    def __init__(self) -> None:
        super().__init__("%(levelname)s %(name)s %(message)s %(request_id)s",
                         rename_fields={"levelname": "level", "name": "logger"}, timestamp="time",
                         # Django passes the request object with each refused or failed request;
                         # its path is already in the message.
                         reserved_attrs=[*RESERVED_ATTRS, "request"])
