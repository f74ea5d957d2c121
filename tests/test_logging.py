"""Issue 14 item 11: with DEBUG on, each 4xx was logged twice (Django's own console handler and
the root's) and each 403 with a traceback. One line per client error, no traceback; 5xx keep theirs."""
from __future__ import annotations

import io
import logging

import pytest


@pytest.fixture
def console(settings):
    """What the project's console handlers print (pytest's capture handlers left alone)."""
    settings.DEBUG = True
    out = io.StringIO()
    handlers = {h for name in ("", "django", "django.request") for h in logging.getLogger(name).handlers
                if type(h) is logging.StreamHandler}
    saved = [(h, h.stream) for h in handlers]
    for h in handlers:
        h.setStream(out)
    yield out
    for h, stream in saved:
        h.setStream(stream)


@pytest.mark.django_db
def test_a_403_is_logged_once_without_a_traceback(client, console):
    from tests.factories import make_user

    client.force_login(make_user("rater"))
    response = client.get("/admin-ui/")
    assert response.status_code == 403
    text = console.getvalue()
    assert text.count("Forbidden") == 1, text
    assert "Traceback" not in text


@pytest.mark.django_db
def test_a_404_is_logged_once(client, console):
    assert client.get("/api/v1/no-such-endpoint/").status_code == 404
    assert console.getvalue().count("Not Found") == 1, console.getvalue()


def test_a_server_error_keeps_its_traceback(console):
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("django.request").error("Internal Server Error: /x/", exc_info=True,
                                                  extra={"status_code": 500})
    text = console.getvalue()
    assert text.count("Internal Server Error") == 1 and "Traceback" in text and "boom" in text
