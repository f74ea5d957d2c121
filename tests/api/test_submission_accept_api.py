"""POST submissions/{id}/accept/ (issue 38): admins only (the submitter, researchers, raters and
visitors are refused, and nothing is queued for them), a retried request with the same
Idempotency-Key gets the first job, a submission not scored yet is a 400 saying why; the accepted
submission names its pool, and the pool's API names the submission."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotation.models import Job, Pool, Submission
from annotation.services.releases.create import release_create
from tests.annotation.services.reports.test_report_metrics import example_pool
from tests.annotation.services.submissions.test_score_submission import RUN_S, _trec
from tests.factories import make_rater, make_user

pytestmark = pytest.mark.django_db


def _client(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


@pytest.fixture
def submitted(tmp_path, run_jobs):
    release = release_create(allow_unresolved=True, pools=[example_pool(tmp_path)], name="example-fire")
    submitter = make_user("researcher")
    with run_jobs():
        body = _client(submitter).post(f"/api/v1/releases/{release.pk}/submissions/",
                                       {"file": SimpleUploadedFile("s.trec", _trec(RUN_S).encode()), "name": "model-s"},
                                       format="multipart").json()
    return Submission.objects.get(pk=body["id"]), submitter


def test_only_admins_accept_and_a_retry_gets_the_first_job(submitted, run_jobs):
    submission, submitter = submitted
    url = f"/api/v1/submissions/{submission.pk}/accept/"
    for caller in (None, submitter, make_user("researcher"), make_rater()):
        assert _client(caller).post(url, {}, format="json").status_code == 403
    assert not Job.objects.filter(operation="accept_submission").exists()
    admin = _client(make_user("admin"))
    with run_jobs():
        first = admin.post(url, {"strategy": "pool_order"}, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == 202, first.content
    again = admin.post(url, {"strategy": "pool_order"}, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    refused = admin.post(url, {}, format="json")
    assert refused.status_code == 400 and "already accepted" in refused.json()["detail"]
    detail = _client(submitter).get(f"/api/v1/submissions/{submission.pk}/").json()
    pool = Pool.objects.get(pk=detail["pool"])
    assert detail["status"] == "accepted" and detail["accepted_at"]
    provenance = admin.get(f"/api/v1/pools/{pool.pk}/").json()["submission"]
    assert provenance["submission_id"] == submission.pk and provenance["model"] == "model-s"
    assert provenance["release"] == "example-fire@v1" and provenance["holes"] == 4
    assert admin.get(f"/api/v1/pools/{pool.pk}/").json()["judging"]["strategy"] == "pool_order"


def test_a_bad_setting_or_an_unscored_submission_is_a_400_saying_why(submitted):
    submission, _ = submitted
    admin = _client(make_user("admin"))
    response = admin.post(f"/api/v1/submissions/{submission.pk}/accept/", {"sample_rate": 2}, format="json")
    assert response.status_code == 400 and "sample_rate" in response.json()
    pending = Submission.objects.create(release=submission.release, name="later", run_file="x")
    response = admin.post(f"/api/v1/submissions/{pending.pk}/accept/", {}, format="json")
    assert response.status_code == 400 and "not scored yet" in response.json()["detail"]
    assert admin.post("/api/v1/submissions/999999/accept/", {}, format="json").status_code == 404
    assert not Job.objects.filter(operation="accept_submission").exists()
