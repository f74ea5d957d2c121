"""Issue 24, findings 2 and 3: every campaign setting is on a page. The crowd study (with its entry
URL to paste into the platform and a copy button), the gold rule, the judging strategy at build
time and a judging simulation are set from the admin pages, which link to no /api/ page."""
from __future__ import annotations

import re

import pytest

from annotation.models import CrowdStudy, Pool, PooledPair, QualityRule, Report
from annotation.services.queue.labels import label_submit
from annotation.services.queue.leases import lease_next
from tests.browser.conftest import SCREENSHOTS, assert_controls_labelled, log_in, snap
from tests.browser.scenarios import PASSWORD, admin_user, judging_setup
from tests.browser.waits import WAIT_MS

pytestmark = pytest.mark.browser

NO_API_LINKS = "() => [...document.querySelectorAll('main a[href]')].map((a) => a.getAttribute('href')).filter((h) => h.startsWith('/api/'))"


def test_crowd_study_and_gold_rule_are_set_on_the_pool_page(browser, server):
    setup = judging_setup(pairs=6, training=2, pool_name="Crowd pool")
    admin = admin_user()
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    try:
        log_in(page, server, admin.username, PASSWORD)
        page.goto(f"{server}/admin-ui/pools/{setup.pool.pk}/")
        assert page.evaluate(NO_API_LINKS) == []
        form = page.locator("#crowd-study-form")
        form.locator("[name=platform]").select_option("prolific")
        form.locator("[name=title]").fill("Judge video captions")
        form.locator("[name=description]").fill("Watch short clips and say whether a caption fits.")
        form.locator("[name=quota_pairs]").fill("20")
        form.locator("[name=quota_minutes]").fill("15")
        form.locator("[name=places]").fill("30")
        form.locator("[name=idle_timeout_seconds]").fill("300")
        form.locator("[name=completion_code]").fill("C0DE42")
        form.locator("[name=consent_text]").fill("I agree to take part.")
        form.locator("[name=guidelines_extra]").fill("Take your time.")
        form.locator("[name=training_required]").check()
        form.locator("[name=is_open]").check()
        form.locator("[type=submit]").click()
        page.wait_for_selector("#crowd-study-form .form-done")
        study = CrowdStudy.objects.get(pool=setup.pool)
        assert (study.platform, study.title, study.quota_pairs, study.quota_minutes, study.completion_code,
                study.idle_timeout_seconds, study.training_required, study.is_open) == (
            "prolific", "Judge video captions", 20, 15, "C0DE42", 300, True, True)
        assert study.guidelines_extra == "Take your time." and study.consent_text == "I agree to take part."

        # The entry URL appears without a reload, with Prolific's parameters, and copies.
        entry = page.locator("#crowd-entry-url")
        expected = f"{server}/study/{study.token}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
        page.wait_for_function("(start) => document.getElementById('crowd-entry-url').value.startsWith(start)", arg=expected)
        page.click("#crowd-entry-copy")
        page.wait_for_selector("#crowd-entry-copied:has-text('Copied')")
        assert page.evaluate("() => navigator.clipboard.readText()") == entry.input_value()
        assert_controls_labelled(page)
        snap(page, "admin-pool-crowd-study")
        # The pictures of docs/campaign.md (docs/screenshots/, copied from test-artifacts by hand).
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.locator("#crowd").screenshot(path=str(SCREENSHOTS / "crowd-study-form-1280.png"))
        page.set_viewport_size({"width": 390, "height": 844})
        page.locator("#crowd").screenshot(path=str(SCREENSHOTS / "crowd-study-form-390.png"))
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
        page.set_viewport_size({"width": 1280, "height": 800})

        # Closing the study: one change, kept.
        form.locator("[name=is_open]").uncheck()
        form.locator("[name=quota_minutes]").fill("")
        form.locator("[type=submit]").click()
        page.wait_for_selector("#crowd-study-form .form-done")
        study.refresh_from_db()
        assert study.is_open is False and study.quota_minutes is None and study.quota_pairs == 20

        # A refusal is shown by its field: Prolific without a completion code.
        form.locator("[name=completion_code]").fill("")
        form.locator("[type=submit]").click()
        page.wait_for_selector("#crowd-study-form .field-error")
        assert "completion code" in page.text_content("#crowd-study-form .field-error")

        rule = page.locator("#gold-rule-form")
        assert rule.locator("[data-unsaved]").count() == 1  # "(not saved yet)" until the first save
        rule.locator("[name=enabled]").check()
        rule.locator("[name=min_gold_answers]").fill("5")
        rule.locator("[name=min_gold_accuracy]").fill("0.8")
        rule.locator("[name=too_fast_seconds]").fill("1.5")
        rule.locator("[name=set_aside_labels]").check()
        rule.locator("[type=submit]").click()
        page.wait_for_selector("#gold-rule-form .form-done")
        saved = QualityRule.objects.get(pool=setup.pool)
        assert (saved.enabled, saved.min_gold_answers, saved.min_gold_accuracy, saved.too_fast_seconds,
                saved.set_aside_labels) == (True, 5, 0.8, 1.5, True)
        # Saved: "(not saved yet)" has gone, and the page says the rule cannot act on this pool
        # (no gold pairs), with the numbers, as it does again after a reload.
        assert rule.locator("[data-unsaved]").count() == 0
        warning = "the pool has no gold pairs: the rule (after 5 gold answers) never applies"
        assert warning in rule.locator(".form-warning").text_content()

        # After a reload the forms show what is stored.
        page.reload()
        assert page.locator("#crowd-study-form [name=title]").input_value() == "Judge video captions"
        assert page.locator("#crowd-study-form [name=is_open]").is_checked() is False
        assert page.locator("#gold-rule-form [name=min_gold_answers]").input_value() == "5"
        assert warning in page.locator("#gold-rule-form .form-warning").text_content()
        page.wait_for_function("(start) => document.getElementById('crowd-entry-url').value.startsWith(start)", arg=expected)
    finally:
        context.close()


def test_mturk_study_offers_a_worker_preview(page, server):
    setup = judging_setup(pairs=4, training=0, pool_name="Turk pool")
    admin = admin_user()
    log_in(page, server, admin.username, PASSWORD)
    page.goto(f"{server}/admin-ui/pools/{setup.pool.pk}/")
    form = page.locator("#crowd-study-form")
    form.locator("[name=platform]").select_option("mturk")
    form.locator("[name=title]").fill("Turk captions")
    form.locator("[name=description]").fill("A preview shows this description.")
    form.locator("[name=quota_pairs]").fill("10")
    form.locator("[name=consent_text]").fill("I agree.")
    form.locator("[name=training_required]").uncheck()
    form.locator("[type=submit]").click()
    page.wait_for_selector("#crowd-study-form .form-done")
    study = CrowdStudy.objects.get(pool=setup.pool)
    page.wait_for_function("(url) => document.getElementById('crowd-entry-url').value === url",
                           arg=f"{server}/study/{study.token}/")
    preview = page.locator("#crowd-preview-link")
    with page.context.expect_page() as opened:
        preview.click()
    worker_view = opened.value
    worker_view.wait_for_selector("text=A preview shows this description.")
    worker_view.close()
    assert study.workers.count() == 0  # a preview creates nothing


def test_build_form_sets_the_judging_strategy_and_the_new_pool_appears(page, server):
    setup = judging_setup(pairs=6, training=0, pool_name="First pool")
    admin = admin_user()
    log_in(page, server, admin.username, PASSWORD)
    page.goto(f"{server}/admin-ui/datasets/{setup.pool.dataset_id}/")
    page.evaluate("() => { window.notReloaded = true; }")
    form = page.locator("#pool-build")
    # The strategy's own settings are offered only for it.
    assert form.locator("[name=bandit_variant]").is_disabled()
    form.locator("[name=name]").fill("Bandit pool")
    form.locator("[name=strategy]").select_option("bandit")
    assert form.locator("[name=bandit_variant]").is_enabled()
    form.locator("[name=bandit_variant]").select_option("thompson")
    form.locator("[name=warmup_depth]").fill("1")
    form.locator("[name=stop_misses_in_a_row]").fill("4")
    form.locator("[type=submit]").click()
    page.wait_for_selector("#pool-build .job-progress[data-status=succeeded]")
    pool = Pool.objects.get(name="Bandit pool")
    assert (pool.judging_strategy, pool.judging_bandit_variant, pool.judging_warmup_depth,
            pool.judging_stop_misses_in_a_row, pool.judging_query_budget) == ("bandit", "thompson", 1, 4, None)
    # The new pool is in the dataset's pool table at once, without a reload.
    page.wait_for_selector("#dataset-pools a:has-text('Bandit pool')")
    assert page.evaluate("() => window.notReloaded") is True
    snap(page, "admin-build-strategy")


def test_simulation_is_started_from_the_pool_page_and_opens_its_report(page, server):
    setup = judging_setup(pairs=6, training=0, pool_name="Judged pool")
    for step in range(6):
        lease = lease_next(pool=setup.pool, rater=setup.rater).lease
        label_submit(rater=setup.rater, client_id=f"sim{step}", lease=lease.token,
                     value="relevant" if step % 2 else "not_relevant", seconds=2.0)
    assert not PooledPair.objects.filter(pool=setup.pool, role="pool").exclude(state="resolved").exists()
    admin = admin_user()
    log_in(page, server, admin.username, PASSWORD)
    page.goto(f"{server}/admin-ui/pools/{setup.pool.pk}/")
    form = page.locator("#simulation-form")
    form.locator("[name=replays]").fill("3")
    form.locator("[type=submit]").click()
    # The job runs, then its report opens by itself.
    page.wait_for_url(re.compile(r".*/reports/\d+/$"))
    report = Report.objects.get(kind="judging_simulation")
    assert page.url == f"{server}/reports/{report.pk}/"
    assert report.pool_id == setup.pool.pk


def test_simulation_with_a_judgment_set_is_started_from_the_dataset_page(page, server, tmp_path):
    from annotation.services.judgment_sets.imports import judgments_import

    setup = judging_setup(pairs=6, training=0, pool_name="Set pool")
    qrels = tmp_path / "known.qrels"
    qrels.write_text("".join(f"q{i} 0 v{i} {i % 2}\n" for i in range(6)))
    judgment_set = judgments_import(dataset=setup.pool.dataset, path=qrels, fmt="qrels").judgment_set
    admin = admin_user()
    log_in(page, server, admin.username, PASSWORD)
    page.goto(f"{server}/admin-ui/datasets/{setup.pool.dataset_id}/")
    form = page.locator("#set-simulation-form")
    form.locator("[name=judgment_set]").select_option(str(judgment_set.pk))
    form.locator("[name=depth]").fill("1")
    form.locator("[name=replays]").fill("2")
    form.locator("[type=submit]").click()
    page.wait_for_url(re.compile(r".*/reports/\d+/$"))
    report = Report.objects.get(kind="judging_simulation")
    assert page.url == f"{server}/reports/{report.pk}/"
