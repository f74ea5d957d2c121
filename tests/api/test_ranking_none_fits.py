"""'None of these fits' on the ranking screen: the page releases the task's lease and lists that
lease in `exclude`, so the task is not handed back to this rater while it stays open to others.
Nothing about the skip is stored beyond the released lease (a verdict would need a model field)."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation.models import RankingLease, RankingSubmission
from annotation.services.ranking.leases import ranking_lease_next, ranking_lease_release
from api.views.ranking import RANKING_EXCLUDE_MAX
from tests.annotation.services.ranking.helpers import make_study
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def client_for(user) -> APIClient:
    c = APIClient()
    c.force_authenticate(user)
    return c


def next_task(client, study, exclude=()):
    return client.post(f"/api/v1/ranking-studies/{study.pk}/next/", {"exclude": list(exclude)}, format="json")


def test_a_released_task_listed_in_exclude_is_not_handed_back():
    rater, other = make_user("rater"), make_user("rater")
    study = make_study(n_clips=2, raters=[rater, other])
    client = client_for(rater)
    a = next_task(client, study).json()["assignment"]
    assert client.post(f"/api/v1/ranking-leases/{a['lease_id']}/release/").status_code == 204

    # Without the skip listed, the released task is first in the queue again: the same task back.
    again = next_task(client, study).json()["assignment"]
    assert again["item_id"] == a["item_id"]
    client.post(f"/api/v1/ranking-leases/{again['lease_id']}/release/")

    # Listed: the other task instead, and once that is held too, nothing new for this rater.
    b = next_task(client, study, exclude=[a["lease_id"], again["lease_id"]]).json()["assignment"]
    assert b["item_id"] != a["item_id"]
    assert next_task(client, study, exclude=[a["lease_id"], again["lease_id"], b["lease_id"]]).json() == {
        "assignment": None, "reason": "no_work_left"}
    # Another rater still gets the skipped task: after b, which goes first as a task already started.
    theirs = client_for(other)
    first = next_task(theirs, study).json()["assignment"]
    assert first["item_id"] == b["item_id"]
    assert next_task(theirs, study, exclude=[first["lease_id"]]).json()["assignment"]["item_id"] == a["item_id"]
    assert RankingSubmission.objects.count() == 0


def test_other_raters_tokens_in_exclude_change_nothing():
    rater, other = make_user("rater"), make_user("rater")
    study = make_study(n_clips=1, raters=[rater, other])
    theirs = ranking_lease_next(study=study, rater=other).lease
    ranking_lease_release(token=theirs.token, rater=other)
    # `exclude` only speaks for the asking rater's own leases.
    mine = ranking_lease_next(study=study, rater=rater, exclude_leases=[theirs.token]).lease
    assert mine is not None and mine.task_id == theirs.task_id


def test_exclude_length_limit():
    rater = make_user("rater")
    study = make_study(n_clips=1, raters=[rater])
    client = client_for(rater)
    assert next_task(client, study, exclude=[f"t{i}" for i in range(RANKING_EXCLUDE_MAX)]).status_code == 200
    response = next_task(client, study, exclude=[f"t{i}" for i in range(RANKING_EXCLUDE_MAX + 1)])
    assert response.status_code == 400 and "exclude" in response.json()
    assert RankingLease.objects.filter(rater=rater).count() == 1
