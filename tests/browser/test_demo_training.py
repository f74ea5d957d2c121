"""Issue 14 item 1: on the demo, a rater who answers truthfully is told they are right every time."""
from __future__ import annotations

import pytest

from annotation.models import PooledPair, PoolMembership
from annotation.demo.load import demo_load
from tests.annotation.demo_truth import true_answer
from tests.browser.conftest import log_in, snap
from tests.browser.scenarios import pair_of_item
from tests.browser.test_judging import KEYS, next_pair

pytestmark = pytest.mark.browser


def test_truthful_rater_is_right_on_every_demo_training_pair(page, server):
    pool = demo_load()["pool"]
    log_in(page, server, "rater1", "rejudge-rater")
    page.goto(f"{server}/judge/{pool.pk}/")
    shown, results = None, []
    for _ in range(PooledPair.objects.filter(pool=pool, role="training").count()):
        shown = next_pair(page, after=shown and shown["pair"])
        assert shown["mode"] == "training"
        clip = PooledPair.objects.select_related("clip").get(pk=pair_of_item(shown["pair"])).clip.external_id
        # The truth is read from the caption on screen and the scene the clip shows, never the stored answer.
        page.keyboard.press(KEYS[true_answer(shown["caption"].strip(), clip)])
        page.wait_for_selector("#feedback[data-result=correct], #feedback[data-result=wrong]")
        results.append((shown["caption"].strip(), clip, page.get_attribute("#feedback", "data-result")))
        page.wait_for_function("() => document.getElementById('judge').dataset.armed === 'true'")
        page.keyboard.press("Enter")
    snap(page, "demo-training-done")
    assert [r for r in results if r[2] != "correct"] == []
    next_pair(page, after=shown["pair"])
    membership = PoolMembership.objects.get(pool=pool, rater__username="rater1")
    assert (membership.training, membership.training_score) == ("passed", 1.0)
