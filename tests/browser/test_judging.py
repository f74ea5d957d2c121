"""The judging screen, driven from the keyboard in a real browser."""
from __future__ import annotations

import pytest

from annotation.models import Clip, Label, PooledPair, PoolMembership
from tests.browser.conftest import assert_controls_labelled, log_in, snap
from tests.browser.scenarios import judging_setup, pair_of_item

pytestmark = pytest.mark.browser

KEYS = {"relevant": "1", "not_relevant": "2", "ambiguous": "3", "broken": "4"}


def open_judge(page, server, setup) -> None:
    log_in(page, server, setup.rater.username, setup.password)
    page.goto(f"{server}/judge/{setup.pool.pk}/")


def next_pair(page, after: str | None = None) -> dict:
    """Waits until a pair other than `after` is on screen and takes answers; returns what it shows."""
    page.wait_for_function(
        """(after) => { const j = document.getElementById('judge');
             return j.dataset.state === 'working' && j.dataset.armed === 'true' && j.dataset.pairId !== after; }""",
        arg=after)
    return page.evaluate("""() => { const j = document.getElementById('judge');
        const caption = document.getElementById('caption').textContent;
        return {pair: j.dataset.pairId, mode: j.dataset.mode, caption}; }""")


def test_rater_passes_training_then_judges_twenty_pairs_from_the_keyboard(page, server):
    setup = judging_setup(pairs=24, training=2)
    log_in(page, server, setup.rater.username, setup.password)
    snap(page, "rater-home")
    page.goto(f"{server}/judge/{setup.pool.pk}/")

    shown = None
    for number in range(2):
        shown = next_pair(page, after=shown and shown["pair"])
        assert shown["mode"] == "training"
        if number == 0:
            snap(page, "judge-training-pair")
        answer = setup.training_answers[shown["caption"]]
        page.keyboard.press(KEYS[answer])
        page.wait_for_selector("#feedback[data-result=correct]")
        assert "right answer is" in page.text_content("#feedback-answer")
        assert page.text_content("#feedback-explanation").strip()
        if number == 0:
            snap(page, "judge-training-feedback")
        page.wait_for_function("() => document.getElementById('judge').dataset.armed === 'true'")
        page.keyboard.press("Enter")

    expected = {}
    pattern = ["relevant", "not_relevant", "relevant", "ambiguous", "not_relevant", "broken", "relevant"]
    for i in range(20):
        shown = next_pair(page, after=shown["pair"])
        assert shown["mode"] == "production"
        value = pattern[i % len(pattern)]
        if i == 0:
            page.wait_for_selector("#training-banner", state="hidden")
            snap(page, "judge-production-pair")
            assert_controls_labelled(page)
        if value == "ambiguous":
            page.keyboard.press("3")
            page.wait_for_selector("#comment", state="visible")
            page.keyboard.type("two shapes or one?")
            if i == 3:
                snap(page, "judge-ambiguous-comment")
            page.keyboard.press("Enter")
        elif i == 4:
            # A double press answers this pair once and never the pair that replaces it.
            page.keyboard.press(KEYS[value])
            page.keyboard.press(KEYS[value])
        else:
            page.keyboard.press(KEYS[value])
        expected[pair_of_item(shown["pair"])] = value

    page.wait_for_selector("#save-status[data-status=saved]")
    next_pair(page, after=shown["pair"])  # the 21st pair is showing, unanswered
    snap(page, "judge-after-twenty")

    labels = Label.objects.filter(rater=setup.rater, pair__role=PooledPair.Role.POOL)
    assert {label.pair_id: label.value for label in labels} == expected
    assert labels.count() == 20
    assert set(labels.filter(value="ambiguous").values_list("comment", flat=True)) == {"two shapes or one?"}
    assert all(label.seconds is not None and label.seconds >= 0 for label in labels)
    membership = PoolMembership.objects.get(pool=setup.pool, rater=setup.rater)
    assert membership.training == "passed" and membership.training_score == 1.0


def test_guidelines_one_key_away_and_a_clip_that_does_not_play(page, server):
    setup = judging_setup(pairs=2, training=0)
    Clip.objects.filter(dataset=setup.pool.dataset).update(media="browser/missing.mp4")
    open_judge(page, server, setup)
    shown = next_pair(page)
    page.keyboard.press("Tab")  # the keyboard focus is visible wherever it lands
    assert page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle") != "none"
    page.keyboard.press("Escape")
    page.keyboard.press("g")
    page.wait_for_selector("#guidelines[open]")
    assert "every element" in page.text_content("#guidelines")
    snap(page, "judge-guidelines")
    page.keyboard.press("Escape")
    page.wait_for_selector("#guidelines", state="hidden")

    page.wait_for_selector("#clip-error:not([hidden])")
    snap(page, "judge-clip-broken")
    page.keyboard.press("4")
    next_pair(page, after=shown["pair"])
    page.wait_for_selector("#save-status[data-status=saved]")
    assert Label.objects.get(rater=setup.rater, pair_id=pair_of_item(shown["pair"])).value == "broken"


def test_no_work_left_and_paused_are_shown_plainly(page, server):
    setup = judging_setup(pairs=1, training=0)
    open_judge(page, server, setup)
    shown = next_pair(page)
    page.keyboard.press("2")
    page.wait_for_selector("#judge[data-state=no_work_left]")
    assert "No work left" in page.text_content("#state-title")
    page.wait_for_selector("#save-status[data-status=saved]")
    page.wait_for_function("() => document.getElementById('today').textContent === '1'"
                           " && document.getElementById('left').textContent === '0'")
    assert page.locator("#pool-progress").evaluate("p => p.value") == 1
    snap(page, "judge-no-work-left")
    assert Label.objects.get(rater=setup.rater).pair_id == pair_of_item(shown["pair"])

    from annotation.services.accounts.raters import rater_set_paused

    rater_set_paused(user=setup.rater, paused=True)
    page.click("#state-retry")
    page.wait_for_selector("#judge[data-state=paused]")
    snap(page, "judge-paused")
