"""The ranking screen: five captions ordered by drag and drop, and from the keyboard alone."""
from __future__ import annotations

import pytest

from annotation.models import RankingSubmission
from annotation.services.queue.leases import item_id_for
from tests.browser.conftest import assert_controls_labelled, log_in, snap
from tests.browser.scenarios import ranking_setup

pytestmark = pytest.mark.browser


def next_task(page, after: str | None = None) -> tuple[str, list[int]]:
    page.wait_for_function(
        """(after) => { const r = document.getElementById('rank');
             return r.dataset.state === 'working' && r.dataset.armed === 'true' && r.dataset.taskId !== after; }""",
        arg=after)
    return page.get_attribute("#rank", "data-task-id"), shown_order(page)


def shown_order(page) -> list[int]:
    return [int(i) for i in page.get_attribute("#rank", "data-order").split(",")]


def item(page, caption_id: int):
    return page.locator(f"#ranking > li[data-caption-id='{caption_id}']")


def test_a_task_ordered_by_drag_and_one_by_keyboard(page, server):
    setup = ranking_setup(tasks=3)
    log_in(page, server, setup.rater.username, setup.password)
    page.wait_for_selector("#ranking-studies:not([hidden]) a[href='/rank/%d/']" % setup.study.pk)
    snap(page, "rater-home-with-study")
    page.goto(f"{server}/rank/{setup.study.pk}/")

    task, order = next_task(page)
    assert len(order) == 5
    snap(page, "rank-task")
    assert_controls_labelled(page)
    assert page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle") != "none"  # the first caption
    wanted = list(reversed(order))
    for place, caption in enumerate(wanted):  # drag each caption onto the one at its place
        if shown_order(page)[place] != caption:
            target = item(page, shown_order(page)[place])
            item(page, caption).drag_to(target, target_position={"x": 40, "y": 4})
    assert shown_order(page) == wanted
    snap(page, "rank-task-dragged")
    page.click("#submit-order")
    submitted = {task: wanted}

    task, order = next_task(page, after=task)
    # Keyboard only: the first caption has the focus.
    for _ in range(4):
        page.keyboard.press("ArrowDown")  # select the last caption...
    page.keyboard.press("1")  # ...and put it first
    expected = [order[4], *order[:4]]
    assert shown_order(page) == expected
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")  # select place 3
    page.keyboard.press("Shift+ArrowDown")  # and move it down one
    expected[2], expected[3] = expected[3], expected[2]
    assert shown_order(page) == expected
    page.keyboard.press("Shift+ArrowUp")
    page.keyboard.press("Shift+ArrowDown")  # up and back: no change
    assert shown_order(page) == expected
    page.keyboard.press("Enter")
    page.keyboard.press("Enter")  # a second press does not submit the next task
    submitted[task] = expected

    next_task(page, after=task)
    page.wait_for_selector("#save-status[data-status=saved]")
    stored = {item_id_for("ranking-task", s.task_id): s.order for s in RankingSubmission.objects.filter(rater=setup.rater)}
    assert stored == submitted
