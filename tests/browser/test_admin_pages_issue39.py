"""Issue 39, finding 6 (and 7's "Retake training"): the admin's pages in a real campaign.

The pool page's charts fit a new campaign (its hours, not the last pixels of 48), name crowd
workers in full at 12 px or more, and show no axis of 0 and 1 before there is data; "Reports and
exports" opens with this pool and takes parameters as fields; "Retake training" asks in the page;
a machine judge's job card reads as a sentence with a link to its report; the admin navigation
keeps to one line at 1280 px; the calibration chart keeps a sane size with readable numbers."""
from __future__ import annotations

import re

import pytest
from django.utils import timezone

from annotation.models import Job, PoolMembership, PooledPair, Report
from annotation.services.accounts.raters import memberships_grant, rater_create
from annotation.services.machine_judges.imports import machine_judge_import
from annotation.services.machine_judges.reports import machine_judge_report_create
from tests.annotation.services.machine_judges.world import machine_file, resolve_by_hand, small_pool
from tests.browser.conftest import log_in
from tests.browser.scenarios import PASSWORD, admin_user, judging_setup
from tests.factories import label_pair, make_pool_with_runs
from tests.frontend.test_job_cards import RUN_RESULT

pytestmark = pytest.mark.browser

CROWD_NAME = "prolific-5f0c3a9b2e1d4c6f7a8b9c0d"

# Each chart text's size as drawn: its font size times the SVG's scale on the page.
TEXT_SIZES = """(selector) => [...document.querySelectorAll(`${selector} svg text`)].map((t) => {
  const svg = t.ownerSVGElement;
  const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  return parseFloat(getComputedStyle(t).fontSize) * scale;
})"""
# Texts reaching outside their SVG (cut off at its edge).
TEXTS_OUTSIDE = """(selector) => [...document.querySelectorAll(`${selector} svg text`)].filter((t) => {
  const box = t.getBoundingClientRect(), svg = t.ownerSVGElement.getBoundingClientRect();
  return box.left < svg.left - 0.5 || box.right > svg.right + 0.5;
}).map((t) => t.textContent)"""
NAV_LINES = """() => new Set([...document.querySelectorAll('.topbar nav a, .topbar .logout')]
  .map((a) => Math.round(a.getBoundingClientRect().top + a.getBoundingClientRect().height / 2))).size"""


def test_pool_page_charts_reports_form_retake_and_job_card(page, server):
    page.set_viewport_size({"width": 1280, "height": 900})
    # Named to sort last: the reports page would choose the first pool by itself.
    setup = judging_setup(pairs=6, training=2, pool_name="Zeta pool")
    make_pool_with_runs()
    pool = setup.pool
    PoolMembership.objects.filter(pool=pool, rater=setup.rater).update(training="failed", training_score=0.5)
    crowd = rater_create(username=CROWD_NAME, password=PASSWORD)
    memberships_grant(pool=pool, users=[crowd])
    PoolMembership.objects.filter(pool=pool, rater=crowd).update(training="passed")
    admin = admin_user()
    log_in(page, server, admin.username, PASSWORD)
    page.on("dialog", lambda dialog: (dialog.dismiss(), pytest.fail(f"a browser dialog opened: {dialog.message}")))

    # Before any label: the charts say so, with no axis of 0 and 1 beside nothing.
    page.goto(f"{server}/admin-ui/pools/{pool.pk}/")
    page.wait_for_selector("#pool-charts[data-drawn=true]")
    assert page.evaluate(NAV_LINES) == 1  # the admin navigation on one line at 1280 px
    for chart in ("progress", "hourly", "raters"):
        texts = page.locator(f"[data-chart={chart}] svg text").all_text_contents()
        assert texts == ["No labels in this window yet."], (chart, texts)

    for pair in PooledPair.objects.filter(pool=pool, role="pool").order_by("pk")[:3]:
        label_pair(crowd, pair, "relevant")
    page.reload()
    page.wait_for_selector("#pool-charts[data-drawn=true]")
    # A campaign an hour old fills the chart: 6 hours shown, not 48 columns of 13 px.
    bars = page.locator("[data-chart=hourly] svg rect.bar")
    assert bars.count() == 6
    assert bars.first.bounding_box()["width"] > 40
    # Every rater named in full, every text 12 px or more as drawn, nothing cut at an edge.
    assert CROWD_NAME in page.locator("[data-chart=raters] svg text.label").all_text_contents()[0]
    for chart in ("progress", "hourly", "raters"):
        sizes = page.evaluate(TEXT_SIZES, f"[data-chart={chart}]")
        assert sizes and min(sizes) >= 11.9, (chart, sizes)
        assert page.evaluate(TEXTS_OUTSIDE, f"[data-chart={chart}]") == [], chart

    # "Retake training" asks in the page, as every question of these pages (a dialog fails the test).
    row = f"tr[data-rater-id='{setup.rater.pk}']"
    page.click(f"{row} >> text=Retake training")
    assert "take the training again" in page.text_content(f"{row} .confirm-box")
    page.click(f"{row} >> text=Cancel")
    assert PoolMembership.objects.get(pool=pool, rater=setup.rater).training == "failed"
    page.click(f"{row} >> text=Retake training")
    with page.expect_navigation():
        page.click(f"{row} >> text=Confirm: Retake training")
    assert PoolMembership.objects.get(pool=pool, rater=setup.rater).training == "pending"

    # Reports and exports: this pool chosen; the chosen kind's parameters are fields.
    page.wait_for_selector("#pool-charts[data-drawn=true]")
    page.click("text=Reports and exports")
    page.wait_for_url(re.compile(rf".*/reports/\?pool={pool.pk}$"))
    for select in ("#report-pool", "#export-pool", "#pool-set-pool"):
        assert page.input_value(select) == str(pool.pk), select
    page.select_option("#report-kind", "agreement")
    assert page.locator("fieldset[data-params-for=agreement]").is_visible()
    assert not page.locator("fieldset[data-params-for=metrics]").is_visible()
    page.fill("#report-agreement-n_boot", "0")
    page.fill("#report-agreement-seed", "7")
    page.click("#report-form [type=submit]")
    page.wait_for_url(re.compile(r".*/reports/\d+/$"))
    report = Report.objects.get(kind="agreement", pool=pool)
    assert report.params["n_boot"] == 0 and report.params["seed"] == 7 and report.params["confidence"] == 0.95

    # A machine judge's run: its card says what it judged, and leads to the report that measures it.
    run = Job.objects.create(kind="machine_judge_run", operation="run_machine_judge", status="succeeded",
                             finished_at=timezone.now(), result=RUN_RESULT,
                             params={"endpoint_id": 1, "endpoint": "vllm", "pool_id": pool.pk, "judgment_set_id": None})
    page.goto(f"{server}/admin-ui/jobs/{run.pk}/")
    page.wait_for_selector(".job-progress[data-status=succeeded] .job-summary")
    assert page.text_content(".job-progress .row strong") == "Run a machine judge: Zeta pool"
    assert "judged 178 of 180 pairs: 60 relevant, 118 not relevant" in page.text_content(".job-summary")
    assert page.locator(".job-progress dl.facts").count() == 0
    page.click("text=Its report: the machine judge against people")
    page.wait_for_url(re.compile(r".*/reports/\?.*kind=machine_judge.*"))
    assert page.input_value("#report-pool") == str(pool.pk) and page.input_value("#report-kind") == "machine_judge"
    assert page.input_value("#report-machine_judge-judge") == "3"


def test_calibration_chart_keeps_a_sane_size(page, server, tmp_path):
    page.set_viewport_size({"width": 1280, "height": 900})
    pool, _ = small_pool()
    resolve_by_hand(pool)
    judge = machine_judge_import(dataset=pool.dataset, path=machine_file(tmp_path), name="gpt", pool=pool)
    report = machine_judge_report_create(judge=judge, params={"n_boot": 0})
    log_in(page, server, admin_user().username, PASSWORD)
    page.goto(f"{server}/reports/{report.pk}/")
    chart = page.locator("svg[aria-labelledby=reliability-title]")
    assert chart.bounding_box()["width"] <= 520  # ~1,100 px before, stretched to the card
    sizes = page.evaluate("""() => [...document.querySelectorAll('svg[aria-labelledby=reliability-title] text')].map((t) => {
      const svg = t.ownerSVGElement;
      return parseFloat(getComputedStyle(t).fontSize) * svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    })""")
    assert sizes and 11.5 <= min(sizes) and max(sizes) <= 16, sizes  # 40 px numbers before
