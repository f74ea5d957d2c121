"""Issue 14 item 7: the pool page follows the raters' work without a reload, shows the last
hour's labels and each rater's active time and rate, and asks nothing while the tab is hidden."""
from __future__ import annotations

import pytest

from annotation.services.queue.labels import label_submit
from annotation.services.queue.leases import lease_next
from tests.browser.conftest import log_in, snap
from tests.browser.scenarios import PASSWORD, admin_user, judging_setup

pytestmark = pytest.mark.browser

HIDE = """() => {
  Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
  document.dispatchEvent(new Event('visibilitychange'));
}"""
SHOW = """() => {
  Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'visible' });
  document.dispatchEvent(new Event('visibilitychange'));
}"""


def test_pool_page_updates_live_and_pauses_while_hidden(page, server):
    setup = judging_setup(pairs=12, training=0, pool_name="Live pool")
    admin = admin_user()
    log_in(page, server, admin.username, PASSWORD)
    live_calls = []
    page.on("request", lambda request: live_calls.append(request.url) if "/live/" in request.url else None)
    page.goto(f"{server}/admin-ui/pools/{setup.pool.pk}/")
    page.evaluate("() => { window.notReloaded = true; }")
    assert page.text_content("[data-live=labels]") == "0"

    for step in range(5):
        lease = lease_next(pool=setup.pool, rater=setup.rater).lease
        label_submit(rater=setup.rater, client_id=f"live{step}", lease=lease.token, value="relevant", seconds=2.0)
    # No reload: the figures, the rater's row and the rates line follow the five labels.
    page.wait_for_function("() => document.querySelector('[data-live=labels]').textContent === '5'")
    assert page.evaluate("() => window.notReloaded") is True
    assert page.text_content("[data-live=labels_last_hour]") == "5"
    assert page.text_content("b[data-live='by_state.resolved']") == "5"
    assert page.text_content("b[data-live=left]") == "7"
    row = f"tr[data-rater-id='{setup.rater.pk}']"
    assert page.text_content(f"{row} [data-live-rater=labels]") == "5"
    assert page.text_content(f"{row} [data-live-rater=labels_last_hour]") == "5"
    assert page.text_content(f"{row} [data-live-rater=rate]").endswith("/h")
    assert page.text_content(f"{row} [data-live-rater=active]") != "0 s"
    page.wait_for_function("() => document.querySelector('#pool-charts [data-rates]').textContent.includes('per active hour')")
    snap(page, "admin-pool-live")

    # Hidden: no poll while labels arrive; shown again: one poll at once brings them in.
    page.evaluate(HIDE)
    page.wait_for_selector("#pool-live[data-state=paused]", state="attached")
    calls_when_hidden = len(live_calls)
    lease = lease_next(pool=setup.pool, rater=setup.rater).lease
    label_submit(rater=setup.rater, client_id="live-hidden", lease=lease.token, value="relevant", seconds=2.0)
    page.wait_for_timeout(11000)  # two poll intervals
    assert len(live_calls) == calls_when_hidden
    assert page.text_content("[data-live=labels]") == "5"
    page.evaluate(SHOW)
    page.wait_for_function("() => document.querySelector('[data-live=labels]').textContent === '6'")
    assert page.evaluate("() => window.notReloaded") is True
