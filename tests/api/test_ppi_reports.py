"""The ppi_estimates report over REST: an admin starts it as a job, a researcher reads it and may
not start it (issue 25)."""
from __future__ import annotations

import pytest

from annotation.models import Job, Report
from tests.annotation.services.judging.simulation_world import tiny_world
from tests.annotation.services.judging.test_ppi_report import _judge

pytestmark = pytest.mark.django_db


def test_admin_starts_it_over_rest_and_a_researcher_reads_it_but_cannot_start_it(as_role, run_jobs):
    _, pool, _ = tiny_world()
    _judge(pool)
    assert as_role("researcher").post(f"/api/v1/pools/{pool.pk}/reports/", {"kind": "ppi_estimates"},
                                      format="json").status_code == 403
    with run_jobs():
        response = as_role("admin").post(f"/api/v1/pools/{pool.pk}/reports/",
                                         {"kind": "ppi_estimates", "params": {"ks": [1, 10]}}, format="json")
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.data["id"])
    assert job.status == Job.Status.SUCCEEDED, job.message
    report = Report.objects.get(pk=job.result["report_id"])
    detail = as_role("researcher").get(f"/api/v1/reports/{report.pk}/").data
    assert set(detail["csv_tables"]) == {"estimates", "differences", "bounds", "design"}
    assert detail["result"]["measures"] == ["C@1", "C@10", "AP", "nDCG@10"]
