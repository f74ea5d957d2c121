"""Where a judgment set's file is kept: JUDGMENTS_ROOT/<dataset id>/<sha256>/<file name>.

The file keeps its own name so that scoring a stored set prints what scoring the file prints (the
tools name the judgments file in their output); the checksum folder keeps two files of the same
name apart. Files are written before the import's transaction commits and removed if it rolls
back, so a refused import leaves nothing behind.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

from django.conf import settings


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name or "judgments").name)[:200].lstrip(".") or "judgments"


def judgment_file_store(*, dataset_id: int, checksum: str, source: Path, name: str) -> str:
    """Copies `source` into the store; returns its path relative to JUDGMENTS_ROOT."""
    relative = Path(str(dataset_id)) / checksum / _safe_name(name)
    target = Path(settings.JUDGMENTS_ROOT) / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    shutil.copyfile(source, partial)
    partial.replace(target)
    return str(relative)


def judgment_file_path(relative: str) -> Path:
    root = Path(settings.JUDGMENTS_ROOT).resolve()
    path = (root / relative).resolve()
    if root not in path.parents:
        raise ValueError(f"stored judgment file {relative!r} is outside JUDGMENTS_ROOT")
    return path


def judgment_file_remove(relative: str) -> None:
    if not relative:
        return
    folder = judgment_file_path(relative).parent
    shutil.rmtree(folder, ignore_errors=True)
