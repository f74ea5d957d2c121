"""Undo on the judging screen (issue 14 item 2): Backspace (or Z, or the Undo button) takes back the
last answer, the rater answers that pair anew, and the server holds exactly one label with the
second answer and one LabelChange; "My recent answers" lists answers with a change control."""
from __future__ import annotations

import pytest

from annotation.models import Label, LabelChange
from tests.browser.conftest import snap
from tests.browser.scenarios import judging_setup, pair_of_item
from tests.browser.test_judging import next_pair, open_judge

pytestmark = pytest.mark.browser


def wait_saved(page) -> None:
    page.wait_for_selector("#save-status[data-status=saved]")


def test_backspace_takes_back_the_last_answer_and_the_new_one_replaces_it(page, server):
    setup = judging_setup(pairs=4, training=0)
    open_judge(page, server, setup)
    first = next_pair(page)
    page.keyboard.press("1")
    next_pair(page, after=first["pair"])
    wait_saved(page)
    page.keyboard.press("Backspace")
    page.wait_for_selector("#undo-panel:not([hidden])")
    assert first["caption"] in page.text_content("#undo-caption")
    page.keyboard.press("2")  # the pair answered anew
    page.wait_for_selector("#undo-panel[data-result=changed]")
    pair = pair_of_item(first["pair"])
    labels = list(Label.objects.filter(pair_id=pair).values_list("value", flat=True))
    assert labels == ["not_relevant"]
    assert list(LabelChange.objects.values_list("old_value", "new_value")) == [("relevant", "not_relevant")]
    page.keyboard.press("Escape")
    page.wait_for_selector("#undo-panel", state="hidden")


def test_undo_button_and_z_work_and_recent_answers_panel_changes_an_answer(page, server):
    setup = judging_setup(pairs=4, training=0)
    open_judge(page, server, setup)
    first = next_pair(page)
    page.keyboard.press("2")
    second = next_pair(page, after=first["pair"])
    page.keyboard.press("1")
    next_pair(page, after=second["pair"])
    wait_saved(page)
    page.click("#undo")
    page.wait_for_selector("#undo-panel:not([hidden])")
    assert second["caption"] in page.text_content("#undo-caption")
    page.keyboard.press("Escape")
    page.keyboard.press("z")
    page.wait_for_selector("#undo-panel:not([hidden])")
    page.keyboard.press("Escape")
    # The panel lists both answers, newest first; change the older one from the keyboard.
    page.click("#recent-open")
    page.wait_for_selector("#recent li[data-can-change=true] >> nth=1")
    rows = page.locator("#recent li")
    assert rows.count() == 2
    assert first["caption"] in rows.nth(1).text_content()
    rows.nth(1).locator("button[data-undo-value=relevant]").focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("#recent li >> nth=1 >> [data-undo-value=relevant][aria-pressed=true]")
    assert Label.objects.get(pair_id=pair_of_item(first["pair"])).value == "relevant"
    assert Label.objects.get(pair_id=pair_of_item(second["pair"])).value == "relevant"
    assert LabelChange.objects.count() == 1


KEYS = {"relevant": "1", "not_relevant": "2", "ambiguous": "3", "broken": "4"}
ACTIVE_SRC = "() => document.querySelector('#stage video.active').currentSrc"


def give(page, value: str, *, comment_field: str) -> None:
    """Answers as a rater would from the keyboard; an ambiguous answer takes a comment first."""
    page.keyboard.press(KEYS[value])
    if value == "ambiguous":
        page.wait_for_selector(f"{comment_field}:focus")
        page.keyboard.type("cannot tell how many there are")
        page.keyboard.press("Enter")


def undo_shows_the_clip(page, src: str) -> None:
    """The panel plays the clip the answer was about, and the pair on screen waits underneath."""
    page.wait_for_selector("#undo-video", state="visible")
    page.wait_for_function("(src) => { const v = document.getElementById('undo-video');"
                           " return v.currentSrc === src && v.currentTime > 0 && !v.paused; }", arg=src)
    assert page.evaluate("() => document.querySelector('#stage video.active').paused")


@pytest.mark.parametrize("first, second", [("ambiguous", "relevant"), ("broken", "not_relevant"),
                                           ("relevant", "ambiguous"), ("not_relevant", "broken")])
def test_every_answer_kind_can_be_taken_back_with_its_clip_in_view(page, server, first, second):
    setup = judging_setup(pairs=4, training=0)
    open_judge(page, server, setup)
    shown = next_pair(page)
    src = page.evaluate(ACTIVE_SRC)
    give(page, first, comment_field="#comment")
    next_pair(page, after=shown["pair"])
    wait_saved(page)
    page.keyboard.press("z")
    page.wait_for_selector("#undo-panel:not([hidden])")
    assert shown["caption"] in page.text_content("#undo-caption")
    undo_shows_the_clip(page, src)
    snap(page, f"undo-{first}-to-{second}")
    give(page, second, comment_field="#undo-comment")
    page.wait_for_selector("#undo-panel[data-result=changed]")
    label = Label.objects.get(pair_id=pair_of_item(shown["pair"]))
    assert label.value == second
    assert list(LabelChange.objects.values_list("old_value", "new_value")) == [(first, second)]
    if second == "ambiguous":
        assert label.comment == "cannot tell how many there are"
    page.keyboard.press("Escape")
    page.wait_for_selector("#undo-panel", state="hidden")
    page.wait_for_function("() => !document.querySelector('#stage video.active').paused")


def test_undo_after_a_reload_takes_back_the_last_answer_the_server_has(page, server):
    setup = judging_setup(pairs=4, training=0)
    open_judge(page, server, setup)
    shown = next_pair(page)
    src = page.evaluate(ACTIVE_SRC)
    page.keyboard.press("4")
    next_pair(page, after=shown["pair"])
    wait_saved(page)
    page.reload()
    current = next_pair(page)
    assert current["pair"] != shown["pair"]
    page.keyboard.press("z")
    page.wait_for_selector("#undo-panel:not([hidden])")
    assert shown["caption"] in page.text_content("#undo-caption")
    assert "Clip doesn't play" in page.text_content("#undo-was")
    undo_shows_the_clip(page, src)
    # Space pauses the clip in the panel, not the pair waiting underneath (which stays paused).
    page.keyboard.press(" ")
    page.wait_for_function("() => document.getElementById('undo-video').paused")
    assert page.evaluate("() => document.querySelector('#stage video.active').paused")
    page.keyboard.press("1")
    page.wait_for_selector("#undo-panel[data-result=changed]")
    assert Label.objects.get(pair_id=pair_of_item(shown["pair"])).value == "relevant"
