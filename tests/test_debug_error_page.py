"""Issue 35 finding 4: on the demo (DEBUG on, scripts/demo.sh) a researcher who hit a 500 saw
Django's technical page: every setting and the process environment (runserver puts os.environ in
request.META). Now only admins get a traceback, and it shows neither settings nor environment;
everyone else gets the ordinary error page (config/error_reports.py)."""
from __future__ import annotations

import pytest
from django.test import Client
from django.urls import include, path

from tests.factories import make_user

pytestmark = pytest.mark.django_db

ENVIRONMENT = {"DATABASE_URL": "postgres://rejudge:env-canary-password@db/rejudge",
               "REJUDGE_OBJECT_STORE_ACCESS": "env-canary-access", "HOME": "/home/env-canary-home"}
SETTING = "setting-canary-value"


@pytest.fixture
def debug_on(settings):
    settings.DEBUG = True
    settings.ROOT_URLCONF = __name__
    settings.REJUDGE_CANARY_SETTING = SETTING


def _get(role, accept="text/html"):
    client = Client(raise_request_exception=False)
    if role:
        client.force_login(make_user(role))
    # As runserver passes it: the process environment inside META, beside the request's headers.
    return client.get("/boom/", HTTP_ACCEPT=accept, HTTP_AUTHORIZATION="Token header-canary-token", **ENVIRONMENT)


def _leaks(body: str) -> list[str]:
    return [word for word in ("env-canary", SETTING, "header-canary-token", "DATABASE_URL", "REJUDGE_CANARY_SETTING",
                              "SECRET_KEY") if word in body]


@pytest.mark.parametrize("role", [None, "rater", "researcher"])
@pytest.mark.parametrize("accept", ["text/html", "application/json"])
def test_no_one_but_admins_sees_a_traceback(debug_on, role, accept):
    response = _get(role, accept)
    body = response.content.decode()
    assert response.status_code == 500
    assert "Server Error (500)" in body
    assert "Traceback" not in body and "the bug the admin needs to see" not in body
    assert _leaks(body) == []


@pytest.mark.parametrize("accept", ["text/html", "application/json"])
def test_admins_see_the_traceback_without_settings_or_environment(debug_on, accept):
    response = _get("admin", accept)
    body = response.content.decode()
    assert response.status_code == 500
    assert "RuntimeError" in body and "the bug the admin needs to see" in body  # still worth having
    assert "/boom/" in body  # the request line stays
    assert _leaks(body) == []


def test_with_debug_off_the_page_is_the_ordinary_one(settings):
    settings.ROOT_URLCONF = __name__
    response = _get("admin")
    assert response.status_code == 500 and "Traceback" not in response.content.decode()


# Far from the canaries above: the technical page shows the source lines around the failing one.
def _boom(request):
    raise RuntimeError("the bug the admin needs to see")


urlpatterns = [path("boom/", _boom), path("", include("config.urls"))]
