"""Where a judgment set's file is kept: <dataset id>/<sha256>/<file name> in the judgments storage
area (JUDGMENTS_ROOT, or a bucket prefix: annotation/storage).

The file keeps its own name so that scoring a stored set prints what scoring the file prints (the
tools name the judgments file in their output); the checksum folder keeps two files of the same
name apart, and makes the name fix the content (so a host reading from a bucket may cache it).
Files are written before the import's transaction commits and removed if it rolls back, so a
refused import leaves nothing behind.
"""
from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from annotation.storage import stored_file_cached_path, stored_file_copy_in, stored_folder_delete

JUDGMENTS = "judgments"


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name or "judgments").name)[:200].lstrip(".") or "judgments"


def judgment_file_store(*, dataset_id: int, checksum: str, source: Path, name: str) -> str:
    """Stores `source`; returns its name in the judgments area."""
    relative = (PurePosixPath(str(dataset_id)) / checksum / _safe_name(name)).as_posix()
    return stored_file_copy_in(JUDGMENTS, relative, source)


def judgment_file_path(relative: str) -> Path:
    """A path on this host holding the stored file (the file itself, or the host's cached copy of
    it from a bucket). Raises FileNotFoundError when it is missing."""
    return stored_file_cached_path(JUDGMENTS, relative)


def judgment_file_remove(relative: str) -> None:
    if not relative:
        return
    folder = PurePosixPath(relative).parent.as_posix()
    if folder not in ("", "."):
        stored_folder_delete(JUDGMENTS, folder)
