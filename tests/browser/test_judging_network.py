"""No answer is lost: a cut connection, a lost response, a closed tab, an expired lease."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Label, Lease
from annotation.services.queue.leases import leases_expire
from tests.browser.conftest import log_in, snap
from tests.browser.scenarios import judging_setup, pair_of_item
from tests.browser.test_judging import next_pair

pytestmark = pytest.mark.browser


def labels_of(setup) -> dict[int, str]:
    return dict(Label.objects.filter(rater=setup.rater).values_list("pair_id", "value"))


def answer(page, key: str, after: str | None) -> int:
    shown = next_pair(page, after=after)
    page.keyboard.press(key)
    return pair_of_item(shown["pair"])


def test_labels_wait_offline_with_a_visible_status_and_land_once_when_the_network_returns(page, context, server):
    setup = judging_setup(pairs=10, training=0)
    log_in(page, server, setup.rater.username, setup.password)
    page.goto(f"{server}/judge/{setup.pool.pk}/")
    expected = {}
    pair = None
    for key, value in (("1", "relevant"), ("2", "not_relevant")):
        # Each answer makes the page lease the pair after next; wait for that, and for its clip,
        # so that cutting the network below leaves a preloaded pair to show.
        with page.expect_response(lambda response: "/next/" in response.url):
            pair = answer(page, key, after=pair and str(pair))
        expected[pair] = value
    page.wait_for_selector("#save-status[data-status=saved]")
    page.wait_for_load_state("networkidle")

    context.set_offline(True)
    offline = {}
    pair = answer(page, "2", after=str(pair))  # the preloaded pair takes its place at once
    offline[pair] = "not_relevant"
    page.wait_for_selector("#save-status[data-status=offline]")
    pair = answer(page, "1", after=str(pair))
    offline[pair] = "relevant"
    page.wait_for_selector("#judge[data-state=offline]")
    status = page.locator("#save-status")
    assert status.get_attribute("data-pending") == "2"
    assert "2 answers kept on this device" in status.text_content()
    snap(page, "judge-offline")
    assert labels_of(setup) == expected  # nothing reached the server

    context.set_offline(False)
    page.wait_for_selector("#save-status[data-status=saved]")
    next_pair(page, after=str(pair))
    expected |= offline
    assert labels_of(setup) == expected
    assert Label.objects.filter(rater=setup.rater).count() == 4


def test_an_answer_whose_response_was_lost_is_resent_and_stored_once(page, server):
    setup = judging_setup(pairs=6, training=0)
    lost = []

    def lose_first_response(route):
        if not lost:
            lost.append(route.fetch().status)  # the server stores the label; the browser never hears back
            route.abort("connectionreset")
        else:
            route.continue_()

    page.route("**/api/v1/labels/", lose_first_response)
    log_in(page, server, setup.rater.username, setup.password)
    page.goto(f"{server}/judge/{setup.pool.pk}/")
    first = answer(page, "1", after=None)
    page.wait_for_function("() => document.getElementById('save-status').dataset.status !== 'saving'")
    second = answer(page, "2", after=str(first))
    page.wait_for_selector("#save-status[data-status=saved]")
    assert lost == [201]
    assert labels_of(setup) == {first: "relevant", second: "not_relevant"}


def test_answers_given_offline_survive_closing_the_tab(context, server):
    setup = judging_setup(pairs=8, training=0)
    page = context.new_page()
    log_in(page, server, setup.rater.username, setup.password)
    page.goto(f"{server}/judge/{setup.pool.pk}/")
    first = answer(page, "1", after=None)
    page.wait_for_selector("#save-status[data-status=saved]")
    context.set_offline(True)
    kept = {answer(page, "2", after=str(first)): "not_relevant"}
    page.wait_for_selector("#save-status[data-status=offline]")
    page.close()
    assert labels_of(setup) == {first: "relevant"}

    context.set_offline(False)
    page = context.new_page()
    page.goto(f"{server}/judge/{setup.pool.pk}/")
    shown = next_pair(page)
    page.wait_for_selector("#save-status[data-status=saved]")
    assert labels_of(setup) == {first: "relevant"} | kept
    assert pair_of_item(shown["pair"]) not in {first, *kept}


def test_heartbeat_keeps_the_lease_and_an_expired_lease_keeps_the_answer(page, server):
    setup = judging_setup(pairs=4, training=0, lease_seconds=3)
    log_in(page, server, setup.rater.username, setup.password)
    page.goto(f"{server}/judge/{setup.pool.pk}/")
    shown = next_pair(page)
    lease = Lease.objects.get(pair_id=pair_of_item(shown["pair"]), rater=setup.rater)
    page.wait_for_timeout(4500)  # longer than the lease: only the heartbeat keeps it
    lease.refresh_from_db()
    assert lease.state == Lease.State.ACTIVE and lease.expires_at > timezone.now()

    # The lease runs out anyway (a laptop asleep, say): the periodic job returns the pair.
    assert leases_expire(now=timezone.now() + timedelta(minutes=5)) >= 1
    page.wait_for_selector("#notice:not([hidden])")
    assert "ran out" in page.text_content("#notice")
    snap(page, "judge-lease-expired")
    page.keyboard.press("1")
    page.wait_for_selector("#save-status[data-status=saved]")
    label = Label.objects.get(rater=setup.rater, pair_id=pair_of_item(shown["pair"]))
    assert label.value == "relevant" and label.counted
