"""What an unexpected error (a 500) shows when DEBUG is on, as the demo runs (scripts/demo.sh).

Django's technical 500 page shows every setting, the request's META (under runserver and most WSGI
servers that is the whole process environment: DATABASE_URL with its password, the object store's
keys) and each frame's local variables. Its filter hides only names matching API|TOKEN|KEY|SECRET|
PASS|SIGNATURE and, with DEBUG on, does not even do that for POST data and marked variables. On a
shared demo a researcher or a rater who hit a bug saw all of it.

So, whatever DEBUG says:
- only an admin (staff, who runs the instance and could read its environment anyway) gets the
  technical page: a traceback is what they need to fix the bug;
- everyone else gets the page production shows (handler500), and the error is logged as always;
- the technical page itself shows no settings and no environment: of META only the request's own
  headers and line (HTTP_*, method, path, query), with credentials hidden by a wider pattern, and
  no frame variable that holds an environment (the WSGI server's `environ`, os.environ, a copy).
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping

from django.views import defaults
from django.views.debug import ExceptionReporter, SafeExceptionReporterFilter

from annotation import roles

#: The parts of META that describe the request itself; the rest is the server's environment.
REQUEST_META = frozenset({"REQUEST_METHOD", "PATH_INFO", "QUERY_STRING", "CONTENT_TYPE", "CONTENT_LENGTH",
                          "SERVER_NAME", "SERVER_PORT", "SERVER_PROTOCOL", "SCRIPT_NAME", "REMOTE_ADDR"})


class NoEnvironmentFilter(SafeExceptionReporterFilter):
    """Hides settings and the process environment from every error report, DEBUG or not."""

    hidden_settings = re.compile(r"API|AUTH|TOKEN|KEY|SECRET|PASS|SIGNATURE|COOKIE|CSRF|SESSION|CREDENTIAL|DSN|URL",
                                 flags=re.IGNORECASE)

    def is_active(self, request) -> bool:
        return True  # Django's switches itself off when DEBUG is on: the case that matters here

    def get_safe_settings(self) -> dict:
        return {"settings": "not shown on error pages (config/error_reports.py); read them on the host"}

    def get_traceback_frame_variables(self, request, tb_frame):
        return [(name, self.cleansed_substitute if _is_environment(value) else value)
                for name, value in super().get_traceback_frame_variables(request, tb_frame)]

    def get_safe_request_meta(self, request) -> dict:
        meta = super().get_safe_request_meta(request)
        return {key: value for key, value in meta.items() if key.startswith("HTTP_") or key in REQUEST_META}


def _is_environment(value) -> bool:
    """A mapping holding environment variables or request META (a WSGI environ, os.environ, its copy)."""
    if value is os.environ:
        return True
    if not isinstance(value, Mapping):
        return False
    try:
        keys = [key for key in value.keys() if isinstance(key, str)]
    except Exception:  # noqa: BLE001 - a broken mapping in a failing frame is shown as hidden
        return True
    return any(key in os.environ or key == "wsgi.input" or key.startswith("HTTP_") or key in REQUEST_META
               for key in keys)


class AdminsOnlyExceptionReporter(ExceptionReporter):
    """The technical 500 page for admins; for anyone else the ordinary 500 page."""

    def _for_admins(self) -> bool:
        return self.request is None or roles.is_admin(getattr(self.request, "user", None))

    def get_traceback_html(self):
        if self._for_admins():
            return super().get_traceback_html()
        return defaults.server_error(self.request).content.decode()

    def get_traceback_text(self):
        if self._for_admins():
            return super().get_traceback_text()
        return "Server Error (500)\n"
