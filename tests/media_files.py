"""Tiny videos (64x48, 1.5 s) the media tests make with the project's ffmpeg, one of each kind a
benchmark ships that browsers cannot play, and one they can."""
from __future__ import annotations

import subprocess
from pathlib import Path

import imageio_ffmpeg

SECONDS = 1.5
_PICTURE = ["-f", "lavfi", "-i", f"testsrc=size=64x48:rate=10:duration={SECONDS}"]
_SOUND = ["-f", "lavfi", "-i", f"sine=frequency=440:duration={SECONDS}"]
_H264 = ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"]
KINDS = {
    # kind: (file suffix, ffmpeg output options)
    "mp4": (".mp4", [*_H264, "-movflags", "+faststart"]),
    "mp4_aac": (".mp4", [*_SOUND, *_H264, "-c:a", "aac", "-shortest", "-movflags", "+faststart"]),
    "mp4_index_at_end": (".mp4", [*_SOUND, *_H264, "-c:a", "aac", "-shortest"]),  # no faststart: moov after mdat
    "avi": (".avi", ["-c:v", "mpeg4"]),  # MSVD's container and codec (MPEG-4 Part 2)
    "mkv": (".mkv", _H264),  # H.264, but in Matroska
    "mov": (".mov", ["-c:v", "mjpeg"]),  # QuickTime with Motion JPEG
}


def make_video(target: Path, kind: str) -> Path:
    suffix, options = KINDS[kind]
    target = Path(target).with_suffix(suffix)
    target.parent.mkdir(parents=True, exist_ok=True)
    inputs, outputs = (options[:4], options[4:]) if options[:1] == ["-f"] else ([], options)
    subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-nostdin", "-y", "-loglevel", "error", *_PICTURE, *inputs,
                    *outputs, str(target)], check=True, capture_output=True, timeout=60)
    return target
