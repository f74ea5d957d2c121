"""A clip with a span plays, loops and seeks only inside the span (a real H.264 clip)."""
from __future__ import annotations

import pytest

from tests.browser.conftest import log_in, snap
from tests.browser.scenarios import judging_setup
from tests.browser.test_judging import next_pair

pytestmark = pytest.mark.browser

START, END = 1.5, 3.0
SLACK = 0.1  # one frame at 15 fps, plus the time a seek takes to land

SAMPLE = """(ms) => new Promise((done) => {
  const video = document.querySelector('video.clip.active'), times = [], until = performance.now() + ms;
  const tick = () => {
    times.push(video.currentTime);
    if (performance.now() < until) requestAnimationFrame(tick); else done(times);
  };
  requestAnimationFrame(tick);
})"""


def current_time(page) -> float:
    return page.evaluate("() => document.querySelector('video.clip.active').currentTime")


def test_playback_and_seeking_stay_inside_the_span(page, server):
    setup = judging_setup(pairs=2, training=0, span=(START, END), clip_seconds=6.0)
    ranges = []
    page.on("response", lambda r: "/media/" in r.url and ranges.append(r.status))
    log_in(page, server, setup.rater.username, setup.password)
    page.goto(f"{server}/judge/{setup.pool.pk}/")
    next_pair(page)
    assert page.evaluate("() => document.querySelector('video.clip.active').src").endswith(f"#t={START:g},{END:g}")
    page.wait_for_function("() => document.querySelector('video.clip.active').currentTime > 0")

    times = page.evaluate(SAMPLE, 3800)  # the 1.5 s span plays more than twice
    assert min(times) >= START - SLACK and max(times) <= END + SLACK
    loops = sum(1 for before, after in zip(times, times[1:]) if after < before - 0.5)
    assert loops >= 2, "playback did not loop back to the span's start"
    assert 206 in ranges, "the clip was not fetched with Range requests"

    page.keyboard.press("Space")  # pause, then seek from the keyboard
    page.wait_for_function("() => document.querySelector('video.clip.active').paused")
    for _ in range(4):
        page.keyboard.press("ArrowRight")
    page.wait_for_function(f"() => Math.abs(document.querySelector('video.clip.active').currentTime - {END}) < 0.2")
    assert current_time(page) <= END
    for _ in range(4):
        page.keyboard.press("ArrowLeft")
    page.wait_for_function(f"() => Math.abs(document.querySelector('video.clip.active').currentTime - {START}) < 0.05")

    scrubber = page.locator("[data-control=scrubber]")
    scrubber.focus()
    page.keyboard.press("End")  # the scrubber's own keys: its range is the span
    page.wait_for_function(f"() => document.querySelector('video.clip.active').currentTime > {END} - 0.2")
    assert current_time(page) <= END
    snap(page, "judge-span-seek")

    # A seek from outside (a browser control, a script) is pulled back into the span.
    page.evaluate("() => { document.querySelector('video.clip.active').currentTime = 5.5; }")
    page.wait_for_function(f"() => {{ const v = document.querySelector('video.clip.active');"
                           f" return !v.seeking && v.currentTime <= {END}; }}")
    assert START - SLACK <= current_time(page) <= END

    page.keyboard.press("Space")  # playing again, it loops inside the span
    times = page.evaluate(SAMPLE, 2000)
    assert min(times) >= START - SLACK and max(times) <= END + SLACK


def test_speed_keys_and_replay(page, server):
    setup = judging_setup(pairs=2, training=0, span=(START, END), clip_seconds=6.0)
    log_in(page, server, setup.rater.username, setup.password)
    page.goto(f"{server}/judge/{setup.pool.pk}/")
    next_pair(page)
    rate = "() => document.querySelector('video.clip.active').playbackRate"
    for _ in range(5):
        page.keyboard.press("[")
    assert page.evaluate(rate) == 0.5
    for _ in range(8):
        page.keyboard.press("]")
    assert page.evaluate(rate) == 2
    assert page.locator("[data-control=speed]").input_value() == "2"
    page.keyboard.press("r")
    assert page.evaluate("() => document.querySelector('video.clip.active').currentTime") < START + 0.3
