"""Issue 24 findings 7 and 9: admin tables keep their status and action columns on a phone's
screen (a table that still scrolls says so), and every action confirms where it destroys and
reports what it did: Requeue, the rater CSV import (new raters listed without a reload)."""
from __future__ import annotations

import pytest

from annotation.models import PooledPair
from annotation.services.queue.labels import label_submit
from annotation.services.queue.leases import lease_next
from tests.browser.conftest import log_in, snap
from tests.browser.scenarios import PASSWORD, admin_user, judging_setup
from tests.browser.waits import WAIT_MS

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
# Elements whose box reaches past the window's right edge.
OFF_SCREEN = "(selector) => [...document.querySelectorAll(selector)].filter((el) => el.getClientRects().length)" \
             ".filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1).map((el) => el.outerHTML.slice(0, 80))"


def test_requeue_asks_first_and_says_what_it_did(page, server):
    setup = judging_setup(pairs=4, training=0, pool_name="Requeue pool")
    lease = lease_next(pool=setup.pool, rater=setup.rater).lease
    label_submit(rater=setup.rater, client_id="amb", lease=lease.token, value="ambiguous", comment="unsure")
    pair = PooledPair.objects.get(pool=setup.pool, state="adjudication")
    admin = admin_user()
    log_in(page, server, admin.username, PASSWORD)
    page.goto(f"{server}/admin-ui/pools/{setup.pool.pk}/attention/")
    questions = []

    # Asked in the page (no browser dialog), as every question of the admin's pages.
    page.on("dialog", lambda dialog: (questions.append(dialog.message), dialog.dismiss()))
    page.click("text=Requeue for raters")
    assert "back in the queue" in page.text_content("article.pair .confirm-box")
    page.click("article.pair .confirm-box >> text=Cancel")
    page.wait_for_function("() => document.querySelectorAll('article.pair button:not([disabled])').length >= 3")
    assert not questions and page.locator(".confirm-box").count() == 0
    pair.refresh_from_db()
    assert pair.state == "adjudication"  # dismissed: nothing sent

    page.click("text=Requeue for raters")
    page.click("text=Confirm: Requeue for raters")
    page.wait_for_selector(f"#action-status:has-text('Pair {pair.pk}')")
    assert "back in the raters' queue" in page.text_content("#action-status")
    assert page.locator("article.pair").count() == 0
    pair.refresh_from_db()
    assert pair.state == "open"
    snap(page, "admin-requeue-done")


def test_rater_csv_import_reports_its_result_and_lists_the_new_raters(page, server, tmp_path):
    admin = admin_user()
    log_in(page, server, admin.username, PASSWORD)
    page.goto(f"{server}/admin-ui/raters/")
    page.evaluate("() => { window.notReloaded = true; }")
    csv = tmp_path / "raters.csv"
    csv.write_text("username,email\nzoe,zoe@example.org\nyann,\n")
    page.set_input_files("#raters-file", str(csv))
    page.click("#rater-import [type=submit]")
    page.wait_for_selector("#rater-import .form-done:has-text('Created 2 raters')")
    assert "zoe" in page.text_content("#rater-import .form-done") and "yann" in page.text_content("#rater-import .form-done")
    page.wait_for_selector("#rater-rows tr[data-rater=zoe]")
    page.wait_for_selector("#rater-rows tr[data-rater=yann]")
    assert page.evaluate("() => window.notReloaded") is True


def test_admin_tables_keep_status_and_actions_on_a_phone(browser, server):
    setup = judging_setup(pairs=4, training=2, pool_name="Phone pool")
    admin = admin_user()
    context = browser.new_context(viewport=PHONE)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    try:
        log_in(page, server, admin.username, PASSWORD)
        page.goto(f"{server}/admin-ui/raters/")
        row = page.locator(f"tr[data-rater='{setup.rater.username}']")
        assert row.locator("text=Pause").is_visible() and row.locator("text=active").is_visible()
        assert page.evaluate(OFF_SCREEN, "#rater-rows td, #rater-rows th, #rater-rows button") == []
        snap(page, "admin-raters-phone")

        page.goto(f"{server}/admin-ui/pools/{setup.pool.pk}/")
        row = page.locator(f"tr[data-rater-id='{setup.rater.pk}']")
        assert row.locator("text=Remove").is_visible() and row.locator("[data-live-rater=training]").is_visible()
        assert page.evaluate(OFF_SCREEN, "tr[data-rater-id] td, tr[data-rater-id] button, #query-rows td") == []
        page.goto(f"{server}/admin-ui/pools/{setup.pool.pk}/quality/")
        assert page.evaluate(OFF_SCREEN, "#quality-table tbody td, #quality-table tbody th") == []

        # A table that still scrolls (the report pages' wide tables) says so above itself.
        page.goto(f"{server}/admin-ui/pools/{setup.pool.pk}/")
        page.evaluate("""() => { const t = document.createElement('table');
          t.innerHTML = '<tr>' + '<td>wide column of text</td>'.repeat(12) + '</tr>';
          document.querySelector('main').append(t); }""")
        page.wait_for_selector(".scroll[data-scrolls=true]", state="attached")
        hint = page.locator(".scroll-hint:visible")
        assert hint.count() >= 1 and "Scroll sideways" in hint.first.text_content()
    finally:
        context.close()
