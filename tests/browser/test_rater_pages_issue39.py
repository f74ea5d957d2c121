"""Issue 39, finding 7: the rater's judging page. A failed training's screen no longer reads
"pair 3 of 3"; "Labelled today" and "Left for you" leave training out (the pool page's rule);
the guidelines open at their top, the core rule in view; on a phone the guidelines keep the key
caps their sentences name ("then type a comment, Enter sends")."""
from __future__ import annotations

import pytest

from tests.browser.scenarios import judging_setup
from tests.browser.test_judging import KEYS, next_pair, open_judge
from tests.browser.waits import WAIT_MS

pytestmark = pytest.mark.browser

WRONG = {"relevant": "not_relevant", "not_relevant": "relevant"}


def test_a_failed_training_screen_and_the_counts_leave_training_out(page, server):
    setup = judging_setup(pairs=4, training=3)
    open_judge(page, server, setup)
    shown = None
    for _ in range(3):
        shown = next_pair(page, after=shown and shown["pair"])
        assert page.text_content("#left") == "4"  # the pool's 4 pairs, training not counted
        with page.expect_response(lambda r: "/my-progress/" in r.url):
            page.keyboard.press(KEYS[WRONG[setup.training_answers[shown["caption"]]]])
        page.wait_for_selector("#feedback:not([data-result=pending])")
        page.wait_for_function("() => document.getElementById('judge').dataset.armed === 'true'")
        assert page.text_content("#today") == "0"  # a training answer is not a label of the pool
        page.keyboard.press("Enter")
    page.wait_for_function("() => document.getElementById('judge').dataset.state === 'training_failed'")
    assert "0%" in page.text_content("#state")
    assert not page.is_visible("#training-banner"), page.text_content("#training-banner")
    assert page.text_content("#today") == "0" and page.text_content("#left") == "4"


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 600}, {"width": 390, "height": 844}],
                         ids=["laptop", "phone"])
def test_the_guidelines_open_at_their_top_with_their_key_caps(browser, server, viewport):
    setup = judging_setup(pairs=4, training=0)
    context = browser.new_context(viewport=viewport)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    try:
        open_judge(page, server, setup)
        next_pair(page)
        page.click("#guidelines-open")
        page.wait_for_selector("#guidelines[open]")
        assert page.evaluate("() => document.getElementById('guidelines').scrollTop") == 0
        rule = page.locator("#guidelines p strong").first.bounding_box()
        assert 0 <= rule["y"] and rule["y"] + rule["height"] <= viewport["height"]  # the core rule in view
        # The sentence that names Enter shows its key cap (a phone hid every kbd: "then type a comment, sends").
        enter = page.locator("#guidelines dd:has-text('then type a comment') kbd")
        assert enter.bounding_box() and enter.bounding_box()["width"] > 0
        page.keyboard.press("Escape")
        page.wait_for_selector("#guidelines:not([open])", state="attached")
    finally:
        context.close()
