"""Copies of clips that browsers play: H.264 MP4 with the index at the front (formats/media_files.py),
optionally cut to each clip's span with a margin and scaled to a height, stored in the media
storage (MEDIA_ROOT, or the media bucket when STORAGES puts media there) under
prepared/<dataset id>/. The clip then plays the copy: `media` names it, `original_media` keeps the
reference it was imported with, and a cut copy's `media_offset` says where in the original it
starts (its start and end are then the copy's).

Prepared: clips whose latest check failed only for what a copy fixes (container, codecs, index,
duration), and with `cut`, every clip with a span (a 5-second span of a long video is no longer
sent whole). A missing or unreadable file or a span past the end is no problem a copy fixes: those
are counted and left. Resumable: a clip already prepared (`original_media` set) is skipped, and a
copy already stored by an interrupted run is used rather than made again. The prepared clips are
checked again at the end.
"""
from __future__ import annotations

import hashlib
import re
import tempfile
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from django.db import transaction

from annotation.analysis.params import Param
from annotation.formats import media_files as mf
from annotation.models import Clip, ClipMediaCheck, Dataset, Run
from annotation.services.media.check import clips_media_check, media_check_summary
from annotation.services.media.files import MediaUnavailable, media_local_path, media_name
from annotation.storage.files import stored_file_copy_in, stored_file_exists

PREPARE_PARAMS = {
    "cut": Param(bool, False, "cut each clip with a span to that span (plus the margin): raters download seconds, "
                 "not the whole source video"),
    "margin": Param(float, 1.0, "seconds kept before and after a clip's span when cutting", 0, 60),
    "height": Param(int, None, "scale copies down to this many lines (e.g. 480; never up); blank: keep the size",
                    64, 4320),
}
FOLDER = "prepared"


class PrepareError(ValueError):
    """A prepare request that cannot be carried out; `param` names the parameter to blame."""


def prepare_check(dataset: Dataset, *, cut: bool) -> None:
    if cut and Run.objects.filter(dataset=dataset, kind=Run.Kind.MOMENT).exists():
        # Moment runs' spans are times in the source video; a clip cut to its span would move them.
        error = PrepareError(f"dataset '{dataset.name}' has moment runs, whose spans are times in the source "
                             "videos: prepare it without cutting")
        error.param = "cut"
        raise error


def _copy_name(dataset: Dataset, media: str, span: tuple[float, float] | None, height: int | None) -> str:
    """prepared/<dataset>/<the source's name>-<hash of what the copy is>.mp4: readable, and one name
    per (source, span, height), so a resumed run finds the copy an interrupted one stored."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", PurePosixPath(media_name(media).split("?")[0]).stem)[:60] or "clip"
    key = hashlib.sha256(repr((media, span, height)).encode()).hexdigest()[:10]
    return f"{FOLDER}/{dataset.pk}/{stem}-{key}.mp4"


def _make_copy(media: str, name: str, *, span: tuple[float, float] | None, height: int | None,
               remux_only: bool) -> None:
    if stored_file_exists("media", name):
        return  # stored by an interrupted run: the same source, span and height
    with media_local_path(media) as source, tempfile.TemporaryDirectory(prefix="rejudge-prepare-") as folder:
        target = Path(folder) / "copy.mp4"
        if remux_only:
            mf.remux_faststart(source, target)
        else:
            mf.transcode(source, target, start=span[0] if span else None, end=span[1] if span else None, height=height)
        stored_file_copy_in("media", name, target)


def _wanted(clip: Clip, check: ClipMediaCheck | None, cut: bool) -> bool:
    if clip.original_media or check is None:
        return False
    if check.problems and not all(p["preparable"] for p in check.problems):
        return False  # a copy cannot fix a missing file or a wrong span
    return bool(check.problems) or (cut and clip.has_span)


def dataset_media_prepare(dataset: Dataset, *, cut: bool = False, margin: float = 1.0, height: int | None = None,
                          progress: Callable | None = None) -> dict:
    """Prepares the dataset's clips (see the module docstring); returns what was done and the
    check's summary after it."""
    prepare_check(dataset, cut=cut)
    # Clips never checked, or whose media changed since, are checked first: the copy depends on it.
    stale = [c for c in dataset.clips.select_related("media_check").order_by("pk")
             if not hasattr(c, "media_check") or c.media_check.media != c.media]
    if stale:
        clips_media_check(stale)
    clips = list(dataset.clips.select_related("media_check").order_by("pk"))
    already = sum(1 for c in clips if c.original_media)
    todo = [c for c in clips if _wanted(c, getattr(c, "media_check", None), cut)]
    chosen = {c.pk for c in todo}
    left = sum(1 for c in clips if not c.original_media and not c.media_check.playable and c.pk not in chosen)
    # One copy per source when not cutting (segments share their video), one per clip when cutting.
    groups: dict[tuple, list[Clip]] = defaultdict(list)
    for clip in todo:
        if cut and clip.has_span:
            duration = clip.media_check.duration
            end = clip.end + margin if duration is None else min(clip.end + margin, duration)
            groups[(clip.media, (max(0.0, clip.start - margin), end))].append(clip)
        else:
            groups[(clip.media, None)].append(clip)
    prepared, failed = [], []
    for index, ((media, span), group) in enumerate(groups.items()):
        codes = {p["code"] for p in group[0].media_check.problems}
        name = _copy_name(dataset, media, span, height)
        try:
            _make_copy(media, name, span=span, height=height,
                       remux_only=span is None and height is None and codes == {mf.INDEX_AT_END})
        except (MediaUnavailable, mf.MediaError) as exc:
            failed.append({"clip_ids": [c.external_id for c in group], "error": str(exc)})
        else:
            with transaction.atomic():
                for clip in group:
                    clip.original_media, clip.media = clip.media, name
                    if span is not None:
                        clip.media_offset = span[0]
                        clip.start, clip.end = clip.start - span[0], clip.end - span[0]
                    clip.save(update_fields=["media", "original_media", "media_offset", "start", "end"])
            prepared.extend(group)
        if progress:
            progress(index + 1, len(groups), "")
    clips_media_check(prepared)
    return {"dataset_id": dataset.pk, "prepared": len(prepared), "copies": len(groups) - len(failed),
            "already_prepared": already, "not_preparable": left, "failed": failed,
            "check": media_check_summary(dataset)}
