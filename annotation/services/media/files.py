"""A clip's media as a local file that ffmpeg may read (annotation/formats/media_files.py reads
local files only): a path under MEDIA_ROOT (or the media bucket: a temporary copy), or an http(s)
URL fetched into a temporary file through the outbound policy (services/outbound.py), never by
ffmpeg. Each failure is a MediaUnavailable whose `code` says which (no media, missing, refused)."""
from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

from annotation.analysis.storable_text import media_problem
from annotation.services.outbound import OutboundRefused, downloaded
from annotation.storage.files import StoredFileMissing, stored_file_local_path

NO_MEDIA = "no_media"
MISSING = "missing"
REFUSED = "refused"


class MediaUnavailable(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def media_name(media: str) -> str:
    """The clip's media without the /media/ prefix it may be stored with."""
    prefix = "/" + settings.MEDIA_URL.strip("/") + "/"
    return media[len(prefix):] if media.startswith(prefix) else media


def is_url(media: str) -> bool:
    return bool(re.match(r"^https?://", media, re.IGNORECASE))


@contextmanager
def media_local_path(media: str) -> Iterator[Path]:
    """A local path holding the clip's media (removed afterwards when it is a copy)."""
    media = media_name(media)
    if not media:
        raise MediaUnavailable(NO_MEDIA, "the clip has no media reference")
    problem = media_problem(media)
    if problem:
        raise MediaUnavailable(REFUSED, f"the media reference {problem}")
    if is_url(media):
        try:
            with downloaded(media) as path:
                yield path
        except OutboundRefused as exc:  # names the rule, never what the server sent
            raise MediaUnavailable(REFUSED, str(exc)) from None
        return
    try:
        with stored_file_local_path("media", media) as path:
            yield path
    except StoredFileMissing:
        raise MediaUnavailable(MISSING, f"no file {media} in the media storage (MEDIA_ROOT or the media bucket)") from None
