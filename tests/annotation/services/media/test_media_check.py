"""The media check (services/media/check.py) on a dataset of real files of each kind, a missing
file, a span past the end and URLs fetched through the outbound policy; pools refusing clips that
failed it (pools/build.py); the check a dataset import starts by itself."""
from __future__ import annotations

import http.server
import threading
from functools import partial

import pytest
from django.test import Client
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Caption, Clip, ClipMediaCheck, Job, PooledPair, Prediction, Run
from annotation.services.datasets.operations import dataset_import_start
from annotation.services.media.check import (dataset_media_check, dataset_media_state, media_check_summary,
                                             media_problem_rows)
from annotation.services.pools.build import PoolError, pool_create
from annotation.services.pools.operations import pool_build_start
from tests.factories import make_user
from tests.media_files import make_video
from tests.annotation.services.media.media_world import CLIPS, EXPECTED, PREPARABLE, lab_dataset, manifest, media_files

pytestmark = pytest.mark.django_db


def _codes(dataset) -> dict[str, list[str]]:
    return {c.clip.external_id: [p["code"] for p in c.problems]
            for c in ClipMediaCheck.objects.filter(clip__dataset=dataset).select_related("clip")}


def test_each_clip_is_named_with_its_problems_and_a_fix(tmp_path):
    dataset = lab_dataset(tmp_path)
    summary = dataset_media_check(dataset)
    codes = _codes(dataset)
    assert {clip: found for clip, found in codes.items() if found} == EXPECTED
    assert codes["plays"] == codes["segment"] == []
    assert summary | {"checked_at": None} == {
        "dataset_id": dataset.pk, "clips": 8, "checked": 8, "unchecked": 0, "changed_since": 0, "playable": 2,
        "failed": 6, "preparable": 4, "checked_at": None,
        "problems": {"container": 3, "video_codec": 2, "index_at_end": 2, "missing": 1, "span_past_end": 1}}
    rows = media_problem_rows(dataset)
    assert len(rows) == sum(len(v) for v in EXPECTED.values())
    by_clip = {(r["clip_id"], r["code"]): r for r in rows}
    assert by_clip[("missing", "missing")]["problem"] == ("file missing: no file lab/nowhere.mp4 in the media storage "
                                                         "(MEDIA_ROOT or the media bucket)")
    assert "copy the file into MEDIA_ROOT" in by_clip[("missing", "missing")]["fix"]
    assert by_clip[("past_end", "span_past_end")]["problem"] == ("span past the end of the video: ends at 5 s, the "
                                                                 "video lasts 1.5 s")
    assert by_clip[("msvd_avi", "container")]["problem"] == "container browsers do not play: avi"
    assert by_clip[("msvd_avi", "video_codec")]["problem"] == "video codec browsers do not play: mpeg4"
    assert {clip for (clip, _), r in by_clip.items() if r["preparable"]} == PREPARABLE
    check = ClipMediaCheck.objects.get(clip__external_id="no_faststart", clip__dataset=dataset)
    assert (check.container, check.video_codec, check.audio_codecs, check.index_at_front) == ("mp4", "h264", "aac",
                                                                                              False)


def test_a_clip_whose_media_changed_is_counted_and_checked_again(tmp_path):
    dataset = lab_dataset(tmp_path)
    dataset_media_check(dataset)
    Clip.objects.filter(dataset=dataset, external_id="missing").update(media="lab/plays.mp4")
    assert media_check_summary(dataset)["changed_since"] == 1
    dataset_media_check(dataset)
    assert _codes(dataset)["missing"] == []


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def test_clips_by_url_are_fetched_through_the_outbound_policy_never_by_ffmpeg(tmp_path):
    served = tmp_path / "served"
    make_video(served / "far", "avi")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(served)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        dataset = lab_dataset(tmp_path)
        base = f"http://127.0.0.1:{server.server_port}"
        for clip_id, media in (("plays", f"{base}/far.avi"), ("segment", f"{base}/gone.mp4"),
                               ("msvd_avi", "http://169.254.169.254/latest/x.mp4")):
            Clip.objects.filter(dataset=dataset, external_id=clip_id).update(media=media)
        dataset_media_check(dataset)
    finally:
        server.shutdown()
    checks = {c.clip.external_id: c for c in ClipMediaCheck.objects.filter(clip__dataset=dataset).select_related("clip")}
    assert [p["code"] for p in checks["plays"].problems] == ["container", "video_codec"]  # read from the fetched copy
    assert [(p["code"], p["message"]) for p in checks["segment"].problems] == [
        ("refused", "media URL not fetched: media URL: answered HTTP 404")]
    # A cloud metadata address: refused by the policy's address rule before any byte is sent.
    assert [p["code"] for p in checks["msvd_avi"].problems] == ["refused"]
    assert checks["msvd_avi"].problems[0]["message"].startswith("media URL not fetched: media URL")


def _run_over_every_clip(dataset) -> Run:
    run = Run.objects.create(dataset=dataset, name="model", checksum="c" * 64, depth=8)
    clips = list(dataset.clips.order_by("external_id"))
    Prediction.objects.bulk_create([
        Prediction(run=run, caption=caption, clip=clip, rank=rank, score=1 - rank / 100)
        for caption in Caption.objects.filter(dataset=dataset) for rank, clip in enumerate(clips, 1)])
    return run


def test_a_pool_refuses_clips_that_failed_unless_told_to_skip_them_and_then_names_them(
        tmp_path, django_capture_on_commit_callbacks):
    dataset = lab_dataset(tmp_path)
    run = _run_over_every_clip(dataset)
    admin = make_user("admin")
    # Never checked: nothing is held against the build.
    unchecked = pool_create(dataset=dataset, name="before the check", runs=[run], depth=8)
    assert unchecked.pairs.filter(role="pool").count() == 8 * 8
    dataset_media_check(dataset)
    with pytest.raises(PoolError) as refused:
        pool_build_start(dataset=dataset, name="round-1", run_ids=[run.pk], options={"depth": 8}, created_by=admin)
    assert refused.value.param == "skip_unplayable"
    assert str(refused.value) == (
        "6 clips of 'lab' failed the media check (didemo_mkv, missing, msvd_avi, no_faststart, past_end, quicktime): "
        "prepare them (manage.py prepare_media, or the dataset page's problems), or build with skip_unplayable to "
        "leave them out")
    with pytest.raises(PoolError, match="6 clips of 'lab' failed the media check"):
        pool_create(dataset=dataset, name="round-1", runs=[run], depth=8)
    with django_capture_on_commit_callbacks(execute=True):
        job = pool_build_start(dataset=dataset, name="round-1", run_ids=[run.pk],
                               options={"depth": 8, "skip_unplayable": True}, created_by=admin)
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.errors
    assert job.result["skipped_unplayable"] == {
        "count": 6, "clip_ids": ["didemo_mkv", "missing", "msvd_avi", "no_faststart", "past_end", "quicktime"]}
    pooled = set(PooledPair.objects.filter(pool_id=job.result["pool_id"]).values_list("clip__external_id", flat=True))
    assert pooled == {"plays", "segment"}
    assert job.result["pairs"] == 8 * 2
    assert dataset_media_state(dataset)["pools_without_failed_clips"] == [{
        "pool_id": job.result["pool_id"], "pool": "round-1", "count": 6,
        "clip_ids": ["didemo_mkv", "missing", "msvd_avi", "no_faststart", "past_end", "quicktime"]}]
    # The pool itself says how many and which, on its page too.
    from annotation.models import Pool
    from annotation.services.media.check import pool_clips_left_out

    left_out = pool_clips_left_out(Pool.objects.get(pk=job.result["pool_id"]))
    assert (left_out["count"], left_out["clip_ids"][0]) == (6, "didemo_mkv")
    client = Client()
    client.force_login(admin)
    page = client.get(f"/admin-ui/pools/{job.result['pool_id']}/").content.decode()
    assert ("Built leaving out 6 clips that failed the media check: didemo_mkv, missing, msvd_avi, no_faststart, "
            "past_end, quicktime.") in page
    assert pool_clips_left_out(Pool(pk=job.result["pool_id"] + 1)) is None  # a pool that left none out


def test_a_dataset_import_starts_the_media_check_by_itself(tmp_path, django_capture_on_commit_callbacks):
    media_files()
    admin = make_user("admin")
    upload = SimpleUploadedFile("lab.jsonl", manifest(tmp_path).read_bytes())
    with django_capture_on_commit_callbacks(execute=True):  # the import's job, then the check it queues
        job, _ = dataset_import_start(uploaded_file=upload, name="uploaded", fmt=None, media_template="",
                                      description="", created_by=admin)
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.errors
    check = Job.objects.get(pk=job.result["media_check_job_id"])
    assert (check.operation, check.status, check.created_by) == ("check_media", Job.Status.SUCCEEDED, admin)
    assert check.result["failed"] == len(EXPECTED)
    assert ClipMediaCheck.objects.filter(clip__dataset_id=job.result["dataset_id"]).count() == len(CLIPS)
