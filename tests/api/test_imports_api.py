"""REST uploads: admin only, run as jobs with a status URL, errors with file/line/field, retries safe."""
from __future__ import annotations

import io

import pytest

from annotation.models import Dataset, Job, Run
from tests.factories import make_dataset

pytestmark = pytest.mark.django_db


def upload(name: str, content: bytes) -> io.BytesIO:
    f = io.BytesIO(content)
    f.name = name
    return f


MANIFEST = b'{"kind": "clip", "id": "c1"}\n{"kind": "clip", "id": "c2"}\n{"kind": "caption", "id": "q1", "text": "t", "clip": "c1"}\n'


def test_admin_uploads_a_dataset_and_polls_its_job(as_role, run_jobs):
    admin = as_role("admin")
    with run_jobs():
        response = admin.post("/api/v1/datasets/import/", {"file": upload("m.jsonl", MANIFEST), "name": "uploaded"}, format="multipart")
    assert response.status_code == 202
    status_url = response["Location"]
    assert status_url == response.json()["status_url"]
    job = admin.get(status_url).json()
    assert job["status"] == "succeeded"  # eager in tests: the job ran inside the request
    assert job["result"]["clips"] == 2 and job["result"]["captions"] == 1
    assert job["progress"]["fraction"] == 1.0
    assert Dataset.objects.get(name="uploaded").clips.count() == 2


def test_refused_dataset_file_fails_the_job_with_line_and_field(as_role, run_jobs):
    admin = as_role("admin")
    bad = b'{"kind": "clip", "id": "c1", "start": 3, "end": 1}\n'
    with run_jobs():
        job = admin.post("/api/v1/datasets/import/", {"file": upload("bad.jsonl", bad), "name": "x"}, format="multipart").json()
    job = admin.get(job["status_url"]).json()
    assert job["status"] == "failed"
    assert (job["errors"][0]["file"], job["errors"][0]["line"], job["errors"][0]["field"]) == ("bad.jsonl", 1, "end")
    assert not Dataset.objects.filter(name="x").exists()


def test_admin_uploads_a_run(as_role, run_jobs):
    admin = as_role("admin")
    dataset = make_dataset()
    content = b"q1 Q0 v1 1 0.9 sysA\nq1 Q0 v2 2 0.5 sysA\n"
    with run_jobs():
        response = admin.post(f"/api/v1/datasets/{dataset.pk}/runs/import/", {"file": upload("a.trec", content)}, format="multipart")
    assert response.status_code == 202
    job = admin.get(response["Location"]).json()
    assert job["status"] == "succeeded" and job["result"]["name"] == "sysA" and job["result"]["predictions"] == 2
    runs = admin.get(f"/api/v1/datasets/{dataset.pk}/runs/").json()["results"]
    assert [r["name"] for r in runs] == ["sysA"]


def test_retried_upload_with_idempotency_key_returns_the_first_job(as_role, run_jobs):
    admin = as_role("admin")
    dataset = make_dataset()
    content = b"q1 Q0 v1 1 0.9 sysA\n"
    url = f"/api/v1/datasets/{dataset.pk}/runs/import/"
    with run_jobs():
        first = admin.post(url, {"file": upload("a.trec", content)}, format="multipart", HTTP_IDEMPOTENCY_KEY="k-1")
    with run_jobs():
        second = admin.post(url, {"file": upload("a.trec", content)}, format="multipart", HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == 202 and second.status_code == 200
    assert first.json()["id"] == second.json()["id"]
    assert Job.objects.count() == 1 and Run.objects.count() == 1


def test_same_run_file_without_key_does_not_duplicate_the_run(as_role, run_jobs):
    admin = as_role("admin")
    dataset = make_dataset()
    url = f"/api/v1/datasets/{dataset.pk}/runs/import/"
    for _ in range(2):
        with run_jobs():
            admin.post(url, {"file": upload("a.trec", b"q1 Q0 v1 1 0.9 sysA\n")}, format="multipart")
    assert Run.objects.count() == 1
    assert Job.objects.order_by("id").last().result["created"] is False


def test_upload_input_is_validated(as_role):
    admin = as_role("admin")
    response = admin.post("/api/v1/datasets/import/", {"name": "no-file"}, format="multipart")
    assert response.status_code == 400 and "file" in response.json()
    response = admin.post("/api/v1/datasets/import/", {"file": upload("m.jsonl", MANIFEST), "name": "x", "format": "zip"},
                          format="multipart")
    assert response.status_code == 400 and "format" in response.json()


@pytest.mark.parametrize("role, expected", [(None, (401, 403)), ("rater", (403,)), ("researcher", (403,))])
def test_only_admins_upload_or_see_jobs(as_role, role, expected):
    client = as_role(role)
    dataset = make_dataset()
    assert client.post("/api/v1/datasets/import/", {"file": upload("m.jsonl", MANIFEST), "name": "x"},
                       format="multipart").status_code in expected
    assert client.post(f"/api/v1/datasets/{dataset.pk}/runs/import/", {"file": upload("a.trec", b"q1 Q0 v1 1 1 s\n")},
                       format="multipart").status_code in expected
    assert client.get("/api/v1/jobs/").status_code in expected
    assert Dataset.objects.count() == 1 and Run.objects.count() == 0


@pytest.mark.parametrize("role, expected", [(None, (401, 403)), ("rater", (403,)), ("researcher", (200,)), ("admin", (200,))])
def test_who_may_read_datasets(as_role, role, expected):
    dataset = make_dataset()
    client = as_role(role)
    assert client.get("/api/v1/datasets/").status_code in expected
    assert client.get(f"/api/v1/datasets/{dataset.pk}/").status_code in expected
    assert client.get(f"/api/v1/datasets/{dataset.pk}/runs/").status_code in expected


def test_dataset_detail_counts(as_role):
    dataset = make_dataset(clips=4, captions=2)
    body = as_role("researcher").get(f"/api/v1/datasets/{dataset.pk}/").json()
    assert (body["clip_count"], body["caption_count"]) == (4, 2)


def test_me_and_schema(as_role, api):
    assert as_role("rater").get("/api/v1/me/").json()["role"] == "rater"
    assert api.get("/api/v1/me/").status_code in (401, 403)
    schema = api.get("/api/v1/schema/")
    assert schema.status_code == 200 and b"/api/v1/datasets/import/" in schema.content
