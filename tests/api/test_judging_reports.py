"""Judging reports over REST: an admin starts a simulation (of a pool or of stored runs against a
judgment set) or an estimates report, researchers read them and download the files; raters and
researchers cannot start anything."""
from __future__ import annotations

import csv
import io

import pytest

from annotation.models import Job, Report
from annotation.services.judgment_sets.imports import judgments_import
from tests.annotation.services.judging.simulation_world import tiny_world

pytestmark = pytest.mark.django_db

PARAMS = {"strategies": ["shallow_first", "pool_order"], "replays": 3, "checkpoints": [0.25, 0.5, 0.75, 1.0]}


def _finished(response) -> Job:
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.data["id"])
    assert job.status == Job.Status.SUCCEEDED, job.message
    return job


def test_admin_simulates_a_pool_and_a_researcher_reads_and_downloads_it(as_role, run_jobs):
    _, pool, _ = tiny_world()
    with run_jobs():
        response = as_role("admin").post(f"/api/v1/pools/{pool.pk}/judging-simulation/", PARAMS, format="json")
    job = _finished(response)
    assert job.kind == "judging_simulation" and job.result["page"] == f"/reports/{job.result['report_id']}/"
    report = Report.objects.get(pk=job.result["report_id"])
    assert report.job_id == job.pk and report.params["strategies"] == ["shallow_first", "pool_order"]

    researcher = as_role("researcher")
    listed = researcher.get(f"/api/v1/reports/?kind=judging_simulation&pool={pool.pk}")
    assert [r["id"] for r in listed.data["results"]] == [report.pk]
    detail = researcher.get(f"/api/v1/reports/{report.pk}/").data
    assert detail["result"]["per_strategy"][0]["relevant_found"] == [0.5, 0.5, 0.5, 1.0]  # by hand: test_simulation_by_hand
    assert set(detail["csv_tables"]) == {"strategies", "checkpoints", "run_errors", "full_pool", "inputs"}
    table = researcher.get(f"/api/v1/reports/{report.pk}/csv/?table=checkpoints")
    rows = list(csv.DictReader(io.StringIO(table.content.decode())))
    assert len(rows) == 8 and rows[0]["strategy"] == "shallow_first" and rows[0]["relevant_found"] == "0.5"

    curves = researcher.get(f"/api/v1/reports/{report.pk}/file/?name=curves.csv")
    assert curves.status_code == 200 and curves["Content-Type"].startswith("text/csv")
    assert f'filename="report-{report.pk}-curves.csv"' in curves["Content-Disposition"]
    header = next(csv.reader(io.StringIO(curves.content.decode())))
    assert header[:2] == ["strategy", "checkpoint"]
    chart = researcher.get(f"/api/v1/reports/{report.pk}/file/?name=relevant_found.svg")
    assert chart.status_code == 200 and chart["Content-Type"] == "image/svg+xml"
    assert chart["Content-Disposition"].startswith("attachment")  # never rendered from the API's origin as a page
    missing = researcher.get(f"/api/v1/reports/{report.pk}/file/?name=../../settings.py")
    assert missing.status_code == 404 and "has no file" in missing.data["detail"]


def test_admin_simulates_stored_runs_against_a_judgment_set(as_role, run_jobs, tmp_path):
    dataset, _, runs = tiny_world(judged={})
    path = tmp_path / "set.qrels"
    path.write_text("q1 0 a 1\nq1 0 b 0\nq2 0 d 1\n")
    judgment_set = judgments_import(dataset=dataset, path=path, fmt="qrels", name="set", seeds_pools=False).judgment_set
    with run_jobs():
        response = as_role("admin").post(f"/api/v1/judgment-sets/{judgment_set.pk}/judging-simulation/",
                                         {"runs": [r.pk for r in runs], "depth": 2, **PARAMS}, format="json")
    report = Report.objects.get(pk=_finished(response).result["report_id"])
    assert report.pool_id is None and report.dataset_id == dataset.pk
    assert report.params["source"]["judgment_set"] == "set" and report.params["source"]["depth"] == 2
    assert report.result["counts"]["unjudged_as_not_relevant"] == 1
    assert "count as not relevant" in report.result["notes"][0]


def test_admin_starts_an_estimates_report_like_any_pool_report(as_role, run_jobs):
    _, pool, _ = tiny_world()
    with run_jobs():
        response = as_role("admin").post(f"/api/v1/pools/{pool.pk}/reports/",
                                         {"kind": "judging_estimates", "params": {"target_width": 0.05}},
                                         format="json")
    report = Report.objects.get(pk=_finished(response).result["report_id"])
    assert report.kind == "judging_estimates" and report.params["target_width"] == 0.05
    detail = as_role("researcher").get(f"/api/v1/reports/{report.pk}/").data
    assert set(detail["csv_tables"]) == {"estimates", "ranking", "bounds", "design"}
    assert detail["result"]["estimator"].startswith("Horvitz-Thompson")


@pytest.mark.parametrize("body, message", [
    ({"strategies": ["random"]}, "strategies"),
    ({"checkpoints": [1.5]}, "checkpoints"),
    ({"replays": 0}, "replays"),
    ({"measure": "P@10"}, "measure"),
])
def test_bad_parameters_are_a_400_and_no_job(as_role, body, message):
    _, pool, _ = tiny_world()
    response = as_role("admin").post(f"/api/v1/pools/{pool.pk}/judging-simulation/", body, format="json")
    assert response.status_code == 400 and message in response.data
    assert not Job.objects.filter(kind="judging_simulation").exists()


def test_a_pool_not_fully_judged_is_a_400_naming_the_pairs(as_role):
    _, pool, _ = tiny_world(judged={("q1", "a"): True})
    response = as_role("admin").post(f"/api/v1/pools/{pool.pk}/judging-simulation/", {}, format="json")
    assert response.status_code == 400
    assert "not fully judged: 3 of 4 pairs lack a resolved label (3 open)" in response.data["detail"]
    assert not Job.objects.filter(kind="judging_simulation").exists()


def test_a_judgment_set_simulation_needs_runs_of_its_dataset(as_role, tmp_path):
    dataset, _, _ = tiny_world(judged={})
    _, _, foreign = tiny_world(judged={})
    path = tmp_path / "set.qrels"
    path.write_text("q1 0 a 1\n")
    judgment_set = judgments_import(dataset=dataset, path=path, fmt="qrels", name="s", seeds_pools=False).judgment_set
    url = f"/api/v1/judgment-sets/{judgment_set.pk}/judging-simulation/"
    admin = as_role("admin")
    assert admin.post(url, {}, format="json").status_code == 400  # runs required
    refused = admin.post(url, {"runs": [foreign[0].pk]}, format="json")
    assert refused.status_code == 400 and "is not a run of this dataset" in refused.data["detail"]


@pytest.mark.parametrize("role, status", [(None, 403), ("rater", 403), ("researcher", 403)])
def test_only_admins_start_simulations(as_role, role, status, tmp_path):
    dataset, pool, runs = tiny_world()
    client = as_role(role)
    assert client.post(f"/api/v1/pools/{pool.pk}/judging-simulation/", {}, format="json").status_code == status
    assert not Job.objects.exists()


def test_raters_cannot_download_report_files(as_role):
    _, pool, _ = tiny_world()
    from annotation.services.judging.simulation import judging_simulation_create
    report = judging_simulation_create(pool=pool, params={"strategies": ["shallow_first"], "replays": 1})
    url = f"/api/v1/reports/{report.pk}/file/?name=curves.csv"
    assert as_role("rater").get(url).status_code == 403
    assert as_role(None).get(url).status_code == 403
    assert as_role("admin").get(url).status_code == 200
