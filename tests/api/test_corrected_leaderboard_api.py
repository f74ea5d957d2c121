"""The corrected leaderboard over REST, through the existing reports endpoints: an admin starts it
as a job, a researcher reads it and downloads its tables; raters and anonymous callers are refused."""
from __future__ import annotations

import csv
import io

import pytest

from annotation.models import Job, Report
from annotation.services.reports.create import report_create
from tests.annotation.services.reports.test_report_corrected_leaderboard import _pool

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool(tmp_path):
    return _pool(tmp_path)


def test_admin_starts_the_leaderboard_and_a_researcher_reads_it(as_role, run_jobs, pool):
    with run_jobs():
        response = as_role("admin").post(f"/api/v1/pools/{pool.pk}/reports/",
                                          {"kind": "corrected_leaderboard", "params": {"replicates": 200, "ks": [1]}},
                                          format="json")
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.data["id"])
    assert job.status == "succeeded", job.message
    report = Report.objects.get(pk=job.result["report_id"])
    assert report.kind == "corrected_leaderboard"
    # depth null: every run scored whole (issue 35; a cut is asked for, and then named in the measures).
    assert report.params == {"ks": [1], "depth": None, "replicates": 200, "seed": 0, "confidence": 0.95, "decimals": 1,
                             "judged_threshold": 0.9}

    researcher = as_role("researcher")
    detail = researcher.get(f"/api/v1/reports/{report.pk}/")
    assert detail.status_code == 200
    runs = {r["run"]: r for r in detail.data["result"]["runs"]}
    assert runs["X"]["fire"]["C@1"] == "100.0 (33.3 + 66.7)" and runs["X"]["rank_change"]["AP"] == 1
    assert {"leaderboard", "ranks", "intervals", "kendall_tau", "leaderboard_values"} <= set(detail.data["csv_tables"])
    rows = list(csv.reader(io.StringIO(researcher.get(
        f"/api/v1/reports/{report.pk}/csv/?table=leaderboard_values").content.decode())))
    assert rows[0][:3] == ["run", "run_id", "measure"] and rows[1][:3] == ["X", str(runs["X"]["run_id"]), "C@1"]


@pytest.mark.parametrize("role", [None, "rater", "researcher"])
def test_only_admins_start_it(as_role, pool, role):
    response = as_role(role).post(f"/api/v1/pools/{pool.pk}/reports/", {"kind": "corrected_leaderboard"},
                                  format="json")
    assert response.status_code in ((401, 403) if role is None else (403,))
    assert not Job.objects.exists()


def test_raters_cannot_read_it(as_role, pool):
    report = report_create(pool=pool, kind="corrected_leaderboard", params={"replicates": 100})
    assert as_role("rater").get(f"/api/v1/reports/{report.pk}/").status_code == 403
    assert as_role(None).get(f"/api/v1/reports/{report.pk}/").status_code in (401, 403)


def test_a_depth_cut_is_asked_for_and_named_and_a_bad_one_is_a_400_naming_it(as_role, run_jobs, pool):
    admin = as_role("admin")
    with run_jobs():
        response = admin.post(f"/api/v1/pools/{pool.pk}/reports/",
                              {"kind": "corrected_leaderboard", "params": {"replicates": 100, "depth": 2}}, format="json")
    assert response.status_code == 202, response.content
    report = Report.objects.get(pk=Job.objects.get(pk=response.data["id"]).result["report_id"])
    assert report.result["depth"] == 2 and report.result["measures"][2] == "C@10 (runs cut at depth 2)"
    for bad in (0, "five", 2.5):
        response = admin.post(f"/api/v1/pools/{pool.pk}/reports/",
                              {"kind": "corrected_leaderboard", "params": {"depth": bad}}, format="json")
        assert response.status_code == 400 and "depth" in response.content.decode(), (bad, response.content)
