"""Reports, exports and judgment imports over REST: who may call what, and the job round trips."""
from __future__ import annotations

import csv
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token

from annotation.models import Artefact, Job, Report
from annotation.models.judgment_sets import ImportedJudgment
from annotation.services.exports.labels import artefact_file, export_create
from annotation.services.reports.create import report_create
from annotation.services.accounts.users import api_token_for
from tests.annotation.services.reports.test_report_metrics import example_pool, load_example
from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool(tmp_path):
    return example_pool(tmp_path)


def _job(response) -> Job:
    assert response.status_code == 202, response.content
    assert response["Location"] == f"/api/v1/jobs/{response.data['id']}/"
    return Job.objects.get(pk=response.data["id"])


def test_admin_starts_a_report_and_a_researcher_reads_it(as_role, run_jobs, pool):
    admin = as_role("admin")
    with run_jobs():
        job = _job(admin.post(f"/api/v1/pools/{pool.pk}/reports/", {"kind": "agreement", "params": {"n_boot": 50}},
                              format="json"))
    job.refresh_from_db()
    assert job.status == "succeeded", job.message
    report = Report.objects.get(pk=job.result["report_id"])
    assert report.job_id == job.pk and report.params["n_boot"] == 50

    researcher = as_role("researcher")
    listed = researcher.get(f"/api/v1/reports/?pool={pool.pk}")
    assert listed.status_code == 200 and [r["id"] for r in listed.data["results"]] == [report.pk]
    assert "result" not in listed.data["results"][0]
    detail = researcher.get(f"/api/v1/reports/{report.pk}/")
    assert detail.status_code == 200
    assert detail.data["result"]["summary"]["pairs"] == 17
    assert detail.data["versions"]["krippendorff"]
    assert set(detail.data["csv_tables"]) == {"summary", "agreement", "raters", "disagreements"}
    assert researcher.get(f"/api/v1/reports/?pool={pool.pk + 1}").data["results"] == []


def test_report_tables_download_as_csv(as_role, pool):
    report = report_create(pool=pool, kind="metrics")
    response = as_role("researcher").get(f"/api/v1/reports/{report.pk}/csv/?table=metrics")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert f'report-{report.pk}-metrics.csv' in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == ["run", "C@1", "C@5", "C@10", "AP (textbook)", "AP (FIRE)", "captions_answered"]
    assert rows[1][:2] == ["A", "75.0 (25.0 + 50.0)"]
    default = as_role("admin").get(f"/api/v1/reports/{report.pk}/csv/")
    assert default.content == response.content  # the first table by default
    missing = as_role("admin").get(f"/api/v1/reports/{report.pk}/csv/?table=nope")
    assert missing.status_code == 404 and "metric_values" in missing.data["detail"]


@pytest.mark.parametrize("body, message", [
    ({"kind": "metrics", "params": {"depth": 0}}, "'depth' must be between 1 and 1000"),
    ({"kind": "metrics", "params": {"bogus": 1}}, "unknown parameter(s) bogus"),
    ({"kind": "sample_estimate", "params": {"sample_size": 999}}, "larger than the pool"),
])
def test_bad_report_requests_are_400s_before_any_job(as_role, pool, body, message):
    response = as_role("admin").post(f"/api/v1/pools/{pool.pk}/reports/", body, format="json")
    assert response.status_code == 400 and message in str(response.data["detail"])
    assert not Job.objects.exists()
    unknown = as_role("admin").post(f"/api/v1/pools/{pool.pk}/reports/", {"kind": "nope"}, format="json")
    assert unknown.status_code == 400 and "kind" in unknown.data


def test_admin_exports_and_a_researcher_downloads_with_a_token(api, as_role, run_jobs, pool):
    with run_jobs():
        job = _job(as_role("admin").post(f"/api/v1/pools/{pool.pk}/exports/", {"format": "qrels"}, format="json"))
    job.refresh_from_db()
    assert job.status == "succeeded", job.message
    artefact = Artefact.objects.get(pk=job.result["export_id"])

    researcher = make_user("researcher")
    api.credentials(HTTP_AUTHORIZATION=f"Token {api_token_for(user=researcher)}")
    listed = api.get(f"/api/v1/exports/?pool={pool.pk}")
    assert listed.status_code == 200
    assert [(e["id"], e["format"], e["pool"]) for e in listed.data["results"]] == [(artefact.pk, "qrels", pool.pk)]
    download = api.get(listed.data["results"][0]["download_url"])
    assert download.status_code == 200 and download["X-Content-SHA256"] == artefact.sha256
    assert f'filename="{artefact.name}"' in download["Content-Disposition"]
    body = b"".join(download.streaming_content).decode()
    assert body.splitlines()[0] == "q1 0 v1 1" and len(body.splitlines()) == 16
    assert Token.objects.filter(user=researcher).exists()


def test_bad_export_requests_are_400s(as_role, pool):
    admin = as_role("admin")
    assert admin.post(f"/api/v1/pools/{pool.pk}/exports/", {"format": "xml"}, format="json").status_code == 400
    bad = admin.post(f"/api/v1/pools/{pool.pk}/exports/", {"format": "csv", "params": {"x": 1}}, format="json")
    assert bad.status_code == 400 and "unknown parameter(s) x" in bad.data["detail"]


def test_a_missing_export_file_is_a_404(as_role, pool):
    artefact = export_create(pool=pool, fmt="csv")
    artefact_file(artefact=artefact).unlink()
    assert as_role("researcher").get(f"/api/v1/exports/{artefact.pk}/download/").status_code == 404


def test_admin_imports_judgments_and_errors_come_back_on_the_job(as_role, run_jobs, tmp_path):
    dataset, _ = load_example(tmp_path / "files")
    admin = as_role("admin")
    good = SimpleUploadedFile("published.qrels", b"q1 0 v2 1\nq1 0 v3 0\n")
    with run_jobs():
        job = _job(admin.post(f"/api/v1/datasets/{dataset.pk}/judgments/import/", {"file": good}, format="multipart"))
    job.refresh_from_db()
    assert job.status == "succeeded" and job.result["counts"]["relevant"] == 1
    assert ImportedJudgment.objects.filter(dataset=dataset).count() == 2
    listed = as_role("researcher").get(f"/api/v1/datasets/{dataset.pk}/judgments/")
    assert [s["name"] for s in listed.data["results"]] == ["published"]

    bad = SimpleUploadedFile("bad.json", b'{"annotations": [{"query": "nope", "video_id": "v1", "label": "relevant"}]}')
    with run_jobs():
        job = _job(admin.post(f"/api/v1/datasets/{dataset.pk}/judgments/import/", {"file": bad, "name": "other"},
                              format="multipart"))
    job.refresh_from_db()
    assert job.status == "failed"
    assert job.errors[0]["file"] == "bad.json" and job.errors[0]["field"] == "annotations[0].query"
    again = admin.post(f"/api/v1/datasets/{dataset.pk}/judgments/import/",
                       {"file": SimpleUploadedFile("x.qrels", b"q1 0 v1 1\n"), "name": "published"}, format="multipart")
    assert again.status_code == 400 and "already exist" in again.data["detail"]


ADMIN_ONLY = [("post", "/api/v1/pools/{pool}/reports/", {"kind": "metrics"}),
              ("post", "/api/v1/pools/{pool}/exports/", {"format": "qrels"}),
              ("post", "/api/v1/datasets/{dataset}/judgments/import/", {})]
READ = [("get", "/api/v1/reports/"), ("get", "/api/v1/reports/{report}/"), ("get", "/api/v1/reports/{report}/csv/"),
        ("get", "/api/v1/exports/"), ("get", "/api/v1/exports/{export}/download/"),
        ("get", "/api/v1/datasets/{dataset}/judgments/")]


def _urls(pool):
    report = report_create(pool=pool, kind="agreement", params={"n_boot": 0})
    export = export_create(pool=pool, fmt="qrels")
    return {"pool": pool.pk, "dataset": pool.dataset_id, "report": report.pk, "export": export.pk}


@pytest.mark.parametrize("method, url, body", ADMIN_ONLY)
@pytest.mark.parametrize("role", [None, "rater", "researcher"])
def test_starting_work_is_for_admins_only(as_role, pool, method, url, body, role):
    response = getattr(as_role(role), method)(url.format(**_urls(pool)), body, format="json")
    assert response.status_code in ((401, 403) if role is None else (403,))
    assert not Job.objects.exists()


@pytest.mark.parametrize("method, url", READ)
@pytest.mark.parametrize("role, allowed", [(None, False), ("rater", False), ("researcher", True), ("admin", True)])
def test_reading_is_for_admins_and_researchers(as_role, pool, method, url, role, allowed):
    response = getattr(as_role(role), method)(url.format(**_urls(pool)))
    if allowed:
        assert response.status_code == 200
    else:
        assert response.status_code in ((401, 403) if role is None else (403,))


def test_researchers_never_see_rater_user_names(as_role, pool):
    report = report_create(pool=pool, kind="agreement", params={"n_boot": 0})
    export = export_create(pool=pool, fmt="jsonl")
    researcher = as_role("researcher")
    names = list(pool.memberships.values_list("rater__username", flat=True))
    assert names
    texts = [researcher.get(f"/api/v1/reports/{report.pk}/").content.decode(),
             b"".join(researcher.get(f"/api/v1/exports/{export.pk}/download/").streaming_content).decode()]
    for text in texts:
        assert not any(name in text for name in names)


def test_a_report_downloads_as_a_json_file(as_role, pool):
    report = report_create(pool=pool, kind="metrics")
    response = as_role("researcher").get(f"/api/v1/reports/{report.pk}/?format=json&download=1")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == f'attachment; filename="report-{report.pk}.json"'
    assert response.json()["result"]["per_run"]["A"]["metrics"]["correct@1"]["text"] == "75.0 (25.0 + 50.0)"


def test_files_are_served_to_clients_asking_for_their_type(as_role, pool):
    report = report_create(pool=pool, kind="metrics")
    export = export_create(pool=pool, fmt="jsonl")
    researcher = as_role("researcher")
    assert researcher.get(f"/api/v1/reports/{report.pk}/csv/", HTTP_ACCEPT="text/csv").status_code == 200
    download = researcher.get(f"/api/v1/exports/{export.pk}/download/", HTTP_ACCEPT="application/x-ndjson")
    assert download.status_code == 200 and download["Content-Type"] == "application/x-ndjson"
    missing = researcher.get(f"/api/v1/reports/{report.pk}/csv/?table=nope", HTTP_ACCEPT="text/csv")
    assert missing.status_code == 404 and b"no table 'nope'" in missing.content


def test_a_retried_judgments_upload_returns_the_first_job(as_role, run_jobs, tmp_path):
    dataset, _ = load_example(tmp_path / "files")
    admin = as_role("admin")
    url = f"/api/v1/datasets/{dataset.pk}/judgments/import/"
    with run_jobs():
        first = admin.post(url, {"file": SimpleUploadedFile("j.qrels", b"q1 0 v2 1\n")}, format="multipart",
                           HTTP_IDEMPOTENCY_KEY="upload-1")
    again = admin.post(url, {"file": SimpleUploadedFile("j.qrels", b"q1 0 v2 1\n")}, format="multipart",
                       HTTP_IDEMPOTENCY_KEY="upload-1")
    assert first.status_code == 202 and again.status_code == 200
    assert again.data["id"] == first.data["id"] and Job.objects.count() == 1


@pytest.mark.parametrize("kind, params, stored", [
    ("metrics", {"ks": [10, 1]}, {"depth": 3, "ks": [1, 10], "decimals": 1, "overlap_k": 10, "rbo_p": 0.9}),
    ("agreement", {"n_boot": 20}, {"n_boot": 20, "seed": 0, "confidence": 0.95, "with_mace": 0}),
    ("sample_estimate", {}, {"sample_size": None, "seed": 0, "confidence": 0.95, "half_width": 0.05, "depth": 3}),
])
def test_a_report_job_runs_with_the_parameters_it_stored(as_role, run_jobs, pool, kind, params, stored):
    with run_jobs():
        job = _job(as_role("admin").post(f"/api/v1/pools/{pool.pk}/reports/", {"kind": kind, "params": params},
                                         format="json"))
    job.refresh_from_db()
    assert job.status == "succeeded", job.message
    assert job.params["params"] == stored
    report = Report.objects.get(pk=job.result["report_id"])
    assert report.params == stored | ({"ap_variants": ["ap_textbook", "ap_fire"]} if kind == "metrics" else {})
