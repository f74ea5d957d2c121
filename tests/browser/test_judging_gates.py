"""Issue 14, item 3: answers wait until the clip has shown frames for its minimum; a clip that
loads slowly or stalls says so and leaves only "doesn't play" and "ambiguous"."""
from __future__ import annotations

import pytest

from annotation.models import Label
from tests.browser.conftest import log_in, snap
from tests.browser.scenarios import judging_setup, pair_of_item
from tests.browser.test_judging import next_pair

pytestmark = pytest.mark.browser

PAIR_ON_SCREEN = "() => { const j = document.getElementById('judge'); return j.dataset.state === 'working' && !!j.dataset.pairId; }"
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
    page.wait_for_timeout(300)
    for key in "1212121212":  # blind answers, 260 ms apart
        page.keyboard.press(key)
        page.wait_for_timeout(260)
    assert "Watch the clip first" in page.text_content("#key-cue")
    snap(page, "judge-waiting-for-the-clip")
    assert page.evaluate(OUTBOX_SIZE) == 0
    assert not Label.objects.exists()

    media.release()
    shown = next_pair(page)  # armed once the clip has played its 2 s
    watched = page.evaluate("() => document.querySelector('video.clip.active').currentTime")
    assert watched > 1.0  # frames really advanced before the answers opened
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
    page.wait_for_selector("#clip-loading[data-slow=true]", timeout=10000)
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
