"""GET pools/{id}/live/: what the pool page polls (selectors/dashboard.py pool_live)."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.models import Label, PooledPair
from annotation.services.accounts.raters import memberships_grant
from tests.factories import label_pair, make_pool_with_runs, make_rater, make_user

pytestmark = pytest.mark.django_db


def admin_client():
    client = APIClient()
    client.force_authenticate(make_user("admin"))
    return client


def test_live_counts_follow_new_labels_and_give_active_time_and_rate():
    pool, _ = make_pool_with_runs(captions=4, clips=6, depth=3)
    ann, bob = make_rater("ann"), make_rater("bob")
    memberships_grant(pool=pool, users=[ann, bob])
    pairs = list(PooledPair.objects.filter(pool=pool, role="pool").order_by("pk"))
    client = admin_client()
    empty = client.get(f"/api/v1/pools/{pool.pk}/live/").json()
    assert (empty["labels"], empty["labels_last_hour"], empty["left"]) == (0, 0, len(pairs))
    assert [r["rater"] for r in empty["raters"]] == ["ann", "bob"]

    now = timezone.now()
    # ann: labels 20 s apart 10 minutes ago, then one 3 hours ago (out of the last hour).
    # bob: one label 2 days ago (outside the 24 h window).
    when = {0: now - timedelta(minutes=10), 1: now - timedelta(minutes=10) + timedelta(seconds=20),
            2: now - timedelta(minutes=10) + timedelta(seconds=40), 3: now - timedelta(hours=3)}
    for i, at in when.items():
        label = label_pair(ann, pairs[i], "relevant" if i != 1 else "not_relevant", seconds=6.0)
        Label.objects.filter(pk=label.label.pk).update(created_at=at)
    old = label_pair(bob, pairs[4], "ambiguous", seconds=8.0)
    Label.objects.filter(pk=old.label.pk).update(created_at=now - timedelta(days=2))

    live = client.get(f"/api/v1/pools/{pool.pk}/live/").json()
    assert live["labels"] == 5 and live["labels_last_hour"] == 3
    assert live["by_state"]["resolved"] == 4 and live["by_state"]["adjudication"] == 1
    assert live["relevant"] == 3 and live["left"] == len(pairs) - 5
    ann_row, bob_row = live["raters"]
    # ann in the last 24 h: sessions [t-3h] and [t-10m, +20 s, +40 s]. Gaps under 300 s: 20 + 20;
    # each session's first label counts its 6.0 client seconds -> 40 + 6 + 6 = 52 s.
    # Rate: 4 labels / 52 s = 4 * 3600 / 52 = 276.9/h.
    assert ann_row["labels"] == 4 and ann_row["labels_window"] == 4 and ann_row["labels_last_hour"] == 3
    assert ann_row["active_seconds"] == pytest.approx(52.0)
    assert ann_row["rate_per_hour"] == pytest.approx(4 * 3600 / 52)
    # bob: a label two days ago is in his total, not in the day's window: no active time, no rate.
    assert (bob_row["labels"], bob_row["labels_window"], bob_row["active_seconds"], bob_row["rate_per_hour"]) == (1, 0, 0, None)

    # One more label after the counts were cached: the next poll counts it.
    label_pair(bob, pairs[5], "relevant", seconds=3.0)
    again = client.get(f"/api/v1/pools/{pool.pk}/live/").json()
    assert again["labels"] == 6 and again["labels_last_hour"] == 4 and again["raters"][1]["labels"] == 2


@pytest.mark.parametrize("role", [None, "rater", "researcher"])
def test_only_admins_read_the_live_figures(role):
    pool, _ = make_pool_with_runs()
    client = APIClient()
    if role:
        client.force_authenticate(make_user(role))
    assert client.get(f"/api/v1/pools/{pool.pk}/live/").status_code in ((401, 403) if role is None else (403,))
