"""Issue 14 item 9 (pool page parts): an adjudication decision asks for a confirmation and can
be taken back before it is sent; the two decisions look different; pool settings are edited on
the pool page after the build."""
from __future__ import annotations

import pytest

from annotation.models import PooledPair
from annotation.services.queue.labels import label_submit
from annotation.services.queue.leases import lease_next
from tests.browser.conftest import assert_controls_labelled, log_in, snap
from tests.browser.scenarios import PASSWORD, admin_user, judging_setup

pytestmark = pytest.mark.browser


def test_adjudication_asks_before_deciding_and_cancel_sends_nothing(page, server):
    setup = judging_setup(pairs=6, training=0, pool_name="Adjudication pool")
    for step in range(2):
        lease = lease_next(pool=setup.pool, rater=setup.rater).lease
        label_submit(rater=setup.rater, client_id=f"amb{step}", lease=lease.token, value="ambiguous", comment="unsure")
    first, second = PooledPair.objects.filter(pool=setup.pool, state="adjudication").order_by("pk")
    admin = admin_user()
    log_in(page, server, admin.username, PASSWORD)
    page.goto(f"{server}/admin-ui/pools/{setup.pool.pk}/attention/")
    card = page.locator("article.pair").first
    relevant, not_relevant = card.locator("text=Decide: relevant"), card.locator("text=Decide: not relevant")
    # The two decisions look different, not only by their words.
    assert relevant.evaluate("b => getComputedStyle(b).backgroundColor") != not_relevant.evaluate("b => getComputedStyle(b).backgroundColor")

    not_relevant.click()
    page.wait_for_selector("text=Resolve this pair as not relevant?")
    snap(page, "admin-adjudication-confirm")
    assert_controls_labelled(page)
    first.refresh_from_db()
    assert first.state == "adjudication"  # asking sends nothing
    card.locator("text=Cancel").click()
    assert card.locator("[data-confirm-box]").is_hidden()
    first.refresh_from_db()
    assert first.state == "adjudication"

    relevant.click()
    card.locator("text=Confirm: relevant").click()
    page.wait_for_function("() => document.querySelectorAll('article.pair').length === 1")
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.state, first.resolved_label, first.resolved_by_admin) == ("resolved", "relevant", True)
    assert second.state == "adjudication"


def test_admin_changes_pool_settings_on_the_pool_page(page, server):
    setup = judging_setup(pairs=8, training=2, pool_name="Settings pool", lease_seconds=300, redundancy=0.0)
    admin = admin_user()
    log_in(page, server, admin.username, PASSWORD)
    page.goto(f"{server}/admin-ui/pools/{setup.pool.pk}/")
    page.fill("#set-lease", "5")
    page.click("#pool-settings [type=submit]")
    # Under the 10 s minimum: the browser holds the form back (the API refuses it too).
    assert page.eval_on_selector("#set-lease", "input => input.validity.rangeUnderflow") is True
    setup.pool.refresh_from_db()
    assert setup.pool.lease_seconds == 300
    page.fill("#set-lease", "120")
    page.fill("#set-redundancy", "1")
    page.fill("#set-gold", "0.1")
    page.fill("#set-pass", "0.75")
    page.click("#pool-settings [type=submit]")
    page.wait_for_selector("#pool-settings .form-done")
    page.wait_for_selector("text=leases 120 s")  # the page reloads with the new settings
    snap(page, "admin-pool-settings")
    setup.pool.refresh_from_db()
    assert (setup.pool.lease_seconds, setup.pool.redundancy, setup.pool.gold_rate, setup.pool.training_pass_mark) == (120, 1.0, 0.1, 0.75)
    assert set(PooledPair.objects.filter(pool=setup.pool, role="pool").values_list("required_labels", flat=True)) == {2}
