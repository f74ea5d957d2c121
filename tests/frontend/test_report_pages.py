"""Report pages: who may open them, tables in the papers' layout, SVG charts, download links."""
from __future__ import annotations

import re

import pytest
from django.test import Client

from annotation.services.exports.labels import export_create
from annotation.services.reports.create import report_create
from tests.annotation.services.reports.test_report_metrics import example_pool
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def _client(role):
    client = Client()
    if role:
        client.force_login(make_user(role))
    return client


@pytest.fixture
def pool(tmp_path):
    return example_pool(tmp_path)


def test_pages_are_for_admins_and_researchers(pool):
    report = report_create(pool=pool, kind="agreement", params={"n_boot": 0})
    for url in ("/reports/", f"/reports/{report.pk}/"):
        assert _client(None).get(url).status_code == 302  # to the login page
        assert _client("rater").get(url).status_code == 403
        assert _client("researcher").get(url).status_code == 200
        assert _client("admin").get(url).status_code == 200


def test_index_lists_reports_and_exports_and_only_admins_get_the_forms(pool):
    report = report_create(pool=pool, kind="metrics")
    export = export_create(pool=pool, fmt="fire_json")
    researcher = _client("researcher").get("/reports/").content.decode()
    assert f'href="/reports/{report.pk}/"' in researcher
    assert f'href="/api/v1/exports/{export.pk}/download/"' in researcher
    assert 'id="report-form"' not in researcher and "reports.js" not in researcher
    admin = _client("admin").get("/reports/").content.decode()
    assert 'id="report-form"' in admin and 'id="export-form"' in admin and 'id="judgments-form"' in admin
    assert "reports.js" in admin


def test_metrics_report_page_shows_the_fire_layout_and_charts(pool):
    report = report_create(pool=pool, kind="metrics")
    page = _client("researcher").get(f"/reports/{report.pk}/").content.decode()
    assert "<td>75.0 (25.0 + 50.0)</td>" in page  # run A, C@1
    assert "<td>66.7 (62.5 + 4.2)</td>" in page  # run B, AP (textbook)
    # One delta chart per metric (C@1, C@5, C@10, both APs) and the length scatter.
    assert page.count('<svg class="chart"') == 6
    assert re.search(r'<rect class="bar-gain"[^>]*><title>A: 75.0 \(25.0 \+ 50.0\)</title>', page)
    assert page.count('<circle class="dot"') == 4
    assert f'href="/api/v1/reports/{report.pk}/csv/?table=leave_one_run_out"' in page
    assert "Unresolved pool pairs count as not relevant" in page
    assert "krippendorff" in page and "pytrec_eval" in page  # library versions


def test_agreement_report_page_charts_each_rater(pool):
    report = report_create(pool=pool, kind="agreement", params={"n_boot": 0})
    page = _client("admin").get(f"/reports/{report.pk}/").content.decode()
    pseudonym = report.result["raters"][0]["rater"]
    assert page.count('<svg class="chart"') == 1
    assert re.search(rf'<text [^>]*class="label">rater {pseudonym}</text>', page)
    # This rater only gave single votes and no gold answers: both shares are undefined, so no bar.
    assert '<rect class="bar-s0"' not in page
    assert "Pairs and resolution" in page and "<td>17</td>" in page


def test_a_sample_estimate_page_renders(pool):
    report = report_create(pool=pool, kind="sample_estimate")
    page = _client("admin").get(f"/reports/{report.pk}/").content.decode()
    assert "Sample and labelling saved" in page and page.count('<svg class="chart"') == 1
