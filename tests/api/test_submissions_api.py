"""POST/GET releases/{id}/submissions/, GET submissions/{id}/ and the release's submission policy:
who may submit and see what (admins all; a reader their own; visitors only where an admin allowed
it, throttled; raters never), a retried request with the same Idempotency-Key, the declared bounds."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotation.models import Submission
from annotation.services.releases.create import release_create
from tests.annotation.services.reports.test_report_metrics import example_pool
from tests.annotation.services.submissions.test_score_submission import RUN_S, _trec
from tests.factories import make_rater, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def release(tmp_path):
    return release_create(allow_unresolved=True, pools=[example_pool(tmp_path)], name="example-fire")


def _client(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def _post(client, release, *, name="model-s", text=None, key=None, **fields):
    upload = SimpleUploadedFile("s.trec", (text or _trec(RUN_S)).encode())
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    return client.post(f"/api/v1/releases/{release.pk}/submissions/", {"file": upload, "name": name, **fields},
                       format="multipart", **headers)


def test_a_reader_submits_and_sees_the_scored_run_others_do_not(release, run_jobs):
    alice, bob, admin = make_user("researcher"), make_user("researcher"), make_user("admin")
    with run_jobs():
        response = _post(_client(alice), release)
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["submitted_by"] == alice.get_username() and body["release"] == "example-fire@v1"
    detail = _client(alice).get(body["url"]).json()
    assert detail["state"] == "scored" and detail["job"]["status"] == "succeeded"
    assert detail["summary"]["holes"]["per_query"] == {"q1": 1, "q2": 2, "q3": 1}
    assert detail["summary"]["judged"]["Judged@1"] == 0.0
    assert [s["id"] for s in _client(alice).get(f"/api/v1/releases/{release.pk}/submissions/").json()["results"]] == [
        body["id"]]
    assert _client(bob).get(f"/api/v1/releases/{release.pk}/submissions/").json()["results"] == []
    assert _client(bob).get(body["url"]).status_code == 404
    assert _client(admin).get(body["url"]).status_code == 200
    assert len(_client(admin).get(f"/api/v1/releases/{release.pk}/submissions/").json()["results"]) == 1


def test_a_failed_scoring_names_file_line_and_field(release, run_jobs):
    alice = make_user("researcher")
    with run_jobs():
        body = _post(_client(alice), release, text="q1 Q0 v1 1 0.9 S\nq1 Q0 nope 2 0.8 S\n").json()
    detail = _client(alice).get(body["url"]).json()
    assert detail["state"] == "failed"
    assert [(e["file"], e["line"], e["field"]) for e in detail["job"]["errors"]] == [("s.trec", 2, "doc_id")]


def test_anonymous_submissions_only_where_an_admin_allows_them(release, run_jobs):
    anonymous, admin = _client(), _client(make_user("admin"))
    assert _post(anonymous, release).status_code == 403
    url = f"/api/v1/releases/{release.pk}/submission-policy/"
    assert _client(make_user("researcher")).patch(url, {"anonymous_allowed": True}, format="json").status_code == 403
    assert admin.patch(url, {"anonymous_allowed": True}, format="json").json() == {"anonymous_allowed": True}
    with run_jobs():
        response = _post(anonymous, release)
    assert response.status_code == 202 and response.json()["submitted_by"] is None
    assert Submission.objects.get().status == Submission.Status.SCORED
    assert anonymous.get(f"/api/v1/releases/{release.pk}/submissions/").status_code == 403
    assert _post(_client(make_rater()), release).status_code == 403  # raters never
    admin.patch(url, {"anonymous_allowed": False}, format="json")
    assert _post(anonymous, release).status_code == 403


def test_anonymous_submissions_are_throttled_as_uploads(release, settings):
    settings.REST_FRAMEWORK = settings.REST_FRAMEWORK | {
        "DEFAULT_THROTTLE_RATES": settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] | {"uploads": "1/hour"}}
    _client(make_user("admin")).patch(f"/api/v1/releases/{release.pk}/submission-policy/",
                                      {"anonymous_allowed": True}, format="json")
    assert _post(_client(), release).status_code == 202
    assert _post(_client(), release).status_code == 429


def test_a_retried_request_with_the_same_idempotency_key_makes_one_submission(release):
    alice = _client(make_user("researcher"))
    first = _post(alice, release, key="retry-1")
    again = _post(alice, release, key="retry-1")
    assert (first.status_code, again.status_code) == (202, 200)
    assert first.json()["id"] == again.json()["id"] and Submission.objects.count() == 1


@pytest.mark.parametrize(("fields", "field"), [({"max_depth": 0}, "max_depth"), ({"max_depth": 1001}, "max_depth"),
                                               ({"holes_depth": 0}, "holes_depth"), ({"name": ""}, "name"),
                                               ({"name": "x" * 201}, "name")])
def test_declared_bounds_are_refused_naming_the_field(release, fields, field):
    response = _post(_client(make_user("researcher")), release, **({"name": "m"} | fields))
    assert response.status_code == 400 and field in response.json(), response.content
    assert not Submission.objects.exists()


def test_an_unreadable_release_is_not_found_for_a_reader(release):
    assert _post(_client(make_user("researcher")), release.__class__(pk=999_999)).status_code == 404


def test_an_account_in_no_role_submits_as_a_visitor_and_never_to_a_release_held_back(release, monkeypatch):
    from django.contrib.auth import get_user_model

    no_role = get_user_model().objects.create_user(username="plain", password="pw-123456")
    _client(make_user("admin")).patch(f"/api/v1/releases/{release.pk}/submission-policy/",
                                      {"anonymous_allowed": True}, format="json")
    response = _post(_client(no_role), release)
    assert response.status_code == 202 and response.json()["submitted_by"] is None
    # While a campaign runs on gold answers the release decides, it is held back from the public
    # (selectors/release_access.py): a visitor's run would tell its verdicts.
    monkeypatch.setattr("annotation.selectors.submissions.releases_held_back", lambda releases: {release.pk})
    assert _post(_client(), release).status_code == 403
    assert _post(_client(make_user("researcher")), release).status_code == 202
