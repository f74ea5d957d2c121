"""Researcher accounts over REST, the CLI, and the services behind them (issue 14 item 8)."""
from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation import roles
from annotation.services.accounts.raters import rater_create
from annotation.services.accounts.users import api_token_for, api_token_rotate, researcher_create, researcher_remove, user_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client():
    client = APIClient()
    client.force_authenticate(user_create(username="boss", password="boss-pw-123", role="admin"))
    return client


def with_token(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_admin_creates_a_researcher_whose_token_reads_but_never_writes(admin_client):
    response = admin_client.post("/api/v1/researchers/", {"username": "lab-a", "email": "a@example.org"}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    user = get_user_model().objects.get(username="lab-a")
    assert body["username"] == "lab-a" and body["id"] == user.pk and body["token"] == Token.objects.get(user=user).key
    assert roles.role_of(user) == "researcher" and not user.has_usable_password()
    researcher = with_token(body["token"])
    assert researcher.get("/api/v1/datasets/").status_code == 200
    assert researcher.post("/api/v1/researchers/", {"username": "lab-b"}, format="json").status_code == 403
    listed = admin_client.get("/api/v1/researchers/").json()
    assert [r["username"] for r in listed] == ["lab-a"] and "token" not in listed[0]


@pytest.mark.parametrize("body, field", [
    ({"username": "bad name!"}, "username"),
    ({"username": "x" * 151}, "username"),
    ({"username": "ok", "email": "not-an-email"}, "email"),
    ({"username": "ok", "password": "short"}, "password"),
])
def test_a_bad_researcher_is_refused_naming_the_field(admin_client, body, field):
    response = admin_client.post("/api/v1/researchers/", body, format="json")
    assert response.status_code == 400 and field in str(response.json())
    assert not get_user_model().objects.filter(groups__name=roles.RESEARCHER).exists()


def test_a_taken_name_is_refused(admin_client):
    rater_create(username="taken")
    response = admin_client.post("/api/v1/researchers/", {"username": "taken"}, format="json")
    assert response.status_code == 400 and "already exists" in str(response.json())
    assert roles.role_of(get_user_model().objects.get(username="taken")) == "rater"


def test_removing_a_researcher_deletes_the_account_and_its_token_stops_at_once(admin_client):
    user = researcher_create(username="lab-a")
    key = api_token_for(user=user)
    assert with_token(key).get("/api/v1/datasets/").status_code == 200
    response = admin_client.delete(f"/api/v1/researchers/{user.pk}/")
    assert response.status_code == 200 and response.json()["outcome"] == "deleted"
    assert not get_user_model().objects.filter(pk=user.pk).exists()
    # 403, not 401: session authentication comes first and has no challenge (see test_permission_table).
    refused = with_token(key).get("/api/v1/datasets/")
    assert refused.status_code == 403 and "Invalid token" in refused.json()["detail"]


def test_removing_only_takes_the_researcher_role_from_a_rater_who_also_reads(admin_client):
    user = rater_create(username="both", password="both-pw-123")
    user.groups.add(*type(user.groups.first()).objects.filter(name=roles.RATER))  # already a rater
    user.groups.add(type(user.groups.first()).objects.get_or_create(name=roles.RESEARCHER)[0])
    key = api_token_for(user=user)
    response = admin_client.delete(f"/api/v1/researchers/{user.pk}/")
    assert response.json()["outcome"] == "role removed"
    user = get_user_model().objects.get(pk=user.pk)
    assert set(user.groups.values_list("name", flat=True)) == {roles.RATER}
    assert not Token.objects.filter(key=key).exists()


def test_delete_refuses_an_account_that_is_not_a_researcher(admin_client):
    rater = rater_create(username="r1")
    assert admin_client.delete(f"/api/v1/researchers/{rater.pk}/").status_code == 404
    assert get_user_model().objects.filter(pk=rater.pk).exists()
    with pytest.raises(ValueError, match="not a researcher"):
        researcher_remove(user=rater)


def test_rotating_a_token_replaces_it():
    user = researcher_create(username="lab-a")
    old = api_token_for(user=user)
    new = api_token_rotate(user=user)
    assert new != old and api_token_for(user=user) == new
    assert list(Token.objects.filter(user=user).values_list("key", flat=True)) == [new]
    refused = with_token(old).get("/api/v1/me/")
    assert refused.status_code == 403 and "Invalid token" in refused.json()["detail"]
    assert with_token(new).get("/api/v1/me/").json()["role"] == "researcher"


def run(*args, stdin: str = "") -> str:
    out = io.StringIO()
    import sys
    old_stdin, sys.stdin = sys.stdin, io.StringIO(stdin)
    try:
        call_command("researcher", *args, stdout=out)
    finally:
        sys.stdin = old_stdin
    return out.getvalue()


def test_the_command_adds_lists_and_removes_researchers():
    assert run("list").strip() == "no researcher"
    out = run("add", "lab-a", "--email", "a@example.org")
    user = get_user_model().objects.get(username="lab-a")
    assert f"API token {Token.objects.get(user=user).key}" in out and user.email == "a@example.org"
    out = run("add", "lab-b", "--password-stdin", stdin="lab-b-password\n")
    assert get_user_model().objects.get(username="lab-b").check_password("lab-b-password")
    assert [line.split("\t")[:3] for line in run("list").splitlines()] == [
        ["lab-a", "a@example.org", "active"], ["lab-b", "-", "active"]]
    assert "deleted" in run("remove", "lab-a")
    assert not get_user_model().objects.filter(username="lab-a").exists()


@pytest.mark.parametrize("args, stdin, message", [
    (("add", "bad name!"), "", "researcher 'bad name!': username"),
    (("add", "lab-a", "--email", "nope"), "", "email"),
    (("add", "lab-a", "--password-stdin"), "short\n", "at least 8 characters"),
    (("remove", "nobody"), "", "no researcher named 'nobody'"),
])
def test_the_command_refuses_bad_input_and_writes_nothing(args, stdin, message):
    with pytest.raises(CommandError, match=message):
        run(*args, stdin=stdin)
    assert not get_user_model().objects.filter(groups__name=roles.RESEARCHER).exists()


def test_the_command_refuses_a_taken_name():
    user_create(username="boss", password="boss-pw-123", role="admin")
    with pytest.raises(CommandError, match="already exists"):
        run("add", "boss")
    assert roles.role_of(get_user_model().objects.get(username="boss")) == "admin"
