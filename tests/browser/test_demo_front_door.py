"""Issue 14 item 11: the demo researcher finds a report and an export to download, and the
agreement report says what its resolved share is out of."""
from __future__ import annotations

import pytest

from annotation.demo.load import demo_load
from tests.browser.conftest import log_in, snap

pytestmark = pytest.mark.browser


def test_demo_researcher_finds_a_report_and_an_export(page, server):
    summary = demo_load()
    log_in(page, server, "researcher", "rejudge-researcher")
    page.goto(f"{server}/reports/")
    export_link = page.locator(f"section[aria-labelledby=exports-title] a[href='/api/v1/exports/{summary['export'].pk}/download/']")
    assert export_link.count() == 1
    download = page.request.get(f"{server}/api/v1/exports/{summary['export'].pk}/download/")
    assert download.status == 200 and download.body().strip()
    snap(page, "demo-researcher-reports")
    page.goto(f"{server}/reports/{summary['report'].pk}/")
    summary_table = page.text_content("section[aria-labelledby=table-summary]")
    assert "resolved percent of decided pairs" in summary_table
    assert "resolved percent of all pairs" in summary_table
    assert "decided pairs" in summary_table
    snap(page, "demo-agreement-report")
