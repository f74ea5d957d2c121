"""Issue 14, item 3: answers wait until the clip has shown frames for its minimum; a clip that
loads slowly or stalls says so and leaves only "doesn't play" and "ambiguous"."""
from __future__ import annotations

import pytest

from annotation.models import Label
from tests.browser.conftest import log_in, snap
from tests.browser.scenarios import judging_setup, pair_of_item
from tests.browser.test_judging import next_pair
from tests.browser.waits import WAIT_MS

pytestmark = pytest.mark.browser

PAIR_ON_SCREEN = "() => { const j = document.getElementById('judge'); return j.dataset.state === 'working' && !!j.dataset.pairId; }"
# Sums how far each clip's media time moved forward (a loop back to the span's start counts from
# there) and notes the active clip's sum at the moment the page opens every answer (data-gate=all).
PLAYED_WHEN_ANSWERS_OPEN = """() => {
  const played = new Map();
  document.addEventListener('timeupdate', (event) => {
    const video = event.target;
    if (!(video instanceof HTMLVideoElement)) return;
    const seen = played.get(video) || {last: 0, sum: 0};
    const t = video.currentTime;
    seen.sum += t >= seen.last ? t - seen.last : t;
    seen.last = t;
    played.set(video, seen);
  }, true);
  const judge = document.getElementById('judge');
  window.__playedWhenOpen = null;
  new MutationObserver(() => {
    if (judge.dataset.gate !== 'all' || window.__playedWhenOpen !== null) return;
    const active = document.querySelector('video.clip.active');
    window.__playedWhenOpen = (played.get(active) || {sum: 0}).sum;
  }).observe(judge, {attributes: true, attributeFilter: ['data-gate']});
}"""
OUTBOX_SIZE = "() => Object.keys(localStorage).filter((k) => k.startsWith('rejudge.outbox.')).length"


@pytest.fixture
def min_watch(settings):
    settings.REJUDGE = {**settings.REJUDGE, "MIN_WATCH_SECONDS": 2.0}


class HeldMedia:
    """Holds every clip request until released, as a slow media server would."""

    def __init__(self, page):
        self.held, self.released = [], False
        page.route("**/media/**", self.handle)

    def handle(self, route):
        if self.released:
            route.continue_()
        else:
            self.held.append(route)

    def release(self):
        self.released = True
        for route in self.held:
            route.continue_()
        self.held.clear()


def test_keys_pressed_before_the_clip_has_played_store_nothing_and_say_why(page, server, min_watch):
    setup = judging_setup(pairs=4, training=0)
    media = HeldMedia(page)
    refusals = []
    page.on("response", lambda r: "/api/v1/labels/" in r.url and r.status == 409 and refusals.append(r.url))
    log_in(page, server, setup.rater.username, setup.password)
    page.goto(f"{server}/judge/{setup.pool.pk}/")
    page.wait_for_function(PAIR_ON_SCREEN)

    # A black stage: the loading cue shows, the Play button does not claim to be playing.
    page.wait_for_selector("#clip-loading:not([hidden])")
    assert "Loading" in page.text_content("#clip-loading")
    assert page.text_content("[data-control=play] [data-text]") != "Pause"
    assert page.get_attribute("#judge", "data-armed") == "false"
    assert page.locator("button[data-value=relevant]").is_disabled()
    # Blind answers, each one waited for until the page has said why it refused it (no fixed
    # pauses): keys go on until the gate itself refuses them ("Watch the clip first"), not only
    # the short arm delay right after the pair appeared, and at least ten are refused in all.
    pressed = 0
    while pressed < 10 or "Watch the clip first" not in page.text_content("#key-cue"):
        assert pressed < 500, page.text_content("#key-cue")
        page.evaluate("() => { document.getElementById('key-cue').textContent = ''; }")
        page.keyboard.press("12"[pressed % 2])
        page.wait_for_function("() => document.getElementById('key-cue').textContent !== ''")
        pressed += 1
    assert "Watch the clip first" in page.text_content("#key-cue")
    snap(page, "judge-waiting-for-the-clip")
    assert page.evaluate(OUTBOX_SIZE) == 0
    assert not Label.objects.exists()

    page.evaluate(PLAYED_WHEN_ANSWERS_OPEN)
    media.release()
    page.wait_for_selector("#judge[data-gate=all]")  # the full gate, not the stalled-clip one
    shown = next_pair(page)  # armed once the clip has played its 2 s
    # Media time the clip really played when the gate opened (not currentTime read now: on a busy
    # machine the 4 s clip has looped back to its start by the time the test looks).
    played = page.evaluate("() => window.__playedWhenOpen")
    assert played is not None and played > 1.0, played  # frames really advanced before the answers opened
    page.wait_for_selector("#clip-loading", state="hidden")
    page.keyboard.press("1")
    page.wait_for_selector("#save-status[data-status=saved]")
    next_pair(page, after=shown["pair"])
    label = Label.objects.get(rater=setup.rater)
    assert label.pair_id == pair_of_item(shown["pair"]) and label.value == "relevant" and label.counted
    assert refusals == []  # the page never sent a vote the server had to refuse as too soon


def test_a_clip_that_never_loads_says_so_and_takes_only_doesnt_play_or_ambiguous(page, server, min_watch):
    setup = judging_setup(pairs=3, training=0)
    HeldMedia(page)  # never released
    log_in(page, server, setup.rater.username, setup.password)
    page.goto(f"{server}/judge/{setup.pool.pk}/")
    page.wait_for_function(PAIR_ON_SCREEN)
    shown = page.get_attribute("#judge", "data-pair-id")
    page.wait_for_selector("#clip-loading[data-slow=true]", timeout=WAIT_MS)
    assert "slow to load" in page.text_content("#clip-loading")
    page.wait_for_selector("#judge[data-armed=true][data-gate=limited]")
    assert page.locator("button[data-value=relevant]").is_disabled()
    assert page.locator("button[data-value=not_relevant]").is_disabled()
    assert page.locator("button[data-value=broken]").is_enabled()
    assert page.locator("button[data-value=ambiguous]").is_enabled()
    snap(page, "judge-clip-slow")
    page.keyboard.press("2")
    assert "does not play" in page.text_content("#key-cue")
    assert page.evaluate(OUTBOX_SIZE) == 0
    page.keyboard.press("4")
    page.wait_for_selector("#save-status[data-status=saved]")
    assert Label.objects.get(rater=setup.rater).value == "broken"
    assert Label.objects.get(rater=setup.rater).pair_id == pair_of_item(shown)
