"""Issue 39, finding 3: a rater can script their own work through the API with a token of their
own, made and revoked on their token page and shown once; nobody reaches another's token there."""
from __future__ import annotations

import re

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.services.accounts.raters import memberships_grant
from tests.factories import make_pool_with_runs, make_rater

pytestmark = pytest.mark.django_db


def _signed_in(user) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def _post(client: Client, action: str, **extra):
    page = client.get("/account/token/")
    return client.post("/account/token/", {"csrfmiddlewaretoken": page.cookies["csrftoken"].value, "action": action,
                                           **extra})


def test_a_rater_makes_a_token_seen_once_scripts_with_it_and_revokes_it():
    pool, _ = make_pool_with_runs()
    rater, other = make_rater(), make_rater()
    memberships_grant(pool=pool, users=[rater, other])
    theirs = Token.objects.create(user=other).key
    client = _signed_in(rater)

    page = client.get("/account/token/").content.decode()
    assert "You have no API token" in page and not Token.objects.filter(user=rater).exists()  # none made by a visit
    assert client.post("/account/token/", {"action": "create"}).status_code == 403  # CSRF, as every form

    made = _post(client, "create")
    assert made.status_code == 302 and made["Location"] == "/account/token/"
    key = Token.objects.get(user=rater).key
    shown = client.get("/account/token/").content.decode()
    assert key in shown and theirs not in shown
    again = client.get("/account/token/").content.decode()
    assert key not in again and "made on" in again  # shown once: the page says a token exists, not what it is

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get(f"/api/v1/pools/{pool.pk}/my-progress/").status_code == 200
    assert api.get("/api/v1/datasets/").status_code == 403  # a rater's token is a rater's, nothing more

    # Only the caller's own token is ever touched, whatever the form says.
    assert _post(client, "revoke", user=other.pk).status_code == 302
    assert not Token.objects.filter(user=rater).exists()
    assert Token.objects.get(user=other).key == theirs
    refused = api.get(f"/api/v1/pools/{pool.pk}/my-progress/")
    assert refused.status_code in (401, 403) and refused.json()["detail"] == "Invalid token."
    assert "You have no API token" in client.get("/account/token/").content.decode()


def test_the_token_page_is_for_signed_in_accounts_with_a_role():
    assert Client().get("/account/token/").status_code == 302
    assert Client().post("/account/token/", {"action": "create"}).status_code == 302
    assert not Token.objects.exists()
    rater = make_rater()
    home = _signed_in(rater).get("/").content.decode()
    assert re.search(r'<a [^>]*href="/account/token/"[^>]*>API token</a>', home)
