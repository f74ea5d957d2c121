"""Issue 14 item 8: a researcher reads the API docs in the browser and finds and rotates their token;
an admin adds and removes a researcher on a page."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from annotation.services.accounts.users import api_token_for, user_create
from tests.browser.conftest import assert_controls_labelled, log_in, snap
from tests.browser.scenarios import PASSWORD, admin_user
from tests.browser.test_csp import CspWatch
from tests.browser.waits import WAIT_MS

pytestmark = pytest.mark.browser


def status_with(token: str) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client.get("/api/v1/datasets/").status_code


def test_researcher_reads_the_docs_and_rotates_their_token(page, server):
    researcher = user_create(username="reader", password=PASSWORD, role="researcher")
    old = api_token_for(user=researcher)
    watch = CspWatch(page, server)
    log_in(page, server, researcher.username, PASSWORD)

    # The nav leads to the docs page, which is Swagger UI rendering the schema (not a YAML download).
    page.click("nav >> text=API docs")
    page.wait_for_url(f"{server}/api/v1/docs/")
    page.wait_for_selector("#swagger-ui .opblock-tag", timeout=WAIT_MS)
    # Swagger UI draws only the operations in view (a virtual list, once no deep links hold it
    # back): its filter finds the datasets' operations among the schema's.
    page.wait_for_selector("#swagger-ui .opblock")
    page.fill("#swagger-ui .operation-filter-input", "datasets")
    page.wait_for_selector("#swagger-ui .opblock-summary-path:has-text('/api/v1/datasets/')")
    watch.settle()
    watch.collect("/api/v1/docs/")
    snap(page, "api-docs-swagger")

    # Redoc too (not snapped full-page: its one long page is too tall for a screenshot).
    response = page.goto(f"{server}/api/v1/redoc/")
    assert response.status == 200
    page.wait_for_selector("#redoc .api-content h1")
    assert "Rejudge API" in page.text_content("#redoc .api-content h1")
    # Its styles applied: the three-panel layout has a menu beside the content.
    assert page.locator("#redoc .menu-content").bounding_box()["width"] > 100
    watch.settle()
    watch.collect("/api/v1/redoc/")
    # Nothing refused there: Redoc's "by Redocly" logo comes from our static files, not cdn.redoc.ly.
    page.wait_for_selector("#redoc img[alt='redocly logo']")
    assert page.get_attribute("#redoc img[alt='redocly logo']", "src").startswith("/static/")
    assert page.evaluate("() => document.querySelector(\"#redoc img[alt='redocly logo']\").naturalWidth") > 0

    # The token page shows this researcher's token, and rotating it retires the old one at once.
    page.click("nav >> text=API token")
    page.wait_for_url(f"{server}/account/token/")
    assert page.input_value("#api-token") == old
    assert_controls_labelled(page)
    assert status_with(old) == 200
    page.click("#token-rotate [type=submit]")
    page.wait_for_selector("#token-rotated")
    new = page.input_value("#api-token")
    assert new and new != old
    assert status_with(old) == 403  # "Invalid token." (403: session authentication answers first)
    assert status_with(new) == 200
    watch.collect("/account/token/")
    snap(page, "api-token-rotated")
    assert watch.violations == {} and watch.console == []


def test_admin_adds_and_removes_a_researcher(page, server):
    admin = admin_user()
    log_in(page, server, admin.username, PASSWORD)
    page.click("nav >> text=Researchers")
    page.wait_for_url(f"{server}/admin-ui/researchers/")
    assert_controls_labelled(page)
    page.fill("#researcher-username", "lab-reader")
    page.fill("#researcher-email", "reader@example.org")
    page.click("#researcher-add [type=submit]")
    page.wait_for_selector("tr[data-researcher=lab-reader]")
    user = get_user_model().objects.get(username="lab-reader")
    assert user.groups.filter(name="researcher").exists() and user.email == "reader@example.org"
    snap(page, "admin-researchers")

    page.click("tr[data-researcher=lab-reader] button.remove")
    page.click("tr[data-researcher=lab-reader] >> text=Confirm: Remove")
    page.wait_for_selector("tr[data-researcher=lab-reader]", state="detached")
    assert not get_user_model().objects.filter(username="lab-reader").exists()
