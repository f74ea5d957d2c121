"""Issue 24, finding 6: what a crowd worker sees. The judging page shows the task only (no pool
name or size, no rater figures, no links into the site, no account name), the quota counter is
right at the end ("2 of 2", not "1 of 2" while the last answer is on its way), and the consent
page's title reads as a sentence with its two buttons level."""
from __future__ import annotations

import pytest

from annotation.models import CrowdWorker
from annotation.services.crowd.studies import study_save
from tests.browser.scenarios import judging_setup
from tests.browser.test_crowd_prolific import answer_when_ready

pytestmark = pytest.mark.browser

TITLE = "Does this caption describe the clip?"


def arrive(page, server, study, pid="90a1b2c3d4e5f60718293a4b"):
    page.goto(f"{server}/study/{study.token}/?PROLIFIC_PID={pid}&STUDY_ID=st&SESSION_ID=se")
    page.wait_for_selector("#consent-agree")


def test_the_consent_page_reads_well_and_its_buttons_are_level(page, server):
    setup = judging_setup(pairs=2, training=0, pool_name="demo-pool")
    study = study_save(pool=setup.pool, platform="prolific", title=TITLE, completion_code="C1",
                       quota_pairs=2, consent_text="You agree.", training_required=False)
    arrive(page, server, study)
    heading = page.inner_text("#consent-title")
    assert heading == "Before you start: your consent" and "?:" not in page.inner_text("main")
    agree, decline = (page.locator(s).bounding_box() for s in ("#consent-agree", "#consent-decline"))
    assert (agree["y"], agree["height"]) == (decline["y"], decline["height"])


def test_a_worker_sees_the_task_only_and_the_quota_counter_is_right_at_the_end(page, server):
    setup = judging_setup(pairs=6, training=0, pool_name="demo-pool")
    study = study_save(pool=setup.pool, platform="prolific", title=TITLE, completion_code="C2",
                       quota_pairs=2, consent_text="You agree.", training_required=False)
    # The first poll of the quota bar goes through; later ones do not (a slow network), so the
    # counter can only be right at the end if it counts the answers given on the page itself.
    polls = []

    def progress(route):
        polls.append(route.request.url)
        if len(polls) == 1:
            route.continue_()
        else:
            route.abort()

    page.route("**/api/v1/study/*/progress/", progress)
    arrive(page, server, study)
    page.click("#consent-agree")
    page.click("#guidelines-start")
    page.wait_for_selector("#crowd-bar")
    page.wait_for_function("() => document.getElementById('crowd-judged').textContent === '0'")
    worker = CrowdWorker.objects.get(study=study)
    shown = None
    for _ in range(2):
        shown = answer_when_ready(page, "2", shown)
    page.wait_for_function("() => document.getElementById('judge').dataset.state === 'quota_reached'")
    assert page.inner_text("#crowd-bar p") == "Pairs judged 2 of 2"
    text = page.inner_text("body")
    for internal in ("demo-pool", setup.pool.dataset.name, "Left for you", "Labelled today", "My work",
                     "Back to my work", worker.user.username, "Log out"):
        assert internal not in text, internal
    links = page.eval_on_selector_all("a[href]", "els => els.map((a) => a.getAttribute('href'))")
    assert set(links) == {"#main", f"/study/{study.token}/go/"}, links  # the skip link and the way on
