"""annotation/formats/media_files.py on real files made with the project's ffmpeg: what each is,
what keeps a browser from playing it, and the copies that do play. Expected values are what the
files were made as (tests/media_files.py), never what the module reports for another file."""
from __future__ import annotations

import struct

import pytest

from annotation.formats import media_files as mf
from tests.media_files import SECONDS, make_video


@pytest.mark.parametrize("kind, container, video, audio, problems", [
    ("mp4", "mp4", "h264", (), []),
    ("mp4_aac", "mp4", "h264", ("aac",), []),
    ("mp4_index_at_end", "mp4", "h264", ("aac",), [mf.INDEX_AT_END]),
    ("avi", "avi", "mpeg4", (), [mf.CONTAINER, mf.VIDEO_CODEC]),
    ("mkv", "matroska", "h264", (), [mf.CONTAINER]),
    ("mov", "mov", "mjpeg", (), [mf.CONTAINER, mf.VIDEO_CODEC, mf.INDEX_AT_END]),
])
def test_each_kind_of_file_is_named_with_what_keeps_browsers_from_playing_it(tmp_path, kind, container, video, audio,
                                                                            problems):
    info = mf.media_info(make_video(tmp_path / kind, kind))
    assert (info.container, info.video_codec, info.audio_codecs) == (container, video, audio)
    assert info.duration == pytest.approx(SECONDS, abs=0.05)
    assert (info.width, info.height) == (64, 48)
    assert mf.playback_problems(info) == problems


def _box(kind: bytes, payload: bytes = b"") -> bytes:
    return struct.pack(">I4s", 8 + len(payload), kind) + payload


def test_the_index_position_is_read_from_the_top_level_boxes(tmp_path):
    front, end, neither = tmp_path / "front.mp4", tmp_path / "end.mp4", tmp_path / "neither.mp4"
    front.write_bytes(_box(b"ftyp", b"isom") + _box(b"moov", b"x" * 20) + _box(b"mdat", b"y" * 50))
    end.write_bytes(_box(b"ftyp", b"isom") + _box(b"free") + _box(b"mdat", b"y" * 50) + _box(b"moov", b"x" * 20))
    neither.write_bytes(_box(b"ftyp", b"isom") + _box(b"free"))
    assert (mf.mp4_index_at_front(front), mf.mp4_index_at_front(end), mf.mp4_index_at_front(neither)) == (True, False, None)
    # A 64-bit size (size field 1) is followed, not read as the next box.
    large = tmp_path / "large.mp4"
    large.write_bytes(_box(b"ftyp", b"isom") + struct.pack(">I4sQ", 1, b"mdat", 16 + 30) + b"z" * 30 + _box(b"moov"))
    assert mf.mp4_index_at_front(large) is False


def test_a_stream_listing_is_parsed_a_cover_picture_is_no_video_and_webm_is_told_from_matroska():
    text = ("Input #0, matroska,webm, from 'x.webm':\n  Duration: 00:01:02.50, start: 0.000000, bitrate: 1 kb/s\n"
            "  Stream #0:0: Video: png, rgb24, 600x600 (attached pic)\n"
            "  Stream #0:1(eng): Video: vp9 (Profile 0), yuv420p(tv), 640x360, SAR 1:1 DAR 16:9, 25 fps (default)\n"
            "  Stream #0:2(eng): Audio: opus, 48000 Hz, stereo, fltp (default)\n")
    head = b"\x1aE\xdf\xa3\x9fB\x86\x81\x01B\xf7\x81\x01B\xf2\x81\x04B\xf3\x81\x08B\x82\x84webm"
    info = mf.media_info_parse(text, head)
    assert info == mf.MediaInfo(container="webm", video_codec="vp9", audio_codecs=("opus",), duration=62.5,
                                width=640, height=360)
    assert mf.playback_problems(info) == []
    assert mf.media_info_parse(text, head.replace(b"webm", b"mkvx")).container == "matroska"
    assert mf.media_info_parse("x.txt: Invalid data found when processing input\n") is None


def test_what_is_not_a_local_video_is_refused_without_quoting_ffmpeg(tmp_path):
    text = tmp_path / "notes.mp4"
    text.write_text("not a video at all\n" * 20)
    with pytest.raises(mf.MediaError, match=r"^notes.mp4: ffmpeg could not read it as a video"):
        mf.media_info(text)
    playlist = tmp_path / "list.mp4"
    playlist.write_text("#EXTM3U\n#EXT-X-VERSION:3\nhttp://example.org/a.ts\n")
    with pytest.raises(mf.MediaError, match="playlist"):
        mf.media_info(playlist)
    with pytest.raises(mf.MediaError, match="local files only"):
        mf.media_info("http://example.org/a.mp4")


@pytest.mark.parametrize("kind", ["avi", "mkv", "mov", "mp4_index_at_end"])
def test_a_transcoded_copy_plays_in_browsers(tmp_path, kind):
    copy = tmp_path / "copy.mp4"
    mf.transcode(make_video(tmp_path / kind, kind), copy)
    info = mf.media_info(copy)
    assert (info.container, info.video_codec, info.index_at_front) == ("mp4", "h264", True)
    assert info.audio_codecs == (("aac",) if kind == "mp4_index_at_end" else ())
    assert mf.playback_problems(info) == []
    assert info.duration == pytest.approx(SECONDS, abs=0.15)


def test_a_copy_cut_to_a_span_and_scaled_lasts_the_span_at_that_height(tmp_path):
    copy = tmp_path / "cut.mp4"
    mf.transcode(make_video(tmp_path / "a", "avi"), copy, start=0.5, end=1.2, height=32)
    info = mf.media_info(copy)
    assert info.duration == pytest.approx(0.7, abs=0.15)
    assert (info.width, info.height) == (42, 32)  # 64x48 scaled to 32 lines: 42.67 wide, rounded to even
    big = tmp_path / "never-up.mp4"
    mf.transcode(make_video(tmp_path / "b", "mkv"), big, height=480)
    assert (mf.media_info(big).width, mf.media_info(big).height) == (64, 48)


def test_moving_the_index_keeps_the_streams_untouched(tmp_path):
    source = make_video(tmp_path / "slow", "mp4_index_at_end")
    copy = tmp_path / "fast.mp4"
    mf.remux_faststart(source, copy)
    before, after = mf.media_info(source), mf.media_info(copy)
    assert (before.index_at_front, after.index_at_front) == (False, True)
    assert (after.video_codec, after.audio_codecs, after.duration) == (before.video_codec, before.audio_codecs,
                                                                      before.duration)
