"""The Content-Security-Policy header (config/csp.py): the site's policy, built once and reused for
responses that change nothing of it, is exactly django-csp's; a response that changes it (a nonce,
a decorator) or new settings still get their own."""
from __future__ import annotations

import pytest
from csp.utils import build_policy
from django.test import override_settings

from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_an_api_answer_carries_django_csps_policy_every_time(client):
    expected = build_policy()
    assert "frame-ancestors 'none'" in expected and "object-src 'none'" in expected
    for path in ("/api/v1/me/", "/api/v1/me/", "/api/v1/datasets/"):
        assert client.get(path)["Content-Security-Policy"] == expected


def test_new_settings_give_a_new_policy(client, settings):
    client.get("/api/v1/me/")  # the site's policy is built and kept
    policy = {"DIRECTIVES": {**settings.CONTENT_SECURITY_POLICY["DIRECTIVES"], "img-src": ["'self'", "https://img.example"]}}
    with override_settings(CONTENT_SECURITY_POLICY=policy):
        header = client.get("/api/v1/me/")["Content-Security-Policy"]
    assert "img-src 'self' https://img.example" in header
    assert "img.example" not in client.get("/api/v1/me/")["Content-Security-Policy"]


def test_a_page_that_uses_a_nonce_or_a_decorator_gets_its_own_policy(client):
    client.force_login(make_user("admin"))
    site = client.get("/api/v1/me/")["Content-Security-Policy"]
    redoc = client.get("/api/v1/redoc/")  # csp_update adds a nonce and style hashes to style-src
    assert redoc.status_code == 200
    nonce = redoc.wsgi_request.csp_nonce
    header = redoc["Content-Security-Policy"]
    assert f"'nonce-{nonce}'" in header and header != site
    assert client.get("/api/v1/me/")["Content-Security-Policy"] == site  # the kept one is untouched


def test_a_nonce_asked_for_after_the_header_is_written_is_an_error(client):
    from csp.exceptions import CSPNonceError

    request = client.get("/api/v1/me/").wsgi_request
    with pytest.raises(CSPNonceError):
        str(request.csp_nonce)
