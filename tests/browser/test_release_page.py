"""The releases pages: an admin makes a release of a pool from its pool page's link, lands on the
release's page (sources, counts, files with checksums), and its download is the archive whose
SHA-256 the page shows."""
from __future__ import annotations

import hashlib

import pytest

from annotation.models import Release
from tests.annotation.services.test_report_metrics import example_pool
from tests.browser.conftest import assert_controls_labelled, log_in, snap
from tests.browser.scenarios import PASSWORD, admin_user

pytestmark = pytest.mark.browser


def test_admin_makes_a_release_from_the_pool_page_and_downloads_it(page, server, tmp_path):
    admin = admin_user()
    pool = example_pool(tmp_path)
    log_in(page, server, admin.username, PASSWORD)
    page.goto(f"{server}/admin-ui/pools/{pool.pk}/")
    page.click("text=Make a release")
    page.wait_for_url(f"**/releases/?pool={pool.pk}*")
    assert page.eval_on_selector("#release-pools", "s => [...s.selectedOptions].map(o => o.value)") == [str(pool.pk)]
    assert_controls_labelled(page)
    page.fill("#release-name", "example-fire")
    page.fill("#release-title", "Example, corrected")
    page.fill("#release-licence", "CC-BY-4.0")
    page.click("#release-form [type=submit]")
    page.wait_for_url("**/releases/*/", timeout=120_000)
    assert page.is_visible("#release-leaderboard-table") and page.is_visible("svg.leaderboard-chart")
    release = Release.objects.get()
    assert page.text_content("h1").strip() == "Example, corrected"
    assert page.text_content("#release-sha256").strip() == release.sha256
    assert "First version." in page.text_content("#release-changes-summary")
    paths = page.eval_on_selector_all("#release-files-table tbody td:first-child", "cells => cells.map(c => c.innerText)")
    assert {"qrels.txt", "fire.json", "croissant.json", "release.json", "SHA256SUMS"} <= set(paths)
    snap(page, "release-page")
    download = page.request.get(server + page.get_attribute("#release-download", "href"))
    assert download.status == 200 and hashlib.sha256(download.body()).hexdigest() == release.sha256
