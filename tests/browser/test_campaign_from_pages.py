"""Issue 24, done when: an admin runs a whole campaign from the pages alone — uploads a dataset and
two runs, builds a pool with a judging strategy, creates a rater and gives them the pool, sets up
the crowd study and copies its entry URL, sets the gold rule, follows the pool page while labels
arrive, adjudicates, starts a judging simulation and downloads a qrels export.

The test fails if any step needs the API by hand: every top-level navigation and every response is
recorded, and a page at /api/ (DRF's browsable API or any other) or an HTML answer from /api/ fails
it. The rater's labels come through the REST API, as their judging page sends them: that is the
raters' part of a campaign, not the admin's."""
from __future__ import annotations

import re
import shutil
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlparse

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from annotation.demo.scenes import demo_captions
from annotation.models import Caption, Clip, CrowdStudy, Dataset, Lease, Pool, PooledPair, QualityRule, Report
from tests.browser.conftest import log_in, snap
from tests.browser.scenarios import PASSWORD, admin_user, render_clips
from tests.browser.waits import WAIT_MS

pytestmark = pytest.mark.browser

CLIPS = 6


class ApiGuard:
    """Records where the admin's browser goes and what it gets back."""

    def __init__(self, page):
        self.page = page
        self.visited: list[str] = []
        self.api_html: list[str] = []
        page.on("framenavigated", lambda frame: self.visited.append(frame.url) if frame == page.main_frame else None)
        page.on("response", self._response)

    def _response(self, response):
        path = urlparse(response.url).path
        if path.startswith("/api/") and "text/html" in (response.headers.get("content-type") or ""):
            self.api_html.append(response.url)

    def assert_pages_only(self, step: str) -> None:
        api_pages = [url for url in self.visited if urlparse(url).path.startswith("/api/")]
        assert api_pages == [], f"{step}: the admin had to open the API: {api_pages}"
        assert self.api_html == [], f"{step}: an HTML page came from the API: {self.api_html}"


def campaign_files(tmp_path: Path) -> Path:
    """A six-clip MSR-VTT-style CSV whose clips are real H.264 files under MEDIA_ROOT."""
    rendered = render_clips(count=CLIPS)
    for i, relative in enumerate(rendered):
        target = Path(settings.MEDIA_ROOT) / "campaign" / f"video{i}.mp4"
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            shutil.copyfile(Path(settings.MEDIA_ROOT) / relative, target)
    texts = [c.text for c in demo_captions()]
    dataset = tmp_path / "campaign.csv"
    dataset.write_text("key,vid_key,video_id,sentence\n" + "".join(
        f"ret{i},msr{i},video{i},{texts[i % len(texts)]}\n" for i in range(CLIPS)))
    return dataset


def run_file(tmp_path: Path, dataset: Dataset, name: str, shift: int) -> Path:
    """Each caption's original clip and one other, in an order that differs between runs."""
    clips = list(Clip.objects.filter(dataset=dataset).order_by("external_id").values_list("external_id", flat=True))
    lines = []
    for caption in Caption.objects.filter(dataset=dataset).select_related("original_clip").order_by("external_id"):
        own = caption.original_clip.external_id
        other = clips[(clips.index(own) + shift) % len(clips)]
        ranked = [other, own] if shift % 2 else [own, other]
        lines += [f"{caption.external_id} Q0 {clip} {rank} {1 - rank / 10:.2f} {name}\n" for rank, clip in enumerate(ranked, 1)]
    path = tmp_path / f"{name}.trec"
    path.write_text("".join(lines))
    return path


def label_everything(rater, pool: Pool) -> int:
    """The rater answers every pair through the API: the first one 'ambiguous' (it goes to the
    admin), the original clip relevant, the others not. Returns the number of answers."""
    client = Client()
    client.force_login(rater)
    answers = 0
    while True:
        response = client.post(f"/api/v1/pools/{pool.pk}/next/", {}, content_type="application/json")
        assert response.status_code == 200, response.content
        assignment = response.json()["assignment"]
        if assignment is None:
            return answers
        lease = Lease.objects.select_related("pair__caption", "pair__clip").get(token=assignment["lease_id"])
        # The clip's minimum watching time has passed (the lease was handed out a minute ago).
        Lease.objects.filter(pk=lease.pk).update(created_at=timezone.now() - timedelta(minutes=1))
        pair = lease.pair
        value = ("ambiguous" if answers == 0 else
                 "relevant" if pair.caption.original_clip_id == pair.clip_id else "not_relevant")
        response = client.post("/api/v1/labels/", {"client_id": f"campaign-{answers}", "lease_id": assignment["lease_id"],
                                                    "value": value, "seconds": 4.0}, content_type="application/json")
        assert response.status_code in (200, 201), response.content
        answers += 1


def test_an_admin_runs_a_campaign_from_the_pages_alone(browser, server, tmp_path):
    admin = admin_user()
    context = browser.new_context(viewport={"width": 1280, "height": 800}, accept_downloads=True)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    guard = ApiGuard(page)
    try:
        log_in(page, server, admin.username, PASSWORD)

        # 1. The dataset, from the overview page.
        page.click("nav >> text=Datasets")
        page.set_input_files("#dataset-file", str(campaign_files(tmp_path)))
        page.fill("#dataset-name", "campaign-set")
        page.select_option("#dataset-format", "msrvtt-csv")
        page.fill("#dataset-media", "campaign/{video_id}.mp4")
        page.click("#dataset-upload [type=submit]")
        page.wait_for_selector("#dataset-upload .job-progress[data-status=succeeded]")
        page.click("#dataset-rows a:has-text('campaign-set')")  # listed without a reload
        dataset = Dataset.objects.get(name="campaign-set")
        page.wait_for_url(f"{server}/admin-ui/datasets/{dataset.pk}/")
        assert Clip.objects.filter(dataset=dataset).count() == CLIPS
        guard.assert_pages_only("dataset")

        # 2. Two runs, from the dataset page.
        for name, shift in (("model-a", 1), ("model-b", 2)):
            page.set_input_files("#run-file", str(run_file(tmp_path, dataset, name, shift)))
            page.fill("#run-name", name)
            page.click("#run-upload [type=submit]")
            page.wait_for_selector(f"tr[data-run={name}]")  # the page reloads with the run
        guard.assert_pages_only("runs")

        # 3. The pool, with a judging strategy, from the build form.
        page.fill("#pool-name", "round-1")
        page.fill("#pool-depth", "2")
        page.fill("#pool-redundancy", "0")
        page.select_option("#pool-strategy", "shallow_first")
        page.click("#pool-build [type=submit]")
        page.wait_for_selector("#dataset-pools a:has-text('round-1')")
        pool = Pool.objects.get(name="round-1")
        assert pool.judging_strategy == "shallow_first"
        page.click("#dataset-pools a:has-text('round-1')")
        page.wait_for_url(f"{server}/admin-ui/pools/{pool.pk}/")
        guard.assert_pages_only("build")

        # 4. A rater, created on the raters page and given the pool on the pool page.
        page.click("nav >> text=Raters")
        page.fill("#rater-username", "riley")
        page.fill("#rater-password", PASSWORD)
        page.click("#rater-create [type=submit]")
        page.wait_for_selector("#rater-rows tr[data-rater=riley]")
        page.goto(f"{server}/admin-ui/pools/{pool.pk}/")
        page.locator("#members-add label:has-text('riley') input").check()
        page.click("#members-add [type=submit]")
        page.wait_for_selector("tr[data-rater-id] >> text=riley")
        rater = pool.memberships.get().rater
        guard.assert_pages_only("rater")

        # 5. The crowd study, and its entry URL copied for Prolific.
        form = page.locator("#crowd-study-form")
        form.locator("[name=platform]").select_option("prolific")
        form.locator("[name=title]").fill("Caption check")
        form.locator("[name=quota_pairs]").fill("10")
        form.locator("[name=places]").fill("25")
        form.locator("[name=completion_code]").fill("DONE42")
        form.locator("[name=consent_text]").fill("I agree to take part.")
        form.locator("[name=training_required]").uncheck()
        form.locator("[type=submit]").click()
        page.wait_for_selector("#crowd-study-form .form-done")
        study = CrowdStudy.objects.get(pool=pool)
        page.wait_for_function("() => document.getElementById('crowd-entry-url').value !== ''")
        page.click("#crowd-entry-copy")
        page.wait_for_selector("#crowd-entry-copied:has-text('Copied')")
        copied = page.evaluate("() => navigator.clipboard.readText()")
        assert copied.startswith(f"{server}/study/{study.token}/?PROLIFIC_PID=")
        assert "STUDY_ID={{%STUDY_ID%}}" in copied and "SESSION_ID={{%SESSION_ID%}}" in copied

        # 6. The gold rule.
        rule = page.locator("#gold-rule-form")
        rule.locator("[name=min_gold_answers]").fill("4")
        rule.locator("[name=min_gold_accuracy]").fill("0.75")
        rule.locator("[type=submit]").click()
        page.wait_for_selector("#gold-rule-form .form-done")
        assert (QualityRule.objects.get(pool=pool).min_gold_answers, QualityRule.objects.get(pool=pool).min_gold_accuracy) == (4, 0.75)
        guard.assert_pages_only("crowd study and gold rule")

        # 7. Monitoring: the rater labels every pair; the open page follows without a reload.
        page.evaluate("() => { window.notReloaded = true; }")
        answers = label_everything(rater, pool)
        assert answers == PooledPair.objects.filter(pool=pool, role="pool").count()
        page.wait_for_function("(n) => document.querySelector('b[data-live=labels]').textContent === String(n)", arg=answers)
        page.wait_for_function("() => document.querySelector('[data-live=\"by_state.adjudication\"]').textContent === '1'")
        assert page.evaluate("() => window.notReloaded") is True
        snap(page, "campaign-pool-monitoring")

        # 8. Adjudication: the escalated pair is decided on its page.
        page.click("text=Adjudication queue")
        page.wait_for_selector("article.pair")
        page.click("text=Decide: relevant")
        page.click("text=Confirm: relevant")
        page.wait_for_selector("#action-status:has-text('resolved as relevant')")
        assert not PooledPair.objects.filter(pool=pool, role="pool").exclude(state="resolved").exists()
        guard.assert_pages_only("adjudication")

        # 9. A judging simulation of the finished pool; its report opens when the job is done.
        page.goto(f"{server}/admin-ui/pools/{pool.pk}/")
        page.fill("#simulation-replays", "3")
        page.click("#simulation-form [type=submit]")
        page.wait_for_url(re.compile(r".*/reports/\d+/$"))
        report = Report.objects.get(kind="judging_simulation", pool=pool)
        assert page.url == f"{server}/reports/{report.pk}/"
        guard.assert_pages_only("simulation")

        # 10. A qrels export, made and downloaded from the reports page.
        page.click("nav >> text=Reports")
        page.select_option("#export-pool", str(pool.pk))
        page.select_option("#export-format", "qrels")
        page.click("#export-form [type=submit]")
        link = page.locator("a:has-text('bytes)')")
        link.wait_for()
        with page.expect_download() as downloading:
            link.click()
        qrels = [line.split() for line in Path(downloading.value.path()).read_text().strip().splitlines()]
        assert qrels and all(len(row) == 4 and row[3] in ("0", "1") for row in qrels), qrels[:3]
        assert len(qrels) >= answers  # every judged pair (the original clips too)
        guard.assert_pages_only("export")
    finally:
        context.close()
    assert errors == []
