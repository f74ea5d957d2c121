"""Raters who can log in (issue 39): an admin makes a rater without a password and gets a link,
shown once; the rater opens it in their own browser, sets a password and lands on their home. An
admin's reset asks in the page (no browser dialog) and shows a new link; a CSV import's links come
as a file to download."""
from __future__ import annotations

import csv
import io

import pytest

from annotation.models import RaterInvitation
from annotation.services.accounts.raters import rater_create
from tests.browser.conftest import assert_controls_labelled, log_in, snap
from tests.browser.scenarios import PASSWORD, admin_user
from tests.browser.test_a11y_layout import AXE, AXE_RUN

pytestmark = pytest.mark.browser


def axe_violations(page) -> list:
    page.evaluate(AXE.read_text())
    return page.evaluate(AXE_RUN)
RATERS_OWN = "dana's own pw 7"


def set_password_in_a_new_browser(browser, url: str, password: str):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto(url)
    assert axe_violations(page) == []
    page.fill("#id_password", password)
    page.fill("#id_password_again", password)
    page.click("text=Set password and log in")
    return context, page


def test_an_invited_rater_sets_a_password_and_lands_logged_in(page, server, browser):
    admin = admin_user()
    log_in(page, server, admin.username, PASSWORD)
    page.goto(f"{server}/admin-ui/raters/")
    page.fill("#rater-username", "dana")
    page.click("#rater-create [type=submit]")
    page.wait_for_selector("tr[data-rater=dana]")
    link = page.locator("#rater-create input.invite-url[data-invite-for=dana]")
    url = link.input_value()
    assert url.startswith(f"{server}/invite/")
    assert page.locator("#rater-create .invite-link >> text=Shown this once").is_visible()
    assert page.locator("#rater-create >> text=Copy link").is_visible()
    assert_controls_labelled(page)
    assert axe_violations(page) == []
    snap(page, "admin-raters-invitation")

    context, rater_page = set_password_in_a_new_browser(browser, url, RATERS_OWN)
    try:
        rater_page.wait_for_url(f"{server}/")
        assert rater_page.locator("h1").inner_text() == "Your work"
        snap(rater_page, "rater-home-after-invitation")
        again = context.new_page()
        again.goto(url)  # used once: the page says so, with no form
        assert "already used" in again.locator("#invitation-problem").inner_text()
    finally:
        context.close()

    # The link is gone from the admin's page once reloaded (only its hash is stored).
    page.reload()
    assert page.locator("input.invite-url").count() == 0


def test_an_admin_resets_a_password_from_the_raters_page(page, server, browser):
    admin = admin_user()
    rater_create(username="erin", password="erin-old-pw-1")
    log_in(page, server, admin.username, PASSWORD)
    page.goto(f"{server}/admin-ui/raters/")
    page.on("dialog", lambda dialog: pytest.fail(f"a browser dialog opened: {dialog.message}"))
    page.click("tr[data-rater=erin] >> text=Reset password")
    page.click("tr[data-rater=erin] >> text=Cancel")
    assert not RaterInvitation.objects.exists()
    page.click("tr[data-rater=erin] >> text=Reset password")
    assert "current password works" in page.locator("tr[data-rater=erin] [data-reset-box]").inner_text()
    page.click("tr[data-rater=erin] >> text=Confirm: make a new link")
    url = page.locator("tr[data-rater=erin] input.invite-url").input_value()
    context, rater_page = set_password_in_a_new_browser(browser, url, "erin-new-pw-2")
    try:
        rater_page.wait_for_url(f"{server}/")
    finally:
        context.close()


def test_a_csv_import_offers_its_links_as_a_file(page, server, tmp_path):
    admin = admin_user()
    csv_file = tmp_path / "raters.csv"
    csv_file.write_text("username,email,password\nfay,,\ngus,,gus-pw-12345\n")
    log_in(page, server, admin.username, PASSWORD)
    page.goto(f"{server}/admin-ui/raters/")
    page.set_input_files("#raters-file", str(csv_file))
    page.click("#rater-import [type=submit]")
    with page.expect_download() as download:
        page.click("text=Download the 1 invitation link (CSV)")
    rows = list(csv.reader(io.StringIO(open(download.value.path()).read())))
    assert rows[0] == ["username", "link"] and [r[0] for r in rows[1:]] == ["fay"]
    assert rows[1][1].startswith(f"{server}/invite/")
