"""What a video file is, whether a browser plays it, and making one that does. No Django.

Read with the project's ffmpeg (the imageio-ffmpeg wheel's binary; there is no ffprobe) under the
rules of video_frames.py: local files only (`-protocol_whitelist file`), video demuxers only (no
playlists), ffmpeg's own text never quoted in an error (it can quote what a remote server sent; it
goes to the log at debug level). A clip referenced by URL is fetched by the caller through the
outbound policy first.

- `media_info(path)`: container, video and audio codecs, duration (parsed from the stream lines
  `ffmpeg -hide_banner -i FILE` prints), and for MP4/MOV whether the index (`moov` box) comes
  before the media data (`mdat`), read from the top-level boxes in Python: an MP4 whose index is at
  the end cannot start playing until the browser has it, which over HTTP means the whole file.
- `playback_problems(info)`: what keeps a browser from playing it, as codes (PLAYABLE_* below).
  What every current browser plays: MP4 or WebM holding H.264, VP9 or AV1 video and AAC or Opus
  audio, or no audio (Chromium does not play AVI, MKV, QuickTime MOV, MPEG-4 Part 2, ...).
- `transcode(src, dest, ...)`: an H.264/AAC MP4 with its index at the front (`+faststart`),
  optionally cut to a span and scaled to a height; `remux_faststart` only moves the index.
"""
from __future__ import annotations

import logging
import re
import struct
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

import imageio_ffmpeg

from annotation.formats.video_frames import FrameError, _ffmpeg_input, _local_video

log = logging.getLogger(__name__)

BROWSER_CONTAINERS = ("mp4", "webm")
BROWSER_VIDEO_CODECS = ("h264", "vp9", "av1")
BROWSER_AUDIO_CODECS = ("aac", "opus")

# Problem codes (what the media check stores and the pages explain).
CONTAINER = "container"
VIDEO_CODEC = "video_codec"
AUDIO_CODEC = "audio_codec"
NO_VIDEO = "no_video"
INDEX_AT_END = "index_at_end"
NO_DURATION = "no_duration"

MediaError = FrameError  # one error for "ffmpeg cannot read this" across the media modules


@dataclass(frozen=True)
class MediaInfo:
    #: mp4, mov (QuickTime), webm, matroska, avi, ... (ffmpeg's demuxer name, told apart by the
    #: file's own brand where one demuxer reads several containers).
    container: str
    video_codec: str | None
    audio_codecs: tuple[str, ...]
    duration: float | None
    width: int | None = None
    height: int | None = None
    #: MP4/MOV: the `moov` box comes before the first `mdat`; None for other containers.
    index_at_front: bool | None = None

    def as_dict(self) -> dict:
        return asdict(self) | {"audio_codecs": list(self.audio_codecs)}


def _boxes(f, limit: int = 64) -> list[bytes]:
    """The types of a file's top-level ISO-BMFF boxes, in order (at most `limit`)."""
    types, offset = [], 0
    f.seek(0, 2)
    end = f.tell()
    while offset + 8 <= end and len(types) < limit:
        f.seek(offset)
        size, kind = struct.unpack(">I4s", f.read(8))
        if size == 1:  # a 64-bit size follows the type
            size = struct.unpack(">Q", f.read(8))[0]
        elif size == 0:  # the box runs to the end of the file
            size = end - offset
        if size < 8:
            break  # damaged: stop rather than loop
        types.append(kind)
        offset += size
    return types


def mp4_index_at_front(path: Path | str) -> bool | None:
    """True when the `moov` box precedes the first `mdat` (a browser can start at once), False when
    it follows it, None when the file has neither (not an ISO-BMFF file, or damaged)."""
    with open(path, "rb") as f:
        types = _boxes(f)
    if b"moov" not in types or b"mdat" not in types:
        return None
    return types.index(b"moov") < types.index(b"mdat")


def _container(demuxer: str, head: bytes) -> str:
    """The container's name: ffmpeg's demuxer list, told apart by the file's own header where one
    demuxer reads several (mov,mp4,...: the `ftyp` brand; matroska,webm: the EBML DocType)."""
    first = demuxer.split(",")[0]
    if first == "mov":
        brand = head[8:12] if head[4:8] == b"ftyp" else b""
        return "mov" if brand in (b"qt  ", b"") else "mp4"
    if first == "matroska":
        at = head.find(b"\x42\x82")  # DocType element
        return "webm" if at >= 0 and head[at + 3:at + 7] == b"webm" else "matroska"
    return first


_INPUT = re.compile(r"^Input #0, ([^ ]+), from ", re.MULTILINE)
_DURATION = re.compile(r"^\s+Duration: (\d+):(\d\d):(\d\d(?:\.\d+)?)", re.MULTILINE)
_STREAM = re.compile(r"^\s+Stream #0:\d+\S*: (Video|Audio): ([A-Za-z0-9_]+)(.*)$", re.MULTILINE)
_SIZE = re.compile(r", (\d{1,5})x(\d{1,5})\b")


def media_info_parse(text: str, head: bytes = b"") -> MediaInfo | None:
    """MediaInfo from what `ffmpeg -hide_banner -i FILE` printed (None when it names no input).
    `head`: the file's first bytes, to tell containers one demuxer reads apart."""
    found = _INPUT.search(text)
    if not found:
        return None
    duration = None
    if (d := _DURATION.search(text)) is not None:
        duration = int(d.group(1)) * 3600 + int(d.group(2)) * 60 + float(d.group(3))
    video, audio, width, height = None, [], None, None
    for kind, codec, rest in _STREAM.findall(text):
        if kind == "Video" and video is None and "(attached pic)" not in rest:  # a cover image is no video
            video = codec
            if (size := _SIZE.search(rest)) is not None:
                width, height = int(size.group(1)), int(size.group(2))
        elif kind == "Audio":
            audio.append(codec)
    return MediaInfo(container=_container(found.group(1), head), video_codec=video, audio_codecs=tuple(audio),
                     duration=duration if duration else None, width=width, height=height)


def media_info(path: Path | str, *, timeout: float = 60) -> MediaInfo:
    """What the file is (see the module docstring); MediaError when ffmpeg cannot read it as video."""
    local = _local_video(path)
    command = [imageio_ffmpeg.get_ffmpeg_exe(), "-nostdin", "-hide_banner", *_ffmpeg_input(), "-i", str(local)]
    try:
        # Without an output ffmpeg exits 1 after describing the input: the description is the answer.
        done = subprocess.run(command, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise MediaError(f"{local.name}: ffmpeg did not finish within {timeout:.0f}s") from exc
    text = done.stderr.decode(errors="replace")
    with local.open("rb") as f:
        head = f.read(64)
    info = media_info_parse(text, head)
    if info is None:
        log.debug("ffmpeg could not read %s: %s", local.name, text[-2000:])
        raise MediaError(f"{local.name}: ffmpeg could not read it as a video (not a video container it accepts, "
                         "or damaged)")
    if info.container in ("mp4", "mov"):
        info = MediaInfo(**{**info.__dict__, "index_at_front": mp4_index_at_front(local)})
    return info


def playback_problems(info: MediaInfo) -> list[str]:
    """The codes of what keeps a browser from playing the file (empty: it plays)."""
    problems = []
    if info.container not in BROWSER_CONTAINERS:
        problems.append(CONTAINER)
    if info.video_codec is None:
        problems.append(NO_VIDEO)
    elif info.video_codec not in BROWSER_VIDEO_CODECS:
        problems.append(VIDEO_CODEC)
    if any(codec not in BROWSER_AUDIO_CODECS for codec in info.audio_codecs):
        problems.append(AUDIO_CODEC)
    if info.index_at_front is False:
        problems.append(INDEX_AT_END)
    if info.duration is None:
        problems.append(NO_DURATION)
    return problems


def _run(command: list[str], src: Path, timeout: float) -> None:
    try:
        done = subprocess.run(command, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise MediaError(f"{src.name}: ffmpeg did not finish within {timeout:.0f}s") from exc
    if done.returncode != 0:
        log.debug("ffmpeg failed on %s: %s", src.name, done.stderr.decode(errors="replace")[-2000:])
        raise MediaError(f"{src.name}: ffmpeg could not convert it (not a video container it accepts, or damaged)")


def transcode(src: Path | str, dest: Path | str, *, start: float | None = None, end: float | None = None,
              height: int | None = None, crf: int = 23, timeout: float = 3600) -> None:
    """Writes `dest`: H.264 (yuv420p, what every browser decodes) with AAC audio when the source has
    sound, in an MP4 whose index is at the front. `start`/`end` cut it to that span (seconds of the
    source); `height` scales it down to that many lines (never up; width even, aspect kept)."""
    local = _local_video(src)
    command = [imageio_ffmpeg.get_ffmpeg_exe(), "-nostdin", "-loglevel", "error", "-y", *_ffmpeg_input()]
    if start is not None:
        command += ["-ss", f"{start:.3f}"]
    command += ["-i", str(local)]
    if start is not None and end is not None:
        command += ["-t", f"{end - start:.3f}"]
    # Even dimensions (yuv420p needs them); scaled down to `height` lines when asked.
    scale = f"scale=-2:'min({height},ih)'" if height else "scale=trunc(iw/2)*2:trunc(ih/2)*2"
    command += ["-map", "0:v:0", "-map", "0:a:0?", "-vf", scale, "-c:v", "libx264", "-preset", "veryfast",
                "-crf", str(crf), "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "128k", "-movflags", "+faststart",
                "-f", "mp4", str(dest)]
    _run(command, local, timeout)


def remux_faststart(src: Path | str, dest: Path | str, *, timeout: float = 600) -> None:
    """Writes `dest`: the same streams, untouched, in an MP4 with its index moved to the front."""
    local = _local_video(src)
    command = [imageio_ffmpeg.get_ffmpeg_exe(), "-nostdin", "-loglevel", "error", "-y", *_ffmpeg_input(),
               "-i", str(local), "-map", "0", "-c", "copy", "-movflags", "+faststart", "-f", "mp4", str(dest)]
    _run(command, local, timeout)
