"""The ranking screen, round two (issue 14 item 6): Enter on an untouched order asks first, the
rater sees how many orderings they have made (this session and in all), and "none of these fits"
gives the task back instead of forcing an ordering."""
from __future__ import annotations

import pytest

from annotation.models import RankingLease, RankingSubmission
from annotation.services.queue.leases import item_id_for
from tests.browser.conftest import assert_controls_labelled, log_in, snap
from tests.browser.scenarios import ranking_setup
from tests.browser.test_a11y_layout import AXE, AXE_RUN
from tests.browser.test_ranking import next_task, shown_order

pytestmark = pytest.mark.browser


def stored(setup) -> dict[str, list[int]]:
    return {item_id_for("ranking-task", s.task_id): s.order for s in RankingSubmission.objects.filter(rater=setup.rater)}


def open_study(page, server, setup) -> None:
    log_in(page, server, setup.rater.username, setup.password)
    page.goto(f"{server}/rank/{setup.study.pk}/")


def test_enter_on_an_untouched_order_asks_first(page, server):
    setup = ranking_setup(tasks=3)
    open_study(page, server, setup)
    task, order = next_task(page)

    page.keyboard.press("Enter")  # a stray Enter: nothing is sent, the rater is asked
    confirm = page.locator("#confirm-untouched")
    confirm.wait_for(state="visible")
    assert "Submit this order as it is?" in confirm.inner_text()
    assert page.evaluate("() => document.activeElement.id") == "confirm-submit"  # reachable at once
    assert_controls_labelled(page)
    snap(page, "rank-confirm-untouched")
    page.evaluate(AXE.read_text())
    for scheme in ("light", "dark"):  # the question box as well as the page passes axe in both schemes
        page.emulate_media(color_scheme=scheme)
        assert page.evaluate(AXE_RUN) == []
    assert page.get_attribute("#rank", "data-task-id") == task

    page.keyboard.press("Escape")  # cancel: still the same task, focus back on the captions
    confirm.wait_for(state="hidden")
    assert page.get_attribute("#rank", "data-task-id") == task
    assert page.evaluate("() => document.activeElement.closest('#ranking') !== null")
    assert stored(setup) == {}

    page.keyboard.press("Enter")
    confirm.wait_for(state="visible")
    page.keyboard.press("Enter")  # the second Enter confirms
    task2, order2 = next_task(page, after=task)
    assert confirm.is_hidden()

    page.keyboard.press("2")  # touched: the first caption goes to place 2...
    expected = [order2[1], order2[0], *order2[2:]]
    assert shown_order(page) == expected
    page.keyboard.press("Enter")  # ...and Enter submits at once, as before
    next_task(page, after=task2)
    assert confirm.is_hidden()
    page.wait_for_selector("#save-status[data-status=saved]")
    assert stored(setup) == {task: order, task2: expected}


def test_orderings_counted_this_session_and_in_all(page, server):
    setup = ranking_setup(tasks=3)
    open_study(page, server, setup)
    task, _ = next_task(page)
    page.wait_for_function("() => document.getElementById('total').textContent === '0'")
    assert page.inner_text("#left") == "3"
    for _ in range(2):
        page.keyboard.press("2")
        page.keyboard.press("Enter")
        task, _ = next_task(page, after=task)
    # Counted once the server has acknowledged them: 2 this session, 2 in all, 3 - 2 = 1 left.
    page.wait_for_function("() => document.getElementById('done').textContent === '2'")
    page.wait_for_function("() => document.getElementById('total').textContent === '2'")
    page.wait_for_function("() => document.getElementById('left').textContent === '1'")
    assert "Ordered this session 2" in page.inner_text(".progress-box")
    snap(page, "rank-counts")

    page.reload()  # a new page session starts from 0; the total comes from the server
    next_task(page)
    page.wait_for_function("() => document.getElementById('total').textContent === '2'")
    assert page.inner_text("#done") == "0"


def test_none_fits_gives_the_task_back(page, server):
    setup = ranking_setup(tasks=3)
    open_study(page, server, setup)
    skipped, _ = next_task(page)
    button = page.locator("#none-fits")
    assert button.is_visible() and button.get_attribute("aria-keyshortcuts") == "N"

    page.keyboard.press("n")  # none of these five fits this clip
    task, _ = next_task(page, after=skipped)
    page.wait_for_function("() => document.getElementById('announce').textContent.includes('none of these fits')")
    [lease] = [lease for lease in RankingLease.objects.filter(rater=setup.rater)
               if item_id_for("ranking-task", lease.task_id) == skipped]
    for _ in range(50):  # the release is on its way
        lease.refresh_from_db()
        if lease.state == "released":
            break
        page.wait_for_timeout(100)
    assert lease.state == "released"

    # The other two get ordered; the skipped task is not handed back to this rater.
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    task, _ = next_task(page, after=task)
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    page.wait_for_selector("#rank[data-state=no_work_left]")
    page.wait_for_selector("#save-status[data-status=saved]")
    assert skipped not in stored(setup) and len(stored(setup)) == 2
