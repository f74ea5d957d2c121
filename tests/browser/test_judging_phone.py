"""Issue 24, finding 1: judging on a phone. At 390x844 and 360x740, light and dark, for a pool
rater and for a crowd worker (who comes on a phone), the clip, the caption and the four answers
are on screen without scrolling, and in training so are the verdict (✓/✗) and its explanation;
an answer by touch works as well as one by key; and nothing moves when the next clip comes."""
from __future__ import annotations

import pytest

from annotation.models import Label
from annotation.services.crowd.studies import study_save
from tests.browser.conftest import log_in, snap
from tests.browser.scenarios import judging_setup
from tests.browser.test_judging import KEYS, next_pair
from tests.browser.waits import WAIT_MS

pytestmark = pytest.mark.browser

PHONES = [{"width": 390, "height": 844}, {"width": 360, "height": 740}]
ANSWERS = [f"#answers [data-value={value}]" for value in KEYS]
WORK = ["#stage", "#caption", *ANSWERS]
FEEDBACK = ["#stage", "#caption", "#feedback-title", "#feedback-explanation", "#feedback-continue"]

# [selector, top, bottom] of each element that is not wholly inside the window, and the scroll.
OUTSIDE = """(selectors) => ({
  scrolled: window.scrollY,
  outside: selectors.map((s) => [s, document.querySelector(s)])
    .map(([s, el]) => [s, el ? el.getBoundingClientRect() : null])
    .filter(([s, r]) => !r || r.height === 0 || r.top < 0 || r.left < 0 || r.bottom > window.innerHeight || r.right > window.innerWidth)
    .map(([s, r]) => [s, r && Math.round(r.top), r && Math.round(r.bottom)]),
})"""
BOXES = """(selectors) => selectors.map((s) => { const r = document.querySelector(s).getBoundingClientRect();
  return [s, Math.round(r.left * 10) / 10, Math.round(r.top * 10) / 10, Math.round(r.width * 10) / 10, Math.round(r.height * 10) / 10]; })"""
# Layout-shift entries (the browser's own measure of content moving without the user asking),
# collected from the start; each with the elements that moved.
SHIFTS = """() => { window.__shifts = [];
  new PerformanceObserver((list) => { for (const entry of list.getEntries()) window.__shifts.push({value: entry.value,
    at: entry.startTime, nodes: entry.sources.map((s) => s.node && (s.node.id || s.node.className || s.node.nodeName))}); })
  .observe({type: 'layout-shift', buffered: true}); }"""


def phone(browser, viewport):
    context = browser.new_context(viewport=viewport, has_touch=True, device_scale_factor=1)
    context.set_default_timeout(WAIT_MS)
    context.add_init_script(f"({SHIFTS})()")
    return context, context.new_page()


def assert_in_view(page, selectors, label) -> None:
    """In both colour schemes (dark mode restyles borders and backgrounds, not sizes, but check)."""
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        found = page.evaluate(OUTSIDE, selectors)
        if found["outside"] or found["scrolled"]:
            snap(page, f"phone-outside-{label}-{scheme}")
        assert found == {"scrolled": 0, "outside": []}, f"{label} {scheme}"


def snap_both(page, name) -> None:
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        snap(page, f"{name}-{scheme}")


def judge_on_a_phone(page, setup, label) -> None:
    """One training pair (answered by key, its feedback in view), then two pool pairs, the first
    answered by touch: every control in view, and the second pair's boxes where the first's were."""
    shown = next_pair(page)
    assert shown["mode"] == "training"
    page.wait_for_function("() => { const v = document.querySelector('#stage video.active');"
                           " return v.readyState >= 2 && v.currentTime > 0; }")
    assert_in_view(page, WORK, f"{label}-training")
    page.keyboard.press(KEYS[setup.training_answers[shown["caption"]]])
    page.wait_for_selector("#feedback[data-result=correct]")
    page.wait_for_function("() => document.getElementById('judge').dataset.armed === 'true'")
    assert page.text_content("#feedback-title").startswith("✓")
    assert_in_view(page, FEEDBACK, f"{label}-feedback")
    snap_both(page, f"phone-{label}-feedback")
    page.tap("#feedback-continue")
    first = next_pair(page, after=shown["pair"])
    assert first["mode"] == "production"
    assert_in_view(page, WORK, f"{label}-pair")
    before = page.evaluate(BOXES, WORK)
    page.evaluate("() => { window.__shiftsBefore = window.__shifts.length; }")
    page.tap("#answers [data-value=not_relevant]")  # touch, as on a phone
    second = next_pair(page, after=first["pair"])
    # The next clip has shown its first frame: the layout is as it will stay.
    page.wait_for_function("() => document.querySelector('#stage video.active').readyState >= 2")
    assert page.evaluate(BOXES, WORK) == before
    moved = page.evaluate("() => window.__shifts.slice(window.__shiftsBefore)")
    assert sum(entry["value"] for entry in moved) < 0.001, moved
    assert_in_view(page, WORK, f"{label}-next")
    snap_both(page, f"phone-{label}-pair")
    page.keyboard.press("2")
    next_pair(page, after=second["pair"])


@pytest.mark.parametrize("viewport", PHONES, ids=["390x844", "360x740"])
def test_a_rater_judges_on_a_phone_without_scrolling(browser, server, viewport):
    setup = judging_setup(pairs=6, training=1, pool_name="A pool with quite a long name for a phone")
    context, page = phone(browser, viewport)
    try:
        log_in(page, server, setup.rater.username, setup.password)
        page.goto(f"{server}/judge/{setup.pool.pk}/")
        judge_on_a_phone(page, setup, f"rater-{viewport['width']}")
    finally:
        context.close()
    assert Label.objects.filter(rater=setup.rater).exclude(pair__role="training").count() == 2


@pytest.mark.parametrize("viewport", PHONES, ids=["390x844", "360x740"])
def test_a_crowd_worker_judges_on_a_phone_without_scrolling(browser, server, viewport):
    setup = judging_setup(pairs=6, training=1, pool_name="Crowd phone pool")
    study = study_save(pool=setup.pool, platform="prolific", title="Does this caption describe the clip?",
                       completion_code="PHONE1", quota_pairs=5, consent_text="You agree.", training_required=True)
    context, page = phone(browser, viewport)
    try:
        page.goto(f"{server}/study/{study.token}/?PROLIFIC_PID=80a1b2c3d4e5f60718293a4b&STUDY_ID=st&SESSION_ID=se")
        page.tap("#consent-agree")
        page.tap("#guidelines-start")
        page.wait_for_selector("#crowd-bar")
        judge_on_a_phone(page, setup, f"crowd-{viewport['width']}")
    finally:
        context.close()
