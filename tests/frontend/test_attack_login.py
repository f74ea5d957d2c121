"""An attacker's pass over the login pages (issue 12): user names no account has, sent by scanners.

Found against the running platform: a failed login with a user name over 255 characters (300 'é'
are enough) was an HTML 500, because django-axes stores the name in a 255-character column
(upstream jazzband/django-axes#1381). The attempt must be refused like any wrong password, and
still counted for the address, so the lockout keeps working."""
from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("url", ["/login/", "/admin/login/"])
@pytest.mark.parametrize("username", ["x" * 5000, "é" * 300, "a" * 256])
def test_an_overlong_user_name_is_a_wrong_login_not_a_500(url, username):
    client = Client(raise_request_exception=False)
    response = client.post(url, {"username": username, "password": "guess"})
    assert response.status_code == 200 and "_auth_user_id" not in client.session
    attempt = AccessAttempt.objects.get()
    assert attempt.username == username[:255] and attempt.failures_since_start == 1


def test_overlong_user_names_still_count_towards_the_address_lockout():
    client = Client(raise_request_exception=False)
    statuses = [client.post("/login/", {"username": f"{n}" + "z" * 400, "password": "guess"}).status_code
                for n in range(settings.AXES_FAILURE_LIMIT)]
    assert statuses[-1] == 429 and set(statuses[:-1]) == {200}
