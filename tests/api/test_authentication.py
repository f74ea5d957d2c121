"""How callers are recognised: API tokens and browser sessions, with the role read in the same query.

The role decides what every endpoint allows, so these go through the real authentication (no
force_authenticate): the right role for each kind of account, refusals for bad or disabled
credentials, no role remembered from one request to the next, and one query for it all."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.http import HttpRequest
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from annotation import roles
from annotation.services.accounts.users import api_token_for
from tests.factories import make_rater, make_user

pytestmark = pytest.mark.django_db


def token_client(user) -> APIClient:
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Token {api_token_for(user=user)}")
    return c


@pytest.mark.parametrize("role", ["admin", "rater", "researcher"])
def test_a_token_is_recognised_with_its_role(role):
    user = make_rater() if role == "rater" else make_user(role)
    response = token_client(user).get("/api/v1/me/")
    assert response.status_code == 200
    assert response.json() == {"id": user.pk, "username": user.username, "role": role}


def test_a_user_in_both_role_groups_has_both():
    user = make_user("researcher")
    user.groups.add(Group.objects.get_or_create(name=roles.RATER)[0])
    loaded = roles.user_by_token(api_token_for(user=user))
    assert loaded.pk == user.pk and roles.is_rater(loaded) and roles.is_researcher(loaded)
    assert roles.role_of(loaded) == "rater"  # the narrower role wins where one must be shown


def test_an_account_without_a_role_group_has_no_role():
    user = make_user("rater")
    user.groups.clear()
    loaded = roles.user_by_id(user.pk)
    assert loaded.pk == user.pk and roles.role_of(loaded) is None
    assert token_client(user).get("/api/v1/my/pools/").status_code == 403


def test_the_role_check_costs_no_query_of_its_own():
    rater = make_rater()
    c = token_client(rater)
    # The token lookup is a prepared statement (annotation/prepared.py), prepared on a connection's
    # first token request: run alone, or first on its worker, this test counted its PREPARE too.
    assert c.get("/api/v1/me/").status_code == 200
    with CaptureQueriesContext(connection) as queries:
        assert c.get("/api/v1/me/").json()["role"] == "rater"
    assert len(queries.captured_queries) == 1, [q["sql"] for q in queries.captured_queries]


def test_an_unknown_token_is_refused():
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    response = c.get("/api/v1/me/")
    # 403 rather than 401: DRF takes the status from the first authenticator (the session's).
    assert response.status_code in (401, 403) and "Invalid token" in response.json()["detail"]


def test_a_disabled_account_is_refused_even_with_a_valid_token():
    rater = make_rater()
    c = token_client(rater)
    rater.is_active = False
    rater.save()
    response = c.get("/api/v1/my/pools/")
    assert response.status_code in (401, 403) and "inactive" in response.json()["detail"]


def test_a_role_taken_away_applies_to_the_next_request():
    rater = make_rater()
    c = token_client(rater)
    assert c.get("/api/v1/my/pools/").status_code == 200
    rater.groups.clear()
    assert c.get("/api/v1/my/pools/").status_code == 403


def test_a_browser_session_is_recognised_with_its_role_and_refused_after_logout():
    rater = make_rater()
    c = APIClient()
    # django-axes (login lockout) needs the request that carries the password; Client.login has none.
    assert c.login(request=HttpRequest(), username=rater.username, password="pw-123456")
    with CaptureQueriesContext(connection) as queries:
        assert c.get("/api/v1/me/").json()["role"] == "rater"
    assert len(queries.captured_queries) == 2  # the session, then the user with their role
    c.logout()
    assert c.get("/api/v1/me/").status_code in (401, 403)


def test_the_api_schema_documents_both_ways_in_without_warnings(tmp_path):
    from django.core.management import call_command

    out = tmp_path / "schema.yml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))  # exits non-zero on a warning
    text = out.read_text()
    assert "tokenAuth:" in text and "cookieAuth:" in text
