"""The corrected leaderboard's report page in Chromium at 1280 x 800: the intervals chart drawn
inline under the site's CSP, one panel per measure with both intervals of every run, as wide as its
card, every text at 12 px or more as rendered, and a legend on the chart (issue 35, finding 5)."""
from __future__ import annotations

import pytest

from annotation.services.reports.create import report_create
from tests.annotation.services.reports.test_report_corrected_leaderboard import _pool
from tests.browser.conftest import log_in, snap
from tests.browser.scenarios import PASSWORD, admin_user

pytestmark = pytest.mark.browser

WATCH_CSP = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => window.__cspViolations.push(e.violatedDirective));
"""


def test_the_leaderboard_page_draws_the_intervals(page, server, tmp_path):
    admin = admin_user()
    report = report_create(pool=_pool(tmp_path), kind="corrected_leaderboard", params={"replicates": 200})
    page.add_init_script(WATCH_CSP)
    log_in(page, server, admin.username, PASSWORD)
    page.goto(f"{server}/reports/{report.pk}/")
    chart = page.locator("figure.chart-figure svg.leaderboard-chart")
    assert chart.count() == 1
    box = chart.bounding_box()
    figure = page.locator("figure.chart-figure").bounding_box()
    assert box and box["height"] > 200  # drawn, not collapsed
    assert box["width"] >= 0.95 * figure["width"]  # the card's width, not a fixed 584 px
    smallest = chart.evaluate(
        "svg => Math.min(...[...svg.querySelectorAll('text')].map("
        "t => parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a))")
    assert smallest >= 12
    legend = chart.locator("g.legend").text_content()
    assert "original positives" in legend and "corrected positives" in legend and "dot = value" in legend
    assert "95% bootstrap interval" in legend
    # 5 measures x 2 runs, each with its original and its corrected interval.
    assert chart.locator("g.original").count() == chart.locator("g.corrected").count() == 10
    dot = chart.locator("g.corrected circle").first
    assert dot.evaluate("el => getComputedStyle(el).fill") not in ("none", "")
    assert page.locator("td", has_text="100.0 (33.3 + 66.7)").count() >= 1
    assert page.evaluate("window.__cspViolations") == []
    snap(page, "corrected-leaderboard-report")
