"""Issue 17 item 4: JSON logs on request (REJUDGE_LOG_FORMAT=json), one object per line with time,
level, logger, message and the request id; each 403 logged once, without a traceback; server
errors keep theirs. Run in a fresh process each, with the settings a deployment would have, since
logging is configured once when Django starts."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import REPO

SCRIPT = r"""
import logging, sys
import django
django.setup()
from django.test import Client
client = Client()
for step in sys.argv[1:]:
    if step == "api403":
        assert client.get("/api/v1/me/", HTTP_X_REQUEST_ID="0123456789abcdef0123456789abcdef").status_code == 403
    elif step == "view403":  # PermissionDenied raised in a plain Django view: Django logs it with the exception
        response = client.get("/metrics")
        assert response.status_code == 403
        sys.stdout.write("header " + response["X-Request-ID"] + "\n")
    elif step == "bad_id":  # not a GUID: replaced, never written into the log as sent
        assert client.get("/api/v1/me/", HTTP_X_REQUEST_ID='x"}\n{"level": "forged').status_code == 403
    elif step == "500":
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            logging.getLogger("django.request").error("Internal Server Error: /x/", exc_info=True,
                                                      extra={"status_code": 500})
"""


def run(tmp_path, *steps, **env) -> subprocess.CompletedProcess:
    (tmp_path / "static").mkdir(exist_ok=True)  # else whitenoise warns on stderr
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("REJUDGE_LOG", "LOG_LEVEL"))} | {
        "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "0", "SECRET_KEY": "json-log-test-key",
        "REJUDGE_HTTPS": "0", "DATABASE_URL": f"sqlite:///{tmp_path / 'unused.sqlite3'}",
        "STATIC_ROOT": str(tmp_path / "static"), **env}
    return subprocess.run([sys.executable, "-c", SCRIPT, *steps], cwd=REPO, env=environment, capture_output=True,
                          text=True, timeout=120)


def json_lines(text: str) -> list[dict]:
    lines = [line for line in text.splitlines() if line.strip()]
    return [json.loads(line) for line in lines]  # every line is one object: fails on anything else


def test_a_refused_api_call_is_one_json_line_with_its_request_id(tmp_path):
    done = run(tmp_path, "api403", REJUDGE_LOG_FORMAT="json")
    assert done.returncode == 0, done.stderr
    [record] = json_lines(done.stderr)
    assert record["level"] == "WARNING" and record["logger"] == "django.request"
    assert record["message"] == "Forbidden: /api/v1/me/"
    assert record["request_id"] == "0123456789abcdef0123456789abcdef"  # the proxy's X-Request-ID
    assert record["status_code"] == 403 and record["time"].endswith("+00:00")
    assert "exc_info" not in record and "request" not in record


def test_a_permission_denied_is_logged_once_without_its_traceback(tmp_path):
    done = run(tmp_path, "view403", REJUDGE_LOG_FORMAT="json")
    assert done.returncode == 0, done.stderr
    [record] = json_lines(done.stderr)
    assert record["message"] == "Forbidden (Permission denied): /metrics"
    assert "exc_info" not in record and "Traceback" not in done.stderr
    # No X-Request-ID came in: one was made, logged and returned to the client.
    header = done.stdout.split()[-1]
    assert len(header) == 32 and record["request_id"] == header


def test_a_request_id_that_is_not_a_guid_is_replaced(tmp_path):
    done = run(tmp_path, "bad_id", REJUDGE_LOG_FORMAT="json")
    assert done.returncode == 0, done.stderr
    records = json_lines(done.stderr)
    refused = [r for r in records if r["logger"] == "django.request"]
    assert len(refused) == 1 and len(refused[0]["request_id"]) == 32
    assert all(r.get("level") != "forged" for r in records)


def test_a_server_error_keeps_its_traceback_in_json(tmp_path):
    done = run(tmp_path, "500", REJUDGE_LOG_FORMAT="json")
    assert done.returncode == 0, done.stderr
    [record] = json_lines(done.stderr)
    assert record["level"] == "ERROR" and "RuntimeError: boom" in record["exc_info"]
    assert record["request_id"] is None  # logged outside a request


def test_text_stays_the_default(tmp_path):
    done = run(tmp_path, "api403", "view403")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["Forbidden: /api/v1/me/", "Forbidden (Permission denied): /metrics"]


def test_an_unknown_log_format_is_refused_with_its_name(tmp_path):
    done = run(tmp_path, REJUDGE_LOG_FORMAT="xml")
    assert done.returncode != 0 and "REJUDGE_LOG_FORMAT='xml'" in done.stderr


def test_an_empty_log_level_is_the_default(tmp_path):
    # docker-compose.yml passes LOG_LEVEL through, empty when the operator sets none.
    done = run(tmp_path, "api403", LOG_LEVEL="")
    assert done.returncode == 0 and done.stderr.strip() == "Forbidden: /api/v1/me/", done.stderr
