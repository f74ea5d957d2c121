"""The media check's and playable copies' endpoints (api/views/media.py): admins start them, admins
and researchers read the findings, raters and strangers are refused; the build form's
skip_unplayable reaches the pool build."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation.models import Clip, Job
from annotation.services.media.check import dataset_media_state
from annotation.services.media.operations import media_check_start
from tests.annotation.services.media.media_world import EXPECTED, lab_dataset
from tests.factories import make_rater, make_user

pytestmark = pytest.mark.django_db


def _as(user) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def test_the_findings_list_every_problem_and_only_admins_and_researchers_read_them(
        tmp_path, django_capture_on_commit_callbacks):
    dataset = lab_dataset(tmp_path)
    url = f"/api/v1/datasets/{dataset.pk}/media-check/"
    before = _as(make_user("researcher")).get(url).json()
    assert (before["summary"], before["problems"], before["check_job"]) == (None, [], None)
    with django_capture_on_commit_callbacks(execute=True):
        job, _ = media_check_start(dataset=dataset)
    body = _as(make_user("researcher")).get(url).json()
    assert body["summary"]["failed"] == len(EXPECTED) and body["truncated"] is False
    assert sorted({(r["clip_id"], r["code"]) for r in body["problems"]}) == sorted(
        (clip, code) for clip, codes in EXPECTED.items() for code in codes)
    assert (body["check_job"]["id"], body["check_job"]["status"]) == (job.pk, "succeeded")
    limited = dataset_media_state(dataset, limit=3)
    assert (len(limited["problems"]), limited["truncated"]) == (3, True)
    assert _as(make_rater()).get(url).status_code == 403
    assert _as(None).get(url).status_code == 403
    assert _as(make_user("researcher")).post(url).status_code == 403
    assert _as(make_rater()).post(f"/api/v1/datasets/{dataset.pk}/media-prepare/", {}, format="json").status_code == 403


def test_an_admin_starts_a_check_and_a_prepare_as_jobs(tmp_path, django_capture_on_commit_callbacks):
    dataset = lab_dataset(tmp_path)
    admin = _as(make_user("admin"))
    with django_capture_on_commit_callbacks(execute=True):
        started = admin.post(f"/api/v1/datasets/{dataset.pk}/media-check/")
    assert started.status_code == 202, started.content
    assert Job.objects.get(pk=started.json()["id"]).result["failed"] == len(EXPECTED)
    card = admin.get(f"/api/v1/jobs/{started.json()['id']}/").json()
    assert (card["title"], card["summary"]) == (
        "Check a dataset's media: lab", "2 of 8 clips play in browsers; 6 failed the check (4 fixed by preparing "
        "playable copies): the dataset page lists each problem and its fix.")
    refused = admin.post(f"/api/v1/datasets/{dataset.pk}/media-prepare/", {"height": 10}, format="json")
    assert refused.status_code == 400 and "height" in refused.json()
    with django_capture_on_commit_callbacks(execute=True):
        prepared = admin.post(f"/api/v1/datasets/{dataset.pk}/media-prepare/", {"height": 64}, format="json")
    assert prepared.status_code == 202, prepared.content
    job = Job.objects.get(pk=prepared.json()["id"])
    assert (job.status, job.result["prepared"]) == (Job.Status.SUCCEEDED, 4)
    assert admin.get(f"/api/v1/jobs/{job.pk}/").json()["summary"] == (
        "Prepared 4 clips (4 copies); 0 were prepared before; 2 have problems a copy does not fix. Now 6 of 8 clips "
        "play in browsers; 2 failed the check (0 fixed by preparing playable copies): the dataset page lists each "
        "problem and its fix.")
    assert Clip.objects.get(dataset=dataset, external_id="msvd_avi").original_media == "lab/msvd.avi"
    state = admin.get(f"/api/v1/datasets/{dataset.pk}/media-check/").json()
    assert state["prepare_job"]["id"] == job.pk and state["summary"]["failed"] == 2
