"""Issue 14, item 4: two tabs on one pool never silently lose work. One tab judges; the other says
so and can take over; an answer the server refuses (409) is never shown as saved."""
from __future__ import annotations

import json

import pytest

from annotation.models import Label
from tests.browser.conftest import log_in, snap
from tests.browser.scenarios import judging_setup, pair_of_item
from tests.browser.test_judging import next_pair

pytestmark = pytest.mark.browser


def test_a_second_tab_is_told_another_tab_judges_and_can_take_over(context, server):
    setup = judging_setup(pairs=8, training=0)
    a = context.new_page()
    log_in(a, server, setup.rater.username, setup.password)
    a.goto(f"{server}/judge/{setup.pool.pk}/")
    first = next_pair(a)

    b = context.new_page()
    b.goto(f"{server}/judge/{setup.pool.pk}/")
    b.wait_for_selector("#judge[data-state=other_tab]")
    assert "open in another tab" in b.text_content("#state-title")
    assert b.is_visible("#state-take") and b.is_hidden("#work")
    snap(b, "judge-second-tab")

    a.keyboard.press("1")  # tab A goes on as before
    second = next_pair(a, after=first["pair"])
    a.wait_for_selector("#save-status[data-status=saved]")

    b.click("#state-take")
    a.wait_for_selector("#judge[data-state=moved_away]")
    assert a.is_hidden("#work")
    shown_b = next_pair(b)
    assert shown_b["pair"] != first["pair"]  # the answered pair is never shown again
    b.keyboard.press("2")
    b.wait_for_selector("#save-status[data-status=saved]")
    a.keyboard.press("1")  # A has stopped: its keys answer nothing
    b.wait_for_timeout(300)

    labels = dict(Label.objects.filter(rater=setup.rater).values_list("pair_id", "value"))
    assert labels == {pair_of_item(first["pair"]): "relevant", pair_of_item(shown_b["pair"]): "not_relevant"}
    assert b.evaluate("() => document.querySelectorAll('#save-status .refused').length") == 0
    # B resumed the pair A held next, rather than leaving it held by a tab that stopped.
    assert shown_b["pair"] == second["pair"]

    a.close()
    b.close()


def test_an_answer_refused_with_409_is_not_shown_as_saved(page, server):
    setup = judging_setup(pairs=4, training=0)

    def conflict(route):
        route.fulfill(status=409, content_type="application/json",
                      body=json.dumps({"detail": "you have already labelled this pair", "code": "conflict"}))

    page.route("**/api/v1/labels/", conflict)
    log_in(page, server, setup.rater.username, setup.password)
    page.goto(f"{server}/judge/{setup.pool.pk}/")
    shown = next_pair(page)
    page.keyboard.press("1")
    next_pair(page, after=shown["pair"])
    page.wait_for_selector("#save-status .refused")
    # Never "saved" of a refused answer (issue 22, finding 14: it said "All answers saved · ...").
    status = page.locator("#save-status")
    assert status.get_attribute("data-status") == "refused"
    assert status.text_content() == "Not all answers saved · 1 answer refused by the server"
    page.wait_for_selector("#notice:not([hidden])")
    assert "not stored" in page.text_content("#notice") and "already labelled" in page.text_content("#notice")
    snap(page, "judge-answer-refused")
