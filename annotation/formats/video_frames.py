"""Frames of a clip for a machine judge: N instants spread evenly over the clip's span, cut as
JPEG by the ffmpeg binary the imageio-ffmpeg wheel ships. No Django.

The instants are the centres of N equal slices of [start, end] (start + (i + 1/2)(end - start)/N),
so the first and last frames are never the black or fading edges of a cut. The sampling spec
(`sampling_spec`) names everything that changes the pixels sent: a cached verdict is reused only
for the same spec.
"""
from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

import imageio_ffmpeg

JPEG_QUALITY = 4  # ffmpeg's -q:v for mjpeg: 2 (best) .. 31; 4 keeps colours and edges clean
FRAME_WIDTH = 336  # pixels; what Qwen2.5-VL / LLaVA tile at, and small enough to send 8 per request


class _Url(str):
    @property
    def name(self) -> str:
        return self.rsplit("/", 1)[-1].split("?", 1)[0]


class FrameError(RuntimeError):
    """The clip's frames could not be cut; the message names the file and ffmpeg's complaint."""


def frame_times(start: float, end: float, n: int) -> list[float]:
    if n < 1:
        raise ValueError("at least one frame")
    if not end > start >= 0:
        raise ValueError(f"a span needs 0 <= start < end, not [{start}, {end}]")
    step = (end - start) / n
    return [start + (i + 0.5) * step for i in range(n)]


def sampling_spec(*, n: int, start: float, end: float, width: int = FRAME_WIDTH, quality: int = JPEG_QUALITY) -> str:
    return f"even:{n}@{start:.3f}-{end:.3f};jpeg:w{width}q{quality}"


def video_seconds(path: Path | str) -> float:
    """The video's length as ffmpeg reads it (decodes the file: use a known duration when there is one)."""
    _frames, seconds = imageio_ffmpeg.count_frames_and_secs(str(path))
    return float(seconds)


def extract_frames(path: Path | str, times: list[float], *, width: int = FRAME_WIDTH, quality: int = JPEG_QUALITY,
                   timeout: float = 120) -> list[bytes]:
    """One JPEG per instant, in order: one ffmpeg process that seeks to each instant (an input per
    instant, `-ss` before `-i`: a keyframe seek, then decoding up to the instant) and writes one
    file per instant (outputs sharing one pipe would interleave in no fixed order). `path` may be
    an http(s) URL, which ffmpeg reads itself."""
    path = Path(path) if not re.match(r"^https?://", str(path), re.IGNORECASE) else _Url(str(path))
    with tempfile.TemporaryDirectory(prefix="rejudge-frames-") as folder:
        command = [imageio_ffmpeg.get_ffmpeg_exe(), "-nostdin", "-loglevel", "error", "-y"]
        for t in times:
            command += ["-ss", f"{t:.3f}", "-i", str(path)]
        targets = [Path(folder) / f"{i:04d}.jpg" for i in range(len(times))]
        for i, target in enumerate(targets):
            command += ["-map", f"{i}:v:0", "-frames:v", "1", "-vf", f"scale={width}:-2", "-q:v", str(quality),
                        "-update", "1", str(target)]
        try:
            done = subprocess.run(command, capture_output=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise FrameError(f"{path.name}: ffmpeg did not finish within {timeout:.0f}s") from exc
        if done.returncode != 0:
            raise FrameError(f"{path.name}: ffmpeg failed: {done.stderr.decode(errors='replace')[-500:]}")
        missing = [t for t, target in zip(times, targets) if not target.is_file() or not target.stat().st_size]
        if missing:
            raise FrameError(f"{path.name}: ffmpeg gave no frame at {', '.join(f'{t:.3f}s' for t in missing)} "
                             "(past the end of the video?)")
        return [target.read_bytes() for target in targets]
