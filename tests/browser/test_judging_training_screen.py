"""Issue 24, findings 9 and 10 (the judging screen's part): the training banner numbers the pair
whose feedback is on screen, and a rater who fails the training is told the score and the pass
mark, not only that it was too low."""
from __future__ import annotations

import pytest

from tests.browser.scenarios import judging_setup
from tests.browser.test_judging import KEYS, next_pair, open_judge

pytestmark = pytest.mark.browser

WRONG = {"relevant": "not_relevant", "not_relevant": "relevant"}


def test_the_banner_names_the_pair_in_view_and_a_failed_training_says_score_and_pass_mark(page, server):
    setup = judging_setup(pairs=4, training=3)
    setup.pool.training_pass_mark = 0.8
    setup.pool.save(update_fields=["training_pass_mark"])
    open_judge(page, server, setup)
    shown = None
    for number in (1, 2, 3):
        shown = next_pair(page, after=shown and shown["pair"])
        assert f"pair {number} of 3" in page.text_content("#training-banner")
        right = setup.training_answers[shown["caption"]]
        # The first answer right, the other two wrong: 1 of 3 = 33%, under the pass mark of 80%.
        # The page reads the rater's progress again once the answer is saved: wait for that.
        with page.expect_response(lambda r: "/my-progress/" in r.url):
            page.keyboard.press(KEYS[right if number == 1 else WRONG[right]])
        page.wait_for_selector("#feedback:not([data-result=pending])")
        page.wait_for_function("() => document.getElementById('judge').dataset.armed === 'true'")
        page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
        banner_after = page.text_content("#training-banner")
        assert f"pair {number} of 3" in banner_after, banner_after
        page.keyboard.press("Enter")
    page.wait_for_function("() => document.getElementById('judge').dataset.state === 'training_failed'")
    text = page.text_content("#state")
    assert "33%" in text and "80%" in text, text
