"""Issue 22, finding 14: one account judging on two devices at once (two browsers: each has its
own storage, so its own device id). Before, both were shown the same pairs; the second device's
answers were refused ("you have already labelled this pair") and its status line said "All
answers saved · 4 answers refused by the server"."""
from __future__ import annotations

import pytest

from annotation.models import Label
from tests.browser.conftest import log_in, snap
from tests.browser.scenarios import judging_setup, pair_of_item
from tests.browser.test_judging import next_pair
from tests.browser.waits import WAIT_MS

pytestmark = pytest.mark.browser


def test_one_account_on_two_devices_judges_different_pairs_and_no_answer_is_refused(browser, context, server):
    setup = judging_setup(pairs=12, training=0)
    phone_context = browser.new_context(viewport={"width": 390, "height": 800})
    phone_context.set_default_timeout(WAIT_MS)
    try:
        devices = {"laptop": context.new_page(), "phone": phone_context.new_page()}
        for page in devices.values():
            log_in(page, server, setup.rater.username, setup.password)
            page.goto(f"{server}/judge/{setup.pool.pk}/")
        answered = {name: [] for name in devices}
        shown = {name: None for name in devices}
        for _ in range(3):
            for name, page in devices.items():
                shown[name] = next_pair(page, after=shown[name] and shown[name]["pair"])
                page.keyboard.press("1" if name == "laptop" else "2")
                answered[name].append(pair_of_item(shown[name]["pair"]))
        for page in devices.values():
            page.wait_for_selector("#save-status[data-status=saved]")
        assert not set(answered["laptop"]) & set(answered["phone"])
        labels = dict(Label.objects.filter(rater=setup.rater).values_list("pair_id", "value"))
        assert labels == {pair: "relevant" for pair in answered["laptop"]} | {pair: "not_relevant" for pair in answered["phone"]}
        for page in devices.values():
            assert page.evaluate("() => document.querySelectorAll('#save-status .refused').length") == 0
            assert page.text_content("#save-status") == "All answers saved"
        snap(devices["phone"], "judge-second-device")
    finally:
        phone_context.close()
