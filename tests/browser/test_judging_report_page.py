"""The judging simulation report page in Chromium: the four curves drawn inline, under the site's
CSP (no violation), with the CSV and SVG downloads."""
from __future__ import annotations

import pytest

from annotation.services.judging.simulation import judging_simulation_create
from tests.annotation.services.judging.simulation_world import tiny_world
from tests.browser.conftest import log_in, snap
from tests.browser.scenarios import PASSWORD, admin_user

pytestmark = pytest.mark.browser

WATCH_CSP = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => window.__cspViolations.push(e.violatedDirective));
"""


def test_the_report_page_draws_the_four_curves(page, server):
    admin = admin_user()
    _, pool, _ = tiny_world()
    report = judging_simulation_create(pool=pool, params={"strategies": ["shallow_first", "pool_order", "sampled"],
                                                          "replays": 4, "checkpoints": [0.25, 0.5, 0.75, 1.0]})
    page.add_init_script(WATCH_CSP)
    log_in(page, server, admin.username, PASSWORD)
    page.goto(f"{server}/reports/{report.pk}/")
    figures = page.locator("figure.chart-figure")
    assert figures.count() == 4
    captions = figures.locator("figcaption").all_text_contents()
    assert captions == ["Relevant pairs found against judgments spent",
                        "Each run's metric error against judgments spent",
                        "Kendall's tau of the system ranking against judgments spent",
                        "Coverage of the 95% intervals against judgments spent"]
    for i in range(4):
        svg = figures.nth(i).locator("svg")
        box = svg.bounding_box()
        assert box and box["width"] > 100 and box["height"] > 50  # drawn, not collapsed
        # Each chart has its curves: one polyline per strategy, in the colours the file gave them.
        lines = svg.locator("polyline")
        assert lines.count() >= 1
        assert lines.first.evaluate("el => getComputedStyle(el).stroke") not in ("none", "")
    assert page.evaluate("window.__cspViolations") == []
    assert page.locator(f'a[href="/api/v1/reports/{report.pk}/file/?name=curves.csv"]').count() == 1
    assert page.locator("script", has_text="alert").count() == 0
    snap(page, "judging-simulation-report")
