"""API rate limits (Django REST framework throttles): per user, per anonymous address, and a tighter
one for file uploads. A throttled request gets 429 with Retry-After. Rates come from settings
(environment variables REJUDGE_THROTTLE_*); here they are set low through the settings fixture."""
from __future__ import annotations

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotation.services.accounts.users import api_token_for
from config.throttling import AnonThrottle, UploadThrottle, UserThrottle
from tests.factories import make_rater, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def rates(settings):
    """set_rates(user=..., anon=..., uploads=...): low rates for one test."""

    def set_rates(**low):
        settings.REST_FRAMEWORK = settings.REST_FRAMEWORK | {
            "DEFAULT_THROTTLE_RATES": settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] | low}

    return set_rates


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_for(user=user)}")
    return client


def test_a_user_over_the_rate_gets_429_with_retry_after(rates):
    rates(user="3/min")
    rater = make_rater()
    client = token_client(rater)
    assert [client.get("/api/v1/me/").status_code for _ in range(3)] == [200, 200, 200]
    refused = client.get("/api/v1/me/")
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert "throttled" in refused.json()["detail"]
    # Counted per user: someone else is not held back by it.
    assert token_client(make_rater()).get("/api/v1/me/").status_code == 200


def test_the_same_user_is_counted_across_token_and_session(rates):
    rates(user="2/min")
    rater = make_rater()
    token_client(rater).get("/api/v1/me/")
    session = APIClient()
    session.force_login(rater)
    assert session.get("/api/v1/me/").status_code == 200
    assert session.get("/api/v1/me/").status_code == 429


def test_anonymous_callers_are_counted_by_address(rates):
    rates(anon="2/min")
    api = APIClient()
    assert [api.get("/api/v1/schema/").status_code for _ in range(3)] == [200, 200, 429]
    assert api.get("/api/v1/schema/", REMOTE_ADDR="10.0.0.9").status_code == 200


def test_uploads_have_their_own_tighter_limit(rates):
    rates(uploads="1/min")
    client = token_client(make_user("admin"))
    first = client.post("/api/v1/datasets/import/", {"name": "x", "file": SimpleUploadedFile("m.jsonl", b"not json\n")},
                        format="multipart")
    assert first.status_code != 429
    second = client.post("/api/v1/datasets/import/", {"name": "y", "file": SimpleUploadedFile("m.jsonl", b"{}\n")},
                         format="multipart")
    assert second.status_code == 429 and "Retry-After" in second
    # Reads and JSON writes are not uploads: only the user rate applies to them.
    assert client.get("/api/v1/datasets/").status_code == 200


def test_a_rate_set_to_off_turns_that_throttle_off(rates):
    rates(user=None)
    client = token_client(make_rater())
    assert {client.get("/api/v1/me/").status_code for _ in range(30)} == {200}


def test_default_rates_leave_room_for_a_fast_rater_and_the_latency_benchmark():
    """A rater at full speed answers ~2 pairs/s, and each answer is about three requests (submit,
    next, a heartbeat): 6 requests/s. bench_queue_latency.py's 20 raters make ~140 requests/s in all,
    7 per user. The defaults must stay above both with room to spare; uploads stay tight."""
    rates = django_settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]

    def per_second(throttle_class, scope):
        count, seconds = throttle_class.parse_rate(throttle_class(), rates[scope])
        return count / seconds

    assert per_second(UserThrottle, "user") >= 2 * 7
    assert per_second(AnonThrottle, "anon") >= 1
    assert per_second(UploadThrottle, "uploads") <= 1
