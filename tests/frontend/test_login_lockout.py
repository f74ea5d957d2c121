"""Password guessing on the login pages: after AXES_FAILURE_LIMIT wrong passwords for an account
from one address, or from one address on any accounts, even the right password is refused from
that address until the cool-off has passed (django-axes); other addresses are not held back.

These go through the real pages and the real database; the cool-off passing is simulated by moving
the stored attempt back in time, not by patching a clock."""
from __future__ import annotations

import base64
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.test import Client
from django.utils import timezone

from tests.factories import make_rater, make_user

pytestmark = pytest.mark.django_db

PASSWORD = "pw-123456"  # tests.factories' password


def log_in(client: Client, username: str, password: str, url: str = "/login/"):
    return client.post(url, {"username": username, "password": password})


def logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def test_sixty_wrong_passwords_then_the_right_one_is_refused():
    rater = make_rater()
    client = Client()
    statuses = [log_in(client, rater.username, f"guess-{i}").status_code for i in range(60)]
    # Below the limit the login form just says "wrong"; from the limit on, the lockout page.
    limit = settings.AXES_FAILURE_LIMIT
    assert statuses[:limit - 1] == [200] * (limit - 1)
    assert set(statuses[limit - 1:]) == {429}
    response = log_in(client, rater.username, PASSWORD)
    assert response.status_code == 429 and not logged_in(client)
    page = response.content.decode()
    assert "Too many failed logins" in page and f"{settings.AXES_COOLOFF_TIME.seconds // 60} minutes" in page
    assert client.get("/").status_code == 302  # still sent to the login page


def test_the_limit_is_exactly_the_setting_and_success_starts_the_count_again():
    rater = make_rater()
    limit = settings.AXES_FAILURE_LIMIT
    for i in range(limit - 1):
        log_in(Client(), rater.username, f"typo-{i}")
    client = Client()
    response = log_in(client, rater.username, PASSWORD)
    assert response.status_code == 302 and logged_in(client)
    # The success reset the count: another limit - 1 typos still leave the account open.
    for i in range(limit - 1):
        log_in(Client(), rater.username, f"typo-{i}")
    assert log_in(Client(), rater.username, PASSWORD).status_code == 302
    for i in range(limit):
        log_in(Client(), rater.username, f"typo-{i}")
    assert log_in(Client(), rater.username, PASSWORD).status_code == 429


def test_after_the_cool_off_the_right_password_works_again():
    rater = make_rater()
    for i in range(settings.AXES_FAILURE_LIMIT):
        log_in(Client(), rater.username, f"guess-{i}")
    assert log_in(Client(), rater.username, PASSWORD).status_code == 429
    # A refused try during the lockout restarts the cool-off; let it pass from the last one.
    AccessAttempt.objects.filter(username=rater.username).update(
        attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1))
    client = Client()
    assert log_in(client, rater.username, PASSWORD).status_code == 302 and logged_in(client)


def test_a_stranger_cannot_lock_a_named_account_out():
    """Guesses from many addresses, or from one, for the admin's name: the admin, from their own
    address, still logs in (issue 22, finding 12). The guessing address is locked, on the admin
    login page too (Django's admin goes through the same authentication)."""
    target, bystander = make_user("admin"), make_user("admin")
    for i in range(settings.AXES_FAILURE_LIMIT):
        log_in(Client(REMOTE_ADDR=f"10.0.0.{i + 1}"), target.username, f"guess-{i}")
    for i in range(settings.AXES_FAILURE_LIMIT):
        log_in(Client(REMOTE_ADDR="10.0.9.9"), target.username, f"guess-{i}")
    own = Client(REMOTE_ADDR="10.0.1.1")
    assert log_in(own, target.username, PASSWORD).status_code == 302 and logged_in(own)
    assert log_in(Client(REMOTE_ADDR="10.0.9.9"), target.username, PASSWORD, url="/admin/login/").status_code == 429
    assert log_in(Client(REMOTE_ADDR="10.0.9.9"), target.username, PASSWORD).status_code == 429
    # Another account from another address is not held back by any of it.
    client = Client(REMOTE_ADDR="10.0.0.1")
    assert log_in(client, bystander.username, PASSWORD).status_code == 302 and logged_in(client)


def test_one_address_trying_many_accounts_is_locked_out():
    victims = [make_rater() for _ in range(settings.AXES_FAILURE_LIMIT)]
    for victim in victims:
        log_in(Client(REMOTE_ADDR="10.0.2.2"), victim.username, "password123")  # one try per account
    newcomer = make_rater()
    assert log_in(Client(REMOTE_ADDR="10.0.2.2"), newcomer.username, PASSWORD).status_code == 429
    assert log_in(Client(REMOTE_ADDR="10.0.2.3"), newcomer.username, PASSWORD).status_code == 302


def test_behind_a_proxy_the_address_the_proxy_appended_is_counted(settings):
    """Every request comes from the proxy (same REMOTE_ADDR); it appends the client's address to
    X-Forwarded-For. What the client wrote there itself (entries before the last) is ignored."""
    settings.CLIENT_IP_HEADER = "HTTP_X_FORWARDED_FOR"
    proxy = {"REMOTE_ADDR": "172.18.0.1"}
    for i in range(settings.AXES_FAILURE_LIMIT):
        forged = f"192.0.2.{i}"  # a new made-up address each time, the proxy's entry last
        log_in(Client(**proxy, HTTP_X_FORWARDED_FOR=f"{forged}, 203.0.113.7"), f"nobody-{i}", "guess")
    rater = make_rater()
    assert log_in(Client(**proxy, HTTP_X_FORWARDED_FOR="203.0.113.7"), rater.username, PASSWORD).status_code == 429
    # Other clients behind the same proxy log in; a header that is no address counts as the proxy's.
    assert log_in(Client(**proxy, HTTP_X_FORWARDED_FOR="198.51.100.4"), rater.username, PASSWORD).status_code == 302
    assert log_in(Client(**proxy, HTTP_X_FORWARDED_FOR="not-an-address"), rater.username, PASSWORD).status_code == 302


def test_the_api_takes_no_passwords():
    """Tokens and sessions are the API's only ways in: HTTP Basic with the right password is refused,
    so the API is no way around the lockout."""
    rater = make_rater()
    basic = base64.b64encode(f"{rater.username}:{PASSWORD}".encode()).decode()
    response = Client().get("/api/v1/me/", headers={"Authorization": f"Basic {basic}"})
    assert response.status_code in (401, 403)
