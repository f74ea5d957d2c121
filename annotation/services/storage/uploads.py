"""Where uploaded files wait for the job that imports them: the `uploads` storage area, under
<random>/<name>. The web process stores the upload; the worker that runs the import may be on
another host, so the job records the upload's name in the area (params["upload"]), never a path."""
from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from annotation.storage import stored_file_local_path, stored_file_save

UPLOADS = "uploads"


def upload_store(*, uploaded_file) -> str:
    """Streams an uploaded file to <random>/<name> in the uploads area; returns that name."""
    safe_name = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(uploaded_file.name or "upload").name)[:200] or "upload"
    return stored_file_save(UPLOADS, f"{uuid.uuid4().hex}/{safe_name}", uploaded_file)


@contextmanager
def upload_local_path(*, params: dict) -> Iterator[Path]:
    """A path to the job's upload for the import parsers: the stored upload (params["upload"],
    fetched from the store when it is remote), or a file the job was given by path (jobs queued
    before uploads had names)."""
    if params.get("upload"):
        with stored_file_local_path(UPLOADS, params["upload"]) as path:
            yield path
        return
    yield Path(params["path"])
