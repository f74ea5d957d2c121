"""A vote needs the clip watched (issue 14, item 3): the server refuses a relevant / not relevant
answer that arrives sooner than the minimum after its lease was handed out, whatever the page does."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Clip, Label, Lease
from annotation.services.queue.leases import min_watch_seconds
from annotation.services.accounts.raters import memberships_grant
from tests.factories import make_pool_with_runs, make_rater

pytestmark = pytest.mark.django_db


@pytest.fixture
def watch_two_seconds(settings):
    settings.REJUDGE = {**settings.REJUDGE, "MIN_WATCH_SECONDS": 2.0}


@pytest.mark.parametrize("start,end,duration,cap,expected", [
    (None, None, None, 2.0, 2.0),   # nothing known about the clip: the setting
    (None, None, 4.0, 2.0, 2.0),    # a 4 s clip: min(2, 4)
    (None, None, 0.5, 2.0, 0.5),    # a half-second clip is not held for two
    (1.5, 3.0, 60.0, 2.0, 1.5),     # a span inside a long video: its 1.5 s, not the video's 60
    (10.0, 30.0, None, 2.0, 2.0),   # a 20 s span: min(2, 20)
    (3.0, 3.0, 8.0, 2.0, 2.0),      # an empty span is no span: the clip's 8 s, capped at 2
    (None, None, 4.0, 0.0, 0.0),    # 0 turns the floor off
])
def test_the_minimum_is_the_setting_or_the_clips_span_when_shorter(settings, start, end, duration, cap, expected):
    settings.REJUDGE = {**settings.REJUDGE, "MIN_WATCH_SECONDS": cap}
    assert min_watch_seconds(start, end, duration) == expected


def client_for(user):
    from rest_framework.test import APIClient

    c = APIClient()
    c.force_authenticate(user)
    return c


def lease_one(c, pool) -> dict:
    body = c.post(f"/api/v1/pools/{pool.pk}/next/", {}, format="json").json()
    return body["assignment"]


def test_a_vote_sooner_than_the_minimum_is_refused_with_the_seconds_left(watch_two_seconds):
    pool, _ = make_pool_with_runs()
    Clip.objects.filter(dataset=pool.dataset).update(duration=4.0)
    rater = make_rater()
    memberships_grant(pool=pool, users=[rater])
    c = client_for(rater)
    a = lease_one(c, pool)
    assert a["min_watch_seconds"] == 2.0  # min(2 s setting, 4 s clip)

    early = c.post("/api/v1/labels/", {"client_id": "e1", "lease_id": a["lease_id"], "value": "relevant"}, format="json")
    assert early.status_code == 409
    body = early.json()
    assert body["code"] == "too_soon" and 0 < body["seconds_left"] <= 2.0
    assert 1 <= int(early["Retry-After"]) <= 2
    assert not Label.objects.exists()
    lease = Lease.objects.get(token=a["lease_id"])
    assert lease.state == Lease.State.ACTIVE  # nothing was changed: the same answer can come again

    # Two seconds after the lease was handed out (the clock moved back rather than waited for).
    Lease.objects.filter(pk=lease.pk).update(created_at=timezone.now() - timedelta(seconds=2.1))
    late = c.post("/api/v1/labels/", {"client_id": "e1", "lease_id": a["lease_id"], "value": "relevant"}, format="json")
    assert late.status_code == 201
    assert Label.objects.get().counted


@pytest.mark.parametrize("value,comment", [("broken", ""), ("ambiguous", "is it two shapes or one?")])
def test_a_clip_that_never_plays_can_be_reported_at_once(watch_two_seconds, value, comment):
    pool, _ = make_pool_with_runs()
    rater = make_rater()
    memberships_grant(pool=pool, users=[rater])
    c = client_for(rater)
    a = lease_one(c, pool)
    sent = c.post("/api/v1/labels/", {"client_id": "r1", "lease_id": a["lease_id"], "value": value, "comment": comment},
                  format="json")
    assert sent.status_code == 201
    assert Label.objects.get().value == value


def test_a_moment_pairs_own_span_sets_its_minimum(settings):
    settings.REJUDGE = {**settings.REJUDGE, "MIN_WATCH_SECONDS": 5.0}
    pool, _ = make_pool_with_runs()
    pool.pairs.update(start=1.0, end=2.25)  # a 1.25 s moment inside a clip of unknown length
    rater = make_rater()
    memberships_grant(pool=pool, users=[rater])
    c = client_for(rater)
    a = lease_one(c, pool)
    assert a["min_watch_seconds"] == 1.25
    early = c.post("/api/v1/labels/", {"client_id": "m1", "lease_id": a["lease_id"], "value": "not_relevant"},
                   format="json").json()
    assert early["code"] == "too_soon" and early["seconds_left"] <= 1.25


def test_the_page_learns_its_idle_release_time(settings):
    settings.REJUDGE = {**settings.REJUDGE, "IDLE_RELEASE_SECONDS": 120}
    pool, _ = make_pool_with_runs()
    rater = make_rater()
    memberships_grant(pool=pool, users=[rater])
    body = client_for(rater).post(f"/api/v1/pools/{pool.pk}/next/", {}, format="json").json()
    assert body["idle_release_seconds"] == 120
