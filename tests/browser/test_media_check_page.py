"""Issue 39, done when: an admin imports a dataset whose clips include a missing file, an AVI, an
MKV, a QuickTime MOV, an MP4 without faststart and a span past the clip's end; the dataset page
names each problem with its clip; 'Prepare playable copies' converts the ones a copy fixes; a pool
refuses the clips that still fail until told to leave them out; and a rater then plays every clip
of the pool (each video element has its current frame, readyState >= 2)."""
from __future__ import annotations

import pytest

from annotation.models import Caption, Clip, Dataset, Pool
from annotation.services.accounts.raters import memberships_grant, rater_create
from tests.annotation.services.media.media_world import CLIPS, EXPECTED, PREPARABLE, manifest, media_files
from tests.browser.conftest import log_in, snap
from tests.browser.scenarios import PASSWORD, admin_user
from tests.browser.test_judging import KEYS, next_pair
from tests.browser.waits import WAIT_MS

pytestmark = pytest.mark.browser


def _run_file(tmp_path, dataset) -> str:
    """Each caption ranks the clip it was written for first."""
    lines = [f"{c.external_id} Q0 {c.original_clip.external_id} 1 0.9 model\n"
             for c in Caption.objects.filter(dataset=dataset).select_related("original_clip")]
    path = tmp_path / "model.trec"
    path.write_text("".join(lines))
    return str(path)


def test_the_dataset_page_names_each_media_problem_prepares_copies_and_a_rater_plays_every_clip(browser, server,
                                                                                               tmp_path):
    media_files()
    admin = admin_user()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    log_in(page, server, admin.username, PASSWORD)

    # The import, from the overview page: its media check runs by itself.
    page.goto(f"{server}/admin-ui/")
    page.set_input_files("#dataset-file", str(manifest(tmp_path)))
    page.fill("#dataset-name", "lab")
    page.click("#dataset-upload [type=submit]")
    page.wait_for_selector("#dataset-upload .job-progress[data-status=succeeded]")
    dataset = Dataset.objects.get(name="lab")
    page.goto(f"{server}/admin-ui/datasets/{dataset.pk}/")
    summary = page.locator("#media-summary")
    assert "2 of 8 clips play in browsers" in summary.inner_text()
    assert "6 failed the check, 4 of them fixed by preparing playable copies" in summary.inner_text()
    for clip_id, codes in EXPECTED.items():
        for code in codes:
            row = page.locator(f"#media-problems tr[data-clip={clip_id}][data-problem={code}]")
            assert row.count() == 1, (clip_id, code)
    assert "file missing: no file lab/nowhere.mp4" in page.locator("#media-problems tr[data-clip=missing]").inner_text()
    assert "span past the end of the video: ends at 5 s" in page.locator(
        "#media-problems tr[data-clip=past_end]").inner_text()
    assert "container browsers do not play: avi" in page.locator(
        "#media-problems tr[data-clip=msvd_avi][data-problem=container]").inner_text()
    snap(page, "dataset-media-problems")

    # Playable copies, from the button beside the problems.
    page.click("#media-prepare-form [type=submit]")
    page.wait_for_function("() => (document.getElementById('media-summary') || {}).textContent"
                           "?.includes('6 of 8 clips play')")
    assert sorted(set(page.locator("#media-problems tbody tr").evaluate_all("rows => rows.map(r => r.dataset.clip)"))) == [
        "missing", "past_end"]
    prepared = {c.external_id: c for c in Clip.objects.filter(dataset=dataset)}
    assert {c for c, clip in prepared.items() if clip.original_media} == PREPARABLE
    assert all(prepared[c].original_media == CLIPS[c][1] for c in PREPARABLE)

    # A run, then a pool: refused while clips fail, built once told to leave them out.
    page.set_input_files("#run-file", _run_file(tmp_path, dataset))
    page.click("#run-upload [type=submit]")
    page.wait_for_selector("tr[data-run=model]")
    page.fill("#pool-name", "playable")
    page.fill("#pool-depth", "1")
    page.fill("#pool-redundancy", "0")
    page.click("#pool-build [type=submit]")
    page.wait_for_selector("#pool-build >> text=2 clips of 'lab' failed the media check (missing, past_end)")
    assert not Pool.objects.filter(name="playable").exists()
    page.check("#pool-skip-unplayable")
    page.click("#pool-build [type=submit]")
    page.wait_for_selector("#dataset-pools a:has-text('playable')")
    pool = Pool.objects.get(name="playable")
    pooled = set(pool.pairs.values_list("clip__external_id", flat=True))
    assert pooled == set(CLIPS) - {"missing", "past_end"}
    page.reload()  # the dataset page says which clips the pool was built without
    assert page.locator(f"[data-pool-skipped='{pool.pk}']").inner_text() == (
        "Pool playable was built without the 2 clips that failed the check: missing, past_end.")
    assert errors == []
    context.close()

    # The rater plays every clip of the pool.
    rater = rater_create(username="viewer", password=PASSWORD)
    memberships_grant(pool=pool, users=[rater])
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page.on("pageerror", lambda error: errors.append(str(error)))
    log_in(page, server, rater.username, PASSWORD)
    page.goto(f"{server}/judge/{pool.pk}/")
    played, shown = {}, None
    for _ in range(len(pooled)):
        shown = next_pair(page, after=shown and shown["pair"])
        page.wait_for_function("() => { const v = document.querySelector('video.clip.active');"
                               " return v && v.readyState >= 2 && !v.error; }")
        played[shown["caption"]] = page.evaluate("() => document.querySelector('video.clip.active').currentSrc")
        page.keyboard.press(KEYS["not_relevant"])
    texts = dict(Caption.objects.filter(dataset=dataset).values_list("text", "original_clip__external_id"))
    assert {texts[caption] for caption in played} == pooled
    for caption, src in played.items():
        clip = prepared[texts[caption]]
        assert clip.playback_url in src
    assert errors == []
    context.close()
