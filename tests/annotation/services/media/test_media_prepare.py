"""Playable copies (services/media/prepare.py): what browsers cannot play is converted, the clip
keeps its original reference, a resumed run skips what is done, cut copies keep the clip's span
and the media bucket receives the copies when media is stored there."""
from __future__ import annotations

import http.server
import threading
from functools import partial
from pathlib import Path

import pytest
from django.conf import settings

from annotation.formats.media_files import media_info
from annotation.models import Clip, ClipMediaCheck, Run
from annotation.services.media.check import dataset_media_check
from annotation.services.media.prepare import PrepareError, dataset_media_prepare
from annotation.storage.files import area_is_local, stored_file_copy_in
from tests.annotation.services.media.media_world import CLIPS, EXPECTED, PREPARABLE, lab_dataset
from tests.media_files import make_video
from tests.objectstore import object_store  # noqa: F401 (the session fixture)

pytestmark = pytest.mark.django_db


def _clips(dataset) -> dict[str, Clip]:
    return {c.external_id: c for c in Clip.objects.filter(dataset=dataset).select_related("media_check")}


def test_what_browsers_cannot_play_is_converted_and_the_original_reference_kept(tmp_path):
    dataset = lab_dataset(tmp_path)
    dataset_media_check(dataset)
    done = dataset_media_prepare(dataset)
    assert (done["prepared"], done["copies"], done["already_prepared"], done["not_preparable"], done["failed"]) == (
        4, 4, 0, 2, [])
    clips = _clips(dataset)
    for clip_id, clip in clips.items():
        if clip_id in PREPARABLE:
            assert clip.original_media == CLIPS[clip_id][1]
            assert clip.media.startswith(f"prepared/{dataset.pk}/") and clip.media.endswith(".mp4")
            assert clip.media_check.playable and clip.media_check.media == clip.media
            info = media_info(Path(settings.MEDIA_ROOT) / clip.media)  # the copy itself, read afresh
            assert (info.container, info.video_codec, info.index_at_front) == ("mp4", "h264", True)
        else:
            assert (clip.original_media, clip.media) == ("", CLIPS[clip_id][1])
    assert clips["no_faststart"].media_check.audio_codecs == "aac"  # moved, not re-encoded: the sound is kept
    assert not clips["missing"].media_check.playable and not clips["past_end"].media_check.playable
    assert done["check"]["playable"] == 6 and done["check"]["failed"] == 2
    # The original files are left as they were.
    assert all((Path(settings.MEDIA_ROOT) / CLIPS[c][1]).is_file() for c in PREPARABLE)


def test_a_second_run_skips_the_clips_already_prepared_and_an_interrupted_one_reuses_its_copy(tmp_path):
    dataset = lab_dataset(tmp_path)
    first = dataset_media_prepare(dataset)  # checks the clips never checked first
    assert first["prepared"] == 4
    again = dataset_media_prepare(dataset)
    assert (again["prepared"], again["already_prepared"]) == (0, 4)
    # Interrupted after the copy was stored, before the clip was changed: the copy is used as it is.
    clip = Clip.objects.get(dataset=dataset, external_id="msvd_avi")
    copy = Path(settings.MEDIA_ROOT) / clip.media
    stamp = copy.stat().st_mtime_ns
    Clip.objects.filter(pk=clip.pk).update(media=clip.original_media, original_media="")
    dataset_media_check(dataset)
    resumed = dataset_media_prepare(dataset)
    assert resumed["prepared"] == 1
    assert Clip.objects.get(pk=clip.pk).media == clip.media and copy.stat().st_mtime_ns == stamp


def test_cut_copies_hold_the_span_with_its_margin_and_the_clip_plays_the_same_seconds(tmp_path):
    dataset = lab_dataset(tmp_path)
    done = dataset_media_prepare(dataset, cut=True, margin=0.25, height=32)
    clips = _clips(dataset)
    segment = clips["segment"]  # span 0.2-0.9 of a 1.5 s video: cut 0.0-1.15 (the start cannot go below 0)
    assert (segment.original_media, segment.media_offset) == ("lab/plays.mp4", 0.0)
    assert (segment.start, segment.end) == pytest.approx((0.2, 0.9))
    info = media_info(Path(settings.MEDIA_ROOT) / segment.media)
    assert info.duration == pytest.approx(1.15, abs=0.15) and info.height == 32
    assert clips["plays"].original_media == ""  # no span, already plays: left as it is
    assert clips["past_end"].original_media == ""  # a span past the end is fixed in the dataset, not cut
    assert done["prepared"] == 5  # segment and the four that fail for their format


def test_a_cut_span_that_starts_later_moves_the_clips_start_and_end_by_the_offset(tmp_path):
    dataset = lab_dataset(tmp_path)
    Clip.objects.filter(dataset=dataset, external_id="segment").update(start=0.8, end=1.2)
    dataset_media_prepare(dataset, cut=True, margin=0.5)
    segment = _clips(dataset)["segment"]
    assert segment.media_offset == pytest.approx(0.3)
    assert (segment.start, segment.end) == pytest.approx((0.5, 0.9))


def test_cutting_is_refused_for_a_dataset_with_moment_runs(tmp_path):
    dataset = lab_dataset(tmp_path)
    Run.objects.create(dataset=dataset, name="moments", checksum="m" * 64, depth=1, kind=Run.Kind.MOMENT)
    with pytest.raises(PrepareError, match="has moment runs") as refused:
        dataset_media_prepare(dataset, cut=True)
    assert refused.value.param == "cut"
    assert not ClipMediaCheck.objects.filter(clip__dataset=dataset).exists()


@pytest.mark.objectstore
def test_with_media_in_a_bucket_the_check_reads_it_there_and_the_copies_go_there(tmp_path, settings, object_store):  # noqa: F811
    dataset = lab_dataset(tmp_path)  # the files made under MEDIA_ROOT, then moved into the bucket
    bucket = object_store.new_bucket()
    settings.STORAGES = settings.STORAGES | object_store.storages(bucket, areas=("media",))
    assert not area_is_local("media")
    for _, path, _ in CLIPS.values():
        local = Path(settings.MEDIA_ROOT) / path
        if local.is_file():
            stored_file_copy_in("media", path, local)
    for path in {p for _, p, _ in CLIPS.values()}:
        (Path(settings.MEDIA_ROOT) / path).unlink(missing_ok=True)
    dataset_media_check(dataset)
    assert {c: [p["code"] for p in clip.media_check.problems] for c, clip in _clips(dataset).items()
            if not clip.media_check.playable} == EXPECTED
    dataset_media_prepare(dataset)
    keys = {o["Key"] for o in object_store.client().list_objects_v2(Bucket=bucket).get("Contents", [])}
    clips = _clips(dataset)
    for clip_id in PREPARABLE:
        assert any(key.endswith(clips[clip_id].media) for key in keys), (clips[clip_id].media, keys)
        assert clips[clip_id].media_check.playable
    assert not (Path(settings.MEDIA_ROOT) / "prepared").exists()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def test_a_clip_by_url_is_fetched_through_the_outbound_policy_and_its_copy_kept_in_the_media_storage(tmp_path):
    served = tmp_path / "served"
    make_video(served / "far", "avi")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(served)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/far.avi"
    try:
        dataset = lab_dataset(tmp_path)
        Clip.objects.filter(dataset=dataset, external_id="plays").update(media=url)
        dataset_media_prepare(dataset)
    finally:
        server.shutdown()
    clip = _clips(dataset)["plays"]
    assert clip.original_media == url and clip.media.startswith(f"prepared/{dataset.pk}/far-")
    assert clip.media_check.playable
    assert media_info(Path(settings.MEDIA_ROOT) / clip.media).video_codec == "h264"
