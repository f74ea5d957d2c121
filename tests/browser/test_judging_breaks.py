"""Issue 14, item 5: an untouched judging page gives its pairs back after the idle time, with a
countdown first; "Take a break" gives them back at once; resuming leases afresh."""
from __future__ import annotations

import pytest

from annotation.models import Lease
from tests.browser.conftest import log_in, snap
from tests.browser.scenarios import judging_setup
from tests.browser.test_judging import next_pair
from tests.browser.waits import WAIT_MS

pytestmark = pytest.mark.browser


@pytest.fixture
def idle_six_seconds(settings):
    settings.REJUDGE = {**settings.REJUDGE, "IDLE_RELEASE_SECONDS": 6}


def live_leases(setup) -> int:
    return Lease.objects.filter(rater=setup.rater, state=Lease.State.ACTIVE).count()


def until(page, check, tries: int = 50) -> bool:
    """The page's requests land on their own time: look again every 100 ms, for up to 5 s."""
    for _ in range(tries):
        if check():
            return True
        page.wait_for_timeout(100)
    return check()


def open_judge(page, server, setup) -> dict:
    log_in(page, server, setup.rater.username, setup.password)
    page.goto(f"{server}/judge/{setup.pool.pk}/")
    shown = next_pair(page)
    page.wait_for_function("() => document.querySelectorAll('video.clip[src]').length === 2")  # the next pair preloads
    return shown


def test_an_untouched_page_counts_down_then_gives_its_pairs_back(page, server, idle_six_seconds):
    setup = judging_setup(pairs=6, training=0)
    open_judge(page, server, setup)
    assert live_leases(setup) == 2

    # The countdown shows for the last half of the 6 s (a minute when the idle time is long).
    page.wait_for_selector("#idle-warning:not([hidden])", timeout=WAIT_MS)
    assert "go back to the pool in 0:0" in page.text_content("#idle-warning")
    snap(page, "judge-idle-countdown")
    page.wait_for_selector("#judge[data-state=break]", timeout=WAIT_MS)
    assert "Nothing was pressed" in page.text_content("#state-text")
    assert until(page, lambda: live_leases(setup) == 0)
    assert Lease.objects.filter(rater=setup.rater, state=Lease.State.RELEASED).count() == 2
    snap(page, "judge-on-a-break")

    page.click("#state-resume")
    next_pair(page)
    assert live_leases(setup) >= 1


def test_a_key_during_the_countdown_keeps_the_pairs_and_a_break_can_be_asked_for(page, server, idle_six_seconds):
    setup = judging_setup(pairs=6, training=0)
    shown = open_judge(page, server, setup)
    page.wait_for_selector("#idle-warning:not([hidden])", timeout=WAIT_MS)
    page.keyboard.press("m")  # any key counts as being there
    page.wait_for_selector("#idle-warning", state="hidden")
    page.wait_for_timeout(2500)  # past the point where the untouched page would have let go
    assert page.get_attribute("#judge", "data-state") == "working"
    assert page.get_attribute("#judge", "data-pair-id") == shown["pair"]
    assert live_leases(setup) == 2

    page.click("#break")
    page.wait_for_selector("#judge[data-state=break]")
    assert until(page, lambda: live_leases(setup) == 0)
    page.keyboard.press("1")  # no pair on screen: nothing is answered
    page.wait_for_timeout(300)
    assert not setup.rater.labels.exists()
