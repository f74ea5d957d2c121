"""Issue 24 finding 2: the browsable API (DRF's HTML forms) is for staff only. A rater, researcher
or anyone else whose browser asks for HTML gets the same JSON a script gets, so no page of the
product ever shows DRF's form (unstyled, unthemed, blocked by the CSP)."""
from __future__ import annotations

import json

import pytest
from django.test import Client

from tests.factories import make_pool_with_runs, make_rater, make_user

pytestmark = [pytest.mark.django_db]

BROWSER = {"HTTP_ACCEPT": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


def client_for(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


@pytest.mark.parametrize("role", ["researcher", "rater", None])
def test_a_browser_of_anyone_but_staff_gets_json(role):
    pool, _ = make_pool_with_runs(captions=2, clips=3, depth=1)
    user = {"researcher": make_user("researcher"), "rater": make_rater(), None: None}[role]
    response = client_for(user).get(f"/api/v1/pools/{pool.pk}/", **BROWSER)
    assert response["Content-Type"].startswith("application/json")
    json.loads(response.content)  # a refusal too is JSON
    assert b"<html" not in response.content.lower()


def test_staff_still_get_the_browsable_api():
    pool, _ = make_pool_with_runs(captions=2, clips=3, depth=1)
    response = client_for(make_user("admin")).get(f"/api/v1/pools/{pool.pk}/", **BROWSER)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")


def test_a_script_asking_for_json_gets_json_whoever_it_is():
    pool, _ = make_pool_with_runs(captions=2, clips=3, depth=1)
    response = client_for(make_user("admin")).get(f"/api/v1/pools/{pool.pk}/", HTTP_ACCEPT="application/json")
    assert response["Content-Type"].startswith("application/json")
