"""Frames of a clip for a machine judge: N instants spread evenly over the clip's span, cut as
JPEG by the ffmpeg binary the imageio-ffmpeg wheel ships. No Django.

The instants are the centres of N equal slices of [start, end] (start + (i + 1/2)(end - start)/N),
so the first and last frames are never the black or fading edges of a cut. The sampling spec
(`sampling_spec`) names everything that changes the pixels sent: a cached verdict is reused only
for the same spec.

ffmpeg reads local files only, and only containers of video: every call passes
`-protocol_whitelist file` (no http, tcp, udp, pipe to other processes, concat, data, ...) and
`-format_whitelist` VIDEO_DEMUXERS (no playlist demuxer: HLS, DASH, concat, whose entries could
name other files or addresses). A clip referenced by URL is fetched first by the caller through
the outbound policy (annotation/services/outbound.py), never by ffmpeg. A failure says which rule
refused or that the file is no readable video, never ffmpeg's own text (which can quote what a
remote server sent); that text goes to the log at debug level.
"""
from __future__ import annotations

import logging
import re
import subprocess
import tempfile
from pathlib import Path

import imageio_ffmpeg

log = logging.getLogger(__name__)

JPEG_QUALITY = 4  # ffmpeg's -q:v for mjpeg: 2 (best) .. 31; 4 keeps colours and edges clean
FRAME_WIDTH = 336  # pixels; what Qwen2.5-VL / LLaVA tile at, and small enough to send 8 per request
# Demuxers of video files (names as `ffmpeg -demuxers` lists them; the mov demuxer reads mp4 too).
VIDEO_DEMUXERS = ("mov", "mp4", "matroska", "webm", "avi", "mpegts", "mpeg", "ogg", "flv", "asf", "m4v", "h264", "hevc",
                  "mjpeg", "gif")
PLAYLIST_MARKERS = (b"#EXTM3U", b"<?xml", b"<MPD", b"ffconcat")


class FrameError(RuntimeError):
    """The clip's frames could not be cut; the message names the file and the rule or problem."""


def _local_video(path: Path | str) -> Path:
    """The local file ffmpeg may read, or FrameError naming the rule that refuses it."""
    text = str(path)
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", text) and not re.match(r"^[a-zA-Z]:[\\/]", text):
        raise FrameError("ffmpeg reads local files only: a clip referenced by URL is fetched through the outbound "
                         "policy first")
    local = Path(text)
    try:
        with local.open("rb") as f:
            head = f.read(512).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        raise FrameError(f"{local.name}: the file cannot be read") from None
    if head.startswith(PLAYLIST_MARKERS) or b"#EXT-X-" in head:
        raise FrameError(f"{local.name}: a playlist (HLS, DASH or concat), not a video file; playlists are refused")
    return local


def _ffmpeg_input() -> list[str]:
    """ffmpeg's input options that keep it to the local file and to video demuxers."""
    return ["-protocol_whitelist", "file", "-format_whitelist", ",".join(VIDEO_DEMUXERS)]


def _failed(local: Path, done: subprocess.CompletedProcess) -> FrameError:
    log.debug("ffmpeg failed on %s: %s", local.name, done.stderr.decode(errors="replace")[-2000:])
    return FrameError(f"{local.name}: ffmpeg could not read it as a video (not a video container it accepts, or damaged)")


def frame_times(start: float, end: float, n: int) -> list[float]:
    if n < 1:
        raise ValueError("at least one frame")
    if not end > start >= 0:
        raise ValueError(f"a span needs 0 <= start < end, not [{start}, {end}]")
    step = (end - start) / n
    return [start + (i + 0.5) * step for i in range(n)]


def sampling_spec(*, n: int, start: float, end: float, width: int = FRAME_WIDTH, quality: int = JPEG_QUALITY) -> str:
    return f"even:{n}@{start:.3f}-{end:.3f};jpeg:w{width}q{quality}"


def video_seconds(path: Path | str, *, timeout: float = 300) -> float:
    """The video's length as ffmpeg reads it, decoding its first video stream to the end (what
    imageio_ffmpeg.count_frames_and_secs does, under the input rules above; use a known duration
    when there is one)."""
    local = _local_video(path)
    command = [imageio_ffmpeg.get_ffmpeg_exe(), "-nostdin", *_ffmpeg_input(), "-i", str(local), "-map", "0:v:0",
               "-vf", "null", "-f", "null", "-"]
    try:
        done = subprocess.run(command, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise FrameError(f"{local.name}: ffmpeg did not finish within {timeout:.0f}s") from exc
    times = re.findall(rb"time=(\d+):(\d\d):(\d\d(?:\.\d+)?)", done.stderr)
    if done.returncode != 0 or not times:
        raise _failed(local, done)
    hours, minutes, seconds = times[-1]
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def extract_frames(path: Path | str, times: list[float], *, width: int = FRAME_WIDTH, quality: int = JPEG_QUALITY,
                   timeout: float = 120) -> list[bytes]:
    """One JPEG per instant, in order: one ffmpeg process that seeks to each instant (an input per
    instant, `-ss` before `-i`: a keyframe seek, then decoding up to the instant) and writes one
    file per instant (outputs sharing one pipe would interleave in no fixed order). `path` is a
    local file (see the module docstring)."""
    path = _local_video(path)
    with tempfile.TemporaryDirectory(prefix="rejudge-frames-") as folder:
        command = [imageio_ffmpeg.get_ffmpeg_exe(), "-nostdin", "-loglevel", "error", "-y"]
        for t in times:
            command += [*_ffmpeg_input(), "-ss", f"{t:.3f}", "-i", str(path)]
        targets = [Path(folder) / f"{i:04d}.jpg" for i in range(len(times))]
        for i, target in enumerate(targets):
            command += ["-map", f"{i}:v:0", "-frames:v", "1", "-vf", f"scale={width}:-2", "-q:v", str(quality),
                        "-update", "1", str(target)]
        try:
            done = subprocess.run(command, capture_output=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise FrameError(f"{path.name}: ffmpeg did not finish within {timeout:.0f}s") from exc
        if done.returncode != 0:
            raise _failed(path, done)
        missing = [t for t, target in zip(times, targets) if not target.is_file() or not target.stat().st_size]
        if missing:
            raise FrameError(f"{path.name}: ffmpeg gave no frame at {', '.join(f'{t:.3f}s' for t in missing)} "
                             "(past the end of the video?)")
        return [target.read_bytes() for target in targets]
