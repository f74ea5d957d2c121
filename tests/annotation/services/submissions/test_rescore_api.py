"""POST /api/v1/submissions/{id}/rescore/ (api/views/submissions.py SubmissionRescoreApi): the
release's admins and the submitter score a submission again, its holes filled; another researcher
gets a 404 (a submission they may not see), a rater and a visitor a 403; a judge that is not the
release's is a 400 naming `judge`; a retried request with the same Idempotency-Key gets the first
job. And the release page shows the fill (frontend/templates/frontend/releases/_submission_fill.html)."""
from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import Job, Submission
from annotation.services.machine_judges.imports import machine_judge_import
from tests.factories import make_rater, make_user

from .test_fill_submission import RELEASE, _machine_csv, _scored, world  # noqa: F401 - world is a fixture

pytestmark = pytest.mark.django_db


def _client(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


@pytest.fixture
def scored(world, tmp_path, django_capture_on_commit_callbacks):
    pool, release = world
    machine = dict(RELEASE) | {("q3", "v3"): 0, ("q2", "v4"): 1}  # as in test_fill_submission.py
    judge = machine_judge_import(dataset=pool.dataset, path=_machine_csv(tmp_path, machine), name="gpt", pool=pool)
    return _scored(release, django_capture_on_commit_callbacks), judge


def test_the_submitter_and_an_admin_rescore_and_others_are_refused(scored, django_capture_on_commit_callbacks):
    submission, judge = scored
    url = f"/api/v1/submissions/{submission.pk}/rescore/"
    with django_capture_on_commit_callbacks(execute=True):
        mine = _client(submission.submitted_by).post(url, {}, format="json", HTTP_IDEMPOTENCY_KEY="once")
    assert mine.status_code == 202, mine.content
    assert mine.json()["submission_url"] == reverse("api:submission-detail", args=[submission.pk])
    submission.refresh_from_db()
    assert submission.summary["fill"]["job_id"] == mine.json()["id"]
    assert submission.summary["fill"]["judge"]["id"] == judge.pk
    again = _client(submission.submitted_by).post(url, {}, format="json", HTTP_IDEMPOTENCY_KEY="once")
    assert again.status_code == 200 and again.json()["id"] == mine.json()["id"]

    with django_capture_on_commit_callbacks(execute=True):
        admin = _client(make_user("admin")).post(url, {"judge": judge.pk}, format="json")
    assert admin.status_code == 202 and Job.objects.get(pk=admin.json()["id"]).status == Job.Status.SUCCEEDED

    jobs = Job.objects.filter(operation="fill_submission").count()
    assert _client(make_user("researcher")).post(url, {}, format="json").status_code == 404
    assert _client(make_rater()).post(url, {}, format="json").status_code == 403
    assert _client().post(url, {}, format="json").status_code in (401, 403)
    assert Job.objects.filter(operation="fill_submission").count() == jobs


def test_a_judge_not_of_the_release_and_a_submission_not_scored_are_400(scored):
    submission, judge = scored
    url = f"/api/v1/submissions/{submission.pk}/rescore/"
    admin = _client(make_user("admin"))
    wrong = admin.post(url, {"judge": judge.pk + 1000}, format="json")
    assert wrong.status_code == 400 and "judge" in wrong.json()
    Submission.objects.filter(pk=submission.pk).update(status=Submission.Status.SUBMITTED)
    early = admin.post(url, {}, format="json")
    assert early.status_code == 400 and "not scored yet" in early.content.decode()


def test_the_release_page_shows_the_fill(scored, client):
    submission, _ = scored
    client.force_login(submission.submitted_by)
    page = client.get(reverse("frontend:release-detail", args=[submission.release_id])).content.decode()
    assert "Holes filled by machine judge <strong>gpt</strong>" in page
    assert "1 of 4 given a verdict; 3 without one stay holes" in page
    # kappa 27/31 by hand (test_fill_submission.py): the judge misses only the original q3 v3.
    assert "Cohen's kappa 0.871" in page
    assert "taken as they are" in page and "not accepted, so nobody judged them" in page
