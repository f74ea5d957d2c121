"""Issue 14, item 6 (the judging screen): Space and R on the training-feedback card, a comment for
'ambiguous', a cue for a key pressed as a pair appears, the Play button's name, and the page's own
latency counter not counting the time spent reading feedback."""
from __future__ import annotations

import pytest

from annotation.models import Label
from tests.browser.conftest import log_in, snap
from tests.browser.scenarios import judging_setup
from tests.browser.test_judging import KEYS, next_pair

pytestmark = pytest.mark.browser

OUTBOX_SIZE = "() => Object.keys(localStorage).filter((k) => k.startsWith('rejudge.outbox.')).length"
ACTIVE = "document.querySelector('video.clip.active')"


def test_space_and_r_work_the_clip_on_the_feedback_card_and_continue_is_timed_from_enter(page, server):
    setup = judging_setup(pairs=4, training=2)
    log_in(page, server, setup.rater.username, setup.password)
    page.goto(f"{server}/judge/{setup.pool.pk}/")
    shown = next_pair(page)
    page.keyboard.press(KEYS[setup.training_answers[shown["caption"]]])
    page.wait_for_selector("#feedback[data-result=correct]")
    page.wait_for_function("() => document.getElementById('judge').dataset.armed === 'true'")
    assert page.evaluate("() => document.activeElement.id") == "feedback-continue"
    assert page.evaluate(f"() => {ACTIVE}.paused")

    page.keyboard.press("Space")  # plays the clip; it does not press Continue
    page.wait_for_function(f"() => !{ACTIVE}.paused && {ACTIVE}.currentTime > 0.3")
    assert page.get_attribute("#judge", "data-state") == "feedback"
    page.keyboard.press("r")
    page.wait_for_function(f"() => {ACTIVE}.currentTime < 0.3")
    assert page.get_attribute("#judge", "data-state") == "feedback"
    page.keyboard.press("Space")
    page.wait_for_function(f"() => {ACTIVE}.paused")

    page.wait_for_timeout(400)  # reading the explanation
    before_enter = page.evaluate("() => performance.now()")
    page.keyboard.press("Enter")
    second = next_pair(page, after=shown["pair"])
    page.wait_for_function("(pair) => window.rejudgeTimings.some((t) => t.pairId === pair)", arg=second["pair"])
    timing = page.evaluate("(pair) => window.rejudgeTimings.find((t) => t.pairId === pair)", second["pair"])
    assert timing["startedAt"] >= before_enter  # measured from Continue, not from the answer before the card


def test_ambiguous_needs_a_comment(page, server):
    setup = judging_setup(pairs=3, training=0)
    log_in(page, server, setup.rater.username, setup.password)
    page.goto(f"{server}/judge/{setup.pool.pk}/")
    next_pair(page)
    page.keyboard.press("3")
    page.wait_for_selector("#comment", state="visible")
    page.keyboard.press("Enter")  # nothing written
    page.wait_for_selector("#comment[aria-invalid=true]")
    assert "Write a few words" in page.text_content("#key-cue")
    assert page.get_attribute("#judge", "data-state") == "comment"
    assert page.evaluate(OUTBOX_SIZE) == 0
    snap(page, "judge-ambiguous-needs-a-comment")
    page.keyboard.type("the caption fits two of the shapes")
    page.keyboard.press("Enter")
    page.wait_for_selector("#save-status[data-status=saved]")
    label = Label.objects.get(rater=setup.rater)
    assert label.value == "ambiguous" and label.comment == "the caption fits two of the shapes"


def test_a_key_pressed_as_a_new_pair_appears_is_not_taken_and_says_so(page, server):
    setup = judging_setup(pairs=4, training=0)
    log_in(page, server, setup.rater.username, setup.password)
    page.goto(f"{server}/judge/{setup.pool.pk}/")
    first = next_pair(page)
    page.wait_for_function("() => [...document.querySelectorAll('video.clip')].every((v) => v.readyState >= 2)")
    page.keyboard.press("1")  # the preloaded pair takes the screen at once
    page.keyboard.press("2")  # at once: the next pair has just appeared
    page.wait_for_function("() => document.getElementById('key-cue').textContent.includes('Press it again')")
    second = next_pair(page, after=first["pair"])
    page.wait_for_selector("#save-status[data-status=saved]")
    assert Label.objects.filter(rater=setup.rater).count() == 1
    assert page.get_attribute("#judge", "data-pair-id") == second["pair"]


def test_the_play_buttons_name_is_its_visible_text(page, server):
    """axe's label-content-name-mismatch: an aria-label must contain the visible text; the button
    has none, so its name is its text (Play / Pause / Loading… plus its key)."""
    setup = judging_setup(pairs=2, training=0)
    log_in(page, server, setup.rater.username, setup.password)
    page.goto(f"{server}/judge/{setup.pool.pk}/")
    next_pair(page)
    button = page.locator("[data-control=play]")
    for _ in range(2):
        label = button.get_attribute("aria-label")
        text = " ".join(button.inner_text().split())
        assert label is None or text.lower() in label.lower(), (label, text)
        page.keyboard.press("Space")
        page.wait_for_timeout(100)
