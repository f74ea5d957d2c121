"""The release page's submissions section: a reader submits a run with the form and sees it scored
with its holes; another reader does not see it; an admin sees every submission with its submitter
and opens the release to anonymous submissions, which a reader may not."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotation.models import Job, ReleaseSubmissionPolicy, Submission
from annotation.services.releases.create import release_create
from tests.annotation.services.reports.test_report_metrics import example_pool
from tests.annotation.services.submissions.test_score_submission import RUN_S, _trec
from tests.factories import make_rater, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def release(tmp_path):
    return release_create(allow_unresolved=True, pools=[example_pool(tmp_path)], name="example-fire")


def _as(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _page(client, release) -> str:
    response = client.get(f"/releases/{release.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def test_a_reader_submits_with_the_form_and_sees_the_scores_and_holes(release, django_capture_on_commit_callbacks):
    alice, bob, admin = make_user("researcher"), make_user("researcher"), make_user("admin")
    as_alice = _as(alice)
    page = _page(as_alice, release)
    assert 'id="release-submission-form"' in page and "You have submitted no run" in page
    assert 'id="release-submission-policy"' not in page
    with django_capture_on_commit_callbacks(execute=True):
        response = as_alice.post(f"/releases/{release.pk}/submissions/",
                                   {"name": "model-s", "file": SimpleUploadedFile("s.trec", _trec(RUN_S).encode())})
    assert response.status_code == 302 and response["Location"].endswith("#release-submissions")
    page = _page(as_alice, release)
    assert "Submitted model-s" in page and "<th scope=\"row\">model-s</th>" in page
    assert "4 in 3 of 3 queries (top 10)" in page and "C@5 100.0" in page and "Judged@1 0.0" in page
    assert "model-s" not in _page(_as(bob), release)
    admin_page = _page(_as(admin), release)
    assert "model-s" in admin_page and alice.get_username() in admin_page


def test_a_blank_name_is_refused_with_a_message(release):
    client = _as(make_user("researcher"))
    client.post(f"/releases/{release.pk}/submissions/",
                {"name": "  ", "file": SimpleUploadedFile("s.trec", _trec(RUN_S).encode())})
    assert "give the model&#x27;s name" in _page(client, release) and not Submission.objects.exists()


def test_only_an_admin_opens_a_release_to_anonymous_submissions(release):
    url = f"/releases/{release.pk}/submission-policy/"
    assert _as(make_user("researcher")).post(url, {"anonymous_allowed": "on"}).status_code == 404
    assert not ReleaseSubmissionPolicy.objects.exists()
    admin = _as(make_user("admin"))
    assert admin.post(url, {"anonymous_allowed": "on"}).status_code == 302
    assert ReleaseSubmissionPolicy.objects.get().anonymous_allowed
    assert "Anonymous submissions are allowed." in _page(admin, release)
    admin.post(url, {})
    assert not ReleaseSubmissionPolicy.objects.get().anonymous_allowed


def test_only_an_admin_sees_and_uses_the_accept_form_and_the_pool_page_names_the_submission(
        release, django_capture_on_commit_callbacks):
    alice, admin = make_user("researcher"), make_user("admin")
    with django_capture_on_commit_callbacks(execute=True):
        _as(alice).post(f"/releases/{release.pk}/submissions/",
                        {"name": "model-s", "file": SimpleUploadedFile("s.trec", _trec(RUN_S).encode())})
    submission = Submission.objects.get()
    url = f"/releases/{release.pk}/submissions/{submission.pk}/accept/"
    assert 'class="submission-accept"' not in _page(_as(alice), release)
    assert 'class="submission-accept"' in _page(_as(admin), release)
    for caller in (_as(alice), _as(make_rater()), Client()):  # the submitter, a rater, a visitor
        assert caller.post(url, {"strategy": "pool_order"}).status_code in (302, 403, 404)
    submission.refresh_from_db()
    assert submission.status == Submission.Status.SCORED and not Job.objects.filter(operation="accept_submission")
    with django_capture_on_commit_callbacks(execute=True):
        response = _as(admin).post(url, {"strategy": "sampled", "sample_rate": "0.5"})
    assert response.status_code == 302
    submission.refresh_from_db()
    assert submission.status == Submission.Status.ACCEPTED and submission.pool.judging_strategy == "sampled"
    page = _page(_as(admin), release)
    assert 'class="submission-accept"' not in page and f"/admin-ui/pools/{submission.pool_id}/" in page
    pool_page = _as(admin).get(f"/admin-ui/pools/{submission.pool_id}/").content.decode()
    assert 'id="pool-submission"' in pool_page and f"(submission {submission.pk}) to release" in pool_page
