"""A dataset whose clips are one of each kind the media check tells apart (tests/media_files.py),
imported from a manifest as an admin would import it."""
from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings

from annotation.services.datasets.imports import dataset_import
from tests.media_files import make_video

#: clip id -> (file kind or None for a file that is not there, its path under MEDIA_ROOT, span)
CLIPS = {
    "plays": ("mp4", "lab/plays.mp4", None),
    "segment": ("mp4", "lab/plays.mp4", (0.2, 0.9)),
    "msvd_avi": ("avi", "lab/msvd.avi", None),
    "didemo_mkv": ("mkv", "lab/didemo.mkv", None),
    "quicktime": ("mov", "lab/quick.mov", None),
    "no_faststart": ("mp4_index_at_end", "lab/slow.mp4", None),
    "missing": (None, "lab/nowhere.mp4", None),
    "past_end": ("mp4", "lab/plays.mp4", (1.0, 5.0)),
}
#: What the check must name for each clip that fails (the files' kinds, tests/media_files.py).
EXPECTED = {
    "msvd_avi": ["container", "video_codec"],
    "didemo_mkv": ["container"],
    "quicktime": ["container", "video_codec", "index_at_end"],
    "no_faststart": ["index_at_end"],
    "missing": ["missing"],
    "past_end": ["span_past_end"],
}
PREPARABLE = {"msvd_avi", "didemo_mkv", "quicktime", "no_faststart"}


def media_files() -> None:
    for kind, path, _ in CLIPS.values():
        target = Path(settings.MEDIA_ROOT) / path
        if kind and not target.exists():
            made = make_video(target, kind)
            assert made == target


def manifest(folder: Path) -> Path:
    lines = []
    for clip_id, (_, path, span) in CLIPS.items():
        record = {"kind": "clip", "id": clip_id, "video_id": Path(path).stem, "path": path}
        if span:
            record |= {"start": span[0], "end": span[1]}
        lines.append(record)
    lines += [{"kind": "caption", "id": f"q_{clip_id}", "text": f"something in {clip_id}", "clip": clip_id}
              for clip_id in CLIPS]
    target = folder / "lab.jsonl"
    target.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return target


def lab_dataset(folder: Path, name: str = "lab"):
    media_files()
    return dataset_import(path=manifest(folder), name=name, fmt="manifest-jsonl")
