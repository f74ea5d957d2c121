"""A Prolific worker in a real browser, from the study link to the completion code: consent,
guidelines, the pool's training, judging with the quota counter from the keyboard, and the
completion page. axe-core finds nothing on the crowd pages and on the admin's QC page."""
from __future__ import annotations

import pytest

from annotation.models import CrowdWorker, Label
from annotation.services.crowd.studies import study_save
from tests.browser.conftest import assert_controls_labelled, log_in, snap
from tests.browser.scenarios import admin_user, judging_setup
from tests.browser.test_a11y_layout import AXE, AXE_RUN
from tests.browser.waits import WAIT_MS

pytestmark = pytest.mark.browser

QUOTA = 3


def no_axe_violations(page, label: str) -> None:
    page.evaluate(AXE.read_text())
    found = page.evaluate(AXE_RUN)
    if found:
        snap(page, f"crowd-axe-{label}")
    assert found == [], (label, found)


def answer_when_ready(page, key: str, after: str | None) -> str:
    try:
        _wait_ready(page, after)
    except Exception:
        snap(page, "crowd-stuck")
        print(page.evaluate("() => [document.getElementById('judge').dataset.state, document.getElementById('state-title').textContent, document.getElementById('judge').dataset.pairId]"))
        raise
    shown = page.evaluate("() => document.getElementById('judge').dataset.pairId")
    page.keyboard.press(key)
    return shown


def _wait_ready(page, after):
    page.wait_for_function(
        """(after) => { const j = document.getElementById('judge');
             return j.dataset.state === 'working' && j.dataset.armed === 'true' && j.dataset.pairId !== after; }""",
        arg=after)


def test_prolific_worker_from_link_to_completion_code(page, server):
    setup = judging_setup(pairs=8, training=2, pool_name="Crowd pool")
    study = study_save(pool=setup.pool, platform="prolific", title="Judge video clips", completion_code="PROL1FIC",
                       quota_pairs=QUOTA, consent_text="You agree that your answers are stored anonymously.",
                       training_required=True, guidelines_extra="Take your time.")
    page.goto(f"{server}/study/{study.token}/?PROLIFIC_PID=60a1b2c3d4e5f60718293a4b&STUDY_ID=st&SESSION_ID=se")
    page.wait_for_selector("#consent-agree")
    assert "stored anonymously" in page.inner_text("#consent-text")
    no_axe_violations(page, "consent")
    assert_controls_labelled(page)
    page.click("#consent-agree")
    page.wait_for_selector("#guidelines-start")
    assert "Take your time." in page.inner_text("main")
    no_axe_violations(page, "guidelines")
    page.click("#guidelines-start")
    page.wait_for_selector("#crowd-bar")

    # Training: the pool's own training queue, answered right (the feedback is acknowledged with Enter).
    shown = None
    for _ in range(2):
        page.wait_for_function("() => document.getElementById('judge').dataset.mode === 'training'")
        caption = page.inner_text("#caption")
        key = "1" if setup.training_answers[caption] == "relevant" else "2"
        shown = answer_when_ready(page, key, shown)
        page.wait_for_selector("#feedback[data-result=correct]")
        page.wait_for_function("() => document.getElementById('judge').dataset.armed === 'true'")
        page.keyboard.press("Enter")
    # Judging to the quota, the counter moving.
    for n in range(QUOTA):
        shown = answer_when_ready(page, "2", shown)
        if n == 0:
            no_axe_violations(page, "work")
    page.wait_for_selector("#completion-code", timeout=WAIT_MS)
    assert page.inner_text("#completion-code") == "PROL1FIC"
    assert "cc=PROL1FIC" in page.get_attribute("#completion-return", "href")
    no_axe_violations(page, "done")
    snap(page, "crowd-done")
    worker = CrowdWorker.objects.get(study=study)
    assert worker.stage == "done"
    assert Label.objects.filter(rater=worker.user).exclude(pair__role="training").count() == QUOTA


def test_admin_quality_page_is_clean(page, server):
    setup = judging_setup(pairs=4, training=0, pool_name="QC pool")
    admin = admin_user()
    log_in(page, server, admin.username, setup.password)
    page.goto(f"{server}/admin-ui/pools/{setup.pool.pk}/quality/")
    page.wait_for_selector("#quality-table")
    no_axe_violations(page, "quality")


def test_a_worker_at_the_quota_is_told_so_and_sent_to_the_completion_page(page, server):
    setup = judging_setup(pairs=6, training=0, pool_name="Quota pool")
    study = study_save(pool=setup.pool, platform="prolific", title="Judge video clips", completion_code="QUOTA2",
                       quota_pairs=2, consent_text="You agree.", training_required=False)
    # The quota bar's poll would move the page on by itself; without it the judging page must say
    # why no pair comes (the server's reason: quota_reached) and where to go.
    page.route("**/api/v1/study/*/progress/", lambda route: route.abort())
    page.goto(f"{server}/study/{study.token}/?PROLIFIC_PID=70a1b2c3d4e5f60718293a4b&STUDY_ID=st&SESSION_ID=se")
    page.click("#consent-agree")
    page.click("#guidelines-start")
    page.wait_for_selector("#crowd-bar")
    shown = None
    for _ in range(2):
        shown = answer_when_ready(page, "2", shown)
    page.wait_for_function("() => document.getElementById('judge').dataset.state === 'quota_reached'")
    assert page.inner_text("#state-title") == "You have reached this study's quota"
    assert "No work left" not in page.inner_text("#state")
    assert page.is_hidden("#state-retry")
    done = page.locator("#state-done")
    assert done.is_visible() and done.get_attribute("href") == f"/study/{study.token}/go/"
    no_axe_violations(page, "quota-reached")
    page.wait_for_selector("#save-status[data-status=saved]")
    done.click()
    page.wait_for_selector("#completion-code")
    assert page.inner_text("#completion-code") == "QUOTA2"


def test_a_rater_outside_any_study_sees_no_completion_link(page, server):
    setup = judging_setup(pairs=1, training=0, pool_name="Plain pool")
    log_in(page, server, setup.rater.username, setup.password)
    page.goto(f"{server}/judge/{setup.pool.pk}/")
    page.wait_for_function("() => ['working', 'no_work_left'].includes(document.getElementById('judge').dataset.state)")
    assert page.get_attribute("#judge", "data-done-url") is None
    assert page.is_hidden("#state-done")


def test_the_resume_code_on_the_work_page_takes_the_work_to_another_browser(browser, page, server):
    """Issue 22: the worker id alone does not resume in another browser; the code the work page
    shows does, typed as a worker would (lower case, no dash)."""
    setup = judging_setup(pairs=6, training=0, pool_name="Resume pool")
    study = study_save(pool=setup.pool, platform="prolific", title="Judge video clips", completion_code="RESUME1",
                       quota_pairs=3, consent_text="You agree.", training_required=False)
    link = f"{server}/study/{study.token}/?PROLIFIC_PID=80a1b2c3d4e5f60718293a4b&STUDY_ID=st&SESSION_ID="
    page.goto(link + "one")
    page.click("#consent-agree")
    page.click("#guidelines-start")
    answer_when_ready(page, "2", None)
    code = page.inner_text("#resume-code")
    assert page.is_visible("#resume-code")
    other = browser.new_context()
    try:
        laptop = other.new_page()
        laptop.goto(link + "two")
        laptop.wait_for_selector("#resume-code-input")
        assert laptop.query_selector("#judge") is None
        no_axe_violations(laptop, "resume")
        laptop.fill("#resume-code-input", code.replace("-", "").lower())
        laptop.click("#resume-submit")
        laptop.wait_for_selector("#crowd-bar")
        laptop.wait_for_function("() => document.getElementById('crowd-judged').textContent === '1'")
    finally:
        other.close()
    assert CrowdWorker.objects.filter(study=study).count() == 1
