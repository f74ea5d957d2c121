"""Issue 39, finding 6: the API docs page follows the system's colour scheme (Swagger UI's own dark
theme) and axe-core finds no serious or critical violation there, light or dark, with an operation
opened (the page was left out of tests/browser/test_a11y_layout.py's axe walk as Swagger UI's markup)."""
from __future__ import annotations

import pytest

from tests.browser.conftest import log_in
from tests.browser.scenarios import PASSWORD, admin_user
from tests.browser.test_a11y_layout import AXE

pytestmark = pytest.mark.browser


AXE_SERIOUS = """async () => {
  const result = await axe.run(document, {resultTypes: ['violations']});
  return result.violations.filter((v) => ['serious', 'critical'].includes(v.impact))
    .map((v) => `${v.id}: ${v.nodes.length} × ${v.nodes.slice(0, 3).map((n) => `${n.target.join(' ')} ${n.html.slice(0, 80)}`).join(' | ')}`);
}"""
BACKGROUND = """(selector) => { const rgb = getComputedStyle(document.querySelector(selector)).backgroundColor.match(/[\\d.]+/g)
  .slice(0, 3).map(Number); return rgb.reduce((a, b) => a + b, 0) / 3; }"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_api_docs_follow_the_colour_scheme_with_no_serious_axe_violation(browser, server, scheme):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    try:
        log_in(page, server, admin_user().username, PASSWORD)
        page.goto(f"{server}/api/v1/docs/")
        page.wait_for_selector("#swagger-ui .opblock-tag")
        page.click("#swagger-ui .opblock-summary >> nth=0")  # an operation opened, its parameters shown
        page.wait_for_selector("#swagger-ui .opblock-body")
        shade = page.evaluate(BACKGROUND, "#swagger-ui")
        assert shade < 60 if scheme == "dark" else shade > 200, shade
        page.evaluate(AXE.read_text())
        found = page.evaluate(AXE_SERIOUS)
        assert found == [], "\n".join(found)
    finally:
        context.close()
