"""Judgment sets over REST: import with reading options, detail and download of the kept file, a set
from a pool's labels, stored runs scored against a set (equal to scoring the files), agreement of
a rater_labels set (equal to the command on the file), and the refusals."""
from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Job, Report, Run
from annotation.models.judgment_sets import JudgmentSet
from annotation.services.evaluation.evaluate import evaluate
from annotation.services.judgment_sets.agreement import agreement_file_compute
from tests.annotation.services.reports.test_report_metrics import example_pool

pytestmark = pytest.mark.django_db


def _job(response) -> Job:
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.data["id"])
    job.refresh_from_db()
    return job


def _finished(job: Job) -> Job:
    job.refresh_from_db()
    assert job.status == "succeeded", (job.message, job.errors)
    return job


def test_a_pool_becomes_a_set_and_stored_runs_score_as_their_files_do(as_role, run_jobs, tmp_path):
    pool = example_pool(tmp_path)
    admin = as_role("admin")
    with run_jobs():
        job = _job(admin.post(f"/api/v1/pools/{pool.pk}/judgment-sets/", {"name": "round 1"}, format="json"))
    job = _finished(job)
    judgment_set = JudgmentSet.objects.get(pk=job.result["judgment_set_id"])
    assert (judgment_set.source_format, judgment_set.pool_id, judgment_set.seeds_pools) == ("pool", pool.pk, False)

    detail = as_role("researcher").get(f"/api/v1/judgment-sets/{judgment_set.pk}/")
    assert detail.status_code == 200 and detail.data["source_format"] == "pool" and detail.data["stored"]
    download = as_role("researcher").get(f"/api/v1/judgment-sets/{judgment_set.pk}/download/")
    assert download.status_code == 200 and download["X-Content-SHA256"] == judgment_set.checksum
    qrels = tmp_path / "downloaded.qrels"
    qrels.write_bytes(b"".join(download.streaming_content))
    # The example's resolved verdicts plus the original positives (q1-v1, q2-v2, q3-v3), as 0/1.
    lines = qrels.read_text().splitlines()
    assert "q1 0 v1 1" in lines and "q3 0 v3 1" in lines and "q1 0 v3 0" in lines

    runs = list(Run.objects.filter(dataset=pool.dataset).order_by("name"))
    with run_jobs():
        job = _job(admin.post(f"/api/v1/judgment-sets/{judgment_set.pk}/evaluate/",
                              {"runs": [r.pk for r in runs], "measures": ["map", "P_3", "ndcg_cut_3"]}, format="json"))
    job = _finished(job)
    report = Report.objects.get(pk=job.result["report_id"])
    assert report.kind == "evaluation" and report.params["conventions"] == "trec"
    assert [r["checksum"] for r in report.params["runs"]] == [r.checksum for r in runs]
    assert report.versions["pytrec_eval"]

    files = [tmp_path / "files" / "A.trec", tmp_path / "files" / "B.trec"]
    direct = evaluate(files, qrels, "qrels", measures=["map", "P_3", "ndcg_cut_3"])
    stored = {entry["run"]: entry for entry in report.result["runs"]}
    for scores in direct.runs:
        entry = stored[scores.run.removesuffix(".trec")]
        assert entry["measures"] == pytest.approx(scores.all)
        assert entry["per_query"] == {q: pytest.approx(v) for q, v in scores.per_query.items()}
    # The report reads back over REST for researchers.
    assert as_role("researcher").get(f"/api/v1/reports/{report.pk}/").status_code == 200


def test_rater_labels_import_over_rest_and_its_agreement_equals_the_command_on_the_file(as_role, run_jobs, tmp_path):
    pool = example_pool(tmp_path)
    labels = ("pair,worker,grade\n" + "".join(f"{u},{w},{g}\n" for u, w, g in [
        ("p1", "a", 1), ("p1", "b", 1), ("p1", "c", 0), ("p2", "a", 0), ("p2", "b", 0), ("p2", "a", 1),
        ("p3", "a", 1), ("p3", "c", 1), ("p4", "b", 0), ("p4", "c", 1)])).encode()
    admin = as_role("admin")
    with run_jobs():
        job = _job(admin.post(f"/api/v1/datasets/{pool.dataset_id}/judgments/import/",
                              {"file": SimpleUploadedFile("raw.csv", labels), "format": "rater_labels",
                               "columns": "unit=pair,rater=worker,value=grade", "repeats": "first"},
                              format="multipart"))
    job = _finished(job)
    judgment_set = JudgmentSet.objects.get(pk=job.result["judgment_set_id"])
    assert judgment_set.counts == {"labels": 10, "units": 4, "raters": 3, "repeated_cells": 1}
    listed = as_role("researcher").get(f"/api/v1/datasets/{pool.dataset_id}/judgments/")
    assert [(s["name"], s["params"]["repeats"]) for s in listed.data["results"]] == [("raw", "first")]

    with run_jobs():
        job = _job(admin.post(f"/api/v1/judgment-sets/{judgment_set.pk}/agreement/", {"level": "nominal"},
                              format="json"))
    report = Report.objects.get(pk=_finished(job).result["report_id"])
    assert report.kind == "judgment_set_agreement" and report.params["repeats"] == "first"
    raw = tmp_path / "raw.csv"
    raw.write_bytes(labels)
    direct = agreement_file_compute(path=raw, columns={"unit": "pair", "rater": "worker", "value": "grade"},
                                    repeats="first")
    assert report.result["alpha"] == pytest.approx(direct["alpha"])
    assert report.result["alpha_ci"] == pytest.approx(direct["alpha_ci"])
    # With the first of a's two labels of p2 kept: p1 (1,1,0), p2 (0,0), p3 (1,1), p4 (0,1).
    # Coincidences (ordered pairs within a unit, each weighted 1/(m_u - 1)): p1 gives o11 = 1,
    # o10 = o01 = 1; p2 o00 = 2; p3 o11 = 2; p4 o10 = o01 = 1. So o11 = 3, o00 = 2, o10 = o01 = 2,
    # n = 9, n_1 = 5, n_0 = 4. D_o = 4/9; D_e = 2*5*4/(9*8) = 5/9; alpha = 1 - (4/9)/(5/9) = 0.2.
    # (With the last label kept instead, p2 would be (1,0) and alpha would differ.)
    assert report.result["alpha"] == pytest.approx(0.2)


def test_refusals_say_why(as_role, run_jobs, tmp_path):
    pool = example_pool(tmp_path)
    admin = as_role("admin")
    with run_jobs():
        job = _job(admin.post(f"/api/v1/pools/{pool.pk}/judgment-sets/", {}, format="json"))
    _finished(job)
    judgment_set = JudgmentSet.objects.get()
    other = example_pool(tmp_path / "other", name="other")
    foreign = Run.objects.filter(dataset=other.dataset).first()
    response = admin.post(f"/api/v1/judgment-sets/{judgment_set.pk}/evaluate/", {"runs": [foreign.pk]}, format="json")
    assert response.status_code == 400 and f"run {foreign.pk} is not a run of this dataset" in response.data["detail"]
    response = admin.post(f"/api/v1/judgment-sets/{judgment_set.pk}/agreement/", {}, format="json")
    assert response.status_code == 400 and "needs raw multi-rater labels" in response.data["detail"]
    response = admin.post(f"/api/v1/pools/{pool.pk}/judgment-sets/", {"name": judgment_set.name}, format="json")
    assert response.status_code == 400 and "already exist" in response.data["detail"]
    assert Job.objects.count() == 1
    assert json.loads(json.dumps(response.data))  # a JSON body, not a page
