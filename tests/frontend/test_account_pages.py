"""The API docs pages, the token page and the researchers page: who may open them, what they show."""
from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

from annotation.services.accounts.raters import rater_create
from annotation.services.accounts.users import api_token_for, researcher_create, user_create

pytestmark = pytest.mark.django_db
PASSWORD = "pages-pw-123"


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def people():
    return {"admin": user_create(username="boss", password=PASSWORD, role="admin"),
            "rater": rater_create(username="r1", password=PASSWORD),
            "researcher": researcher_create(username="lab-a", password=PASSWORD),
            "other": researcher_create(username="lab-b", password=PASSWORD)}


@pytest.mark.parametrize("path", ["/api/v1/docs/", "/api/v1/redoc/"])
def test_docs_pages_are_for_signed_in_roles_and_load_nothing_from_elsewhere(people, path):
    response = Client().get(path)
    assert response.status_code == 302 and response["Location"].startswith("/login/")
    for role in ("admin", "rater", "researcher"):
        response = signed_in(people[role]).get(path)
        assert response.status_code == 200, role
        html = response.content.decode()
        # The viewers' bundles are served from this site: the sidecar's static files, or (Redoc) the
        # sidecar's bundle with its logo pointed at our own copy (api/docs.py).
        assert ("/static/drf_spectacular_sidecar/" in html or 'src="/api/v1/redoc/redoc.standalone.js"' in html)
        assert "https://" not in html.split("<main", 1)[1]
        assert "<script>" not in html and "<style" not in html
        policy = response["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy


def test_redoc_gets_a_style_nonce_for_its_page_only(people):
    client = signed_in(people["researcher"])
    redoc = client.get("/api/v1/redoc/")
    nonce = redoc.wsgi_request.csp_nonce
    assert f"'nonce-{nonce}'" in redoc["Content-Security-Policy"] and f'data-style-nonce="{nonce}"' in redoc.content.decode()
    assert "nonce-" not in client.get("/api/v1/docs/")["Content-Security-Policy"]


def test_the_schema_stays_public():
    assert Client().get("/api/v1/schema/").status_code == 200


def test_token_page_shows_only_the_callers_own_token(people):
    mine, theirs = api_token_for(user=people["researcher"]), api_token_for(user=people["other"])
    html = signed_in(people["researcher"]).get("/account/token/").content.decode()
    assert mine in html and theirs not in html


def test_token_page_shows_admins_and_researchers_their_token_and_raters_theirs_once(people):
    assert Client().get("/account/token/").status_code == 302
    # A rater's token is made on request and shown once (tests/frontend/test_rater_api_token.py).
    assert signed_in(people["rater"]).get("/account/token/").status_code == 200
    assert signed_in(people["rater"]).post("/account/token/").status_code == 302
    assert not Token.objects.filter(user=people["rater"]).exists()
    admin = signed_in(people["admin"]).get("/account/token/")
    assert admin.status_code == 200 and Token.objects.get(user=people["admin"]).key in admin.content.decode()


def test_rotating_needs_csrf_and_replaces_the_token(people):
    user = people["researcher"]
    old = api_token_for(user=user)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    assert strict.post("/account/token/").status_code == 403
    assert Token.objects.get(user=user).key == old
    page = strict.get("/account/token/")
    response = strict.post("/account/token/", {"csrfmiddlewaretoken": page.cookies["csrftoken"].value})
    assert response.status_code == 302 and response["Location"] == "/account/token/?rotated=1"
    new = Token.objects.get(user=user).key
    assert new != old and new in strict.get(response["Location"]).content.decode()
    assert Token.objects.get(user=people["other"]).key != new  # the other researcher's token is untouched


def test_researchers_page_is_for_admins(people):
    assert signed_in(people["researcher"]).get("/admin-ui/researchers/").status_code == 403
    html = signed_in(people["admin"]).get("/admin-ui/researchers/").content.decode()
    assert 'data-researcher="lab-a"' in html and 'data-researcher="lab-b"' in html and 'data-researcher="r1"' not in html
