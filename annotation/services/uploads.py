"""Where uploaded files wait for the job that imports them."""
from __future__ import annotations

import re
import uuid
from pathlib import Path

from django.conf import settings


def upload_store(*, uploaded_file) -> Path:
    """Streams an uploaded file to UPLOAD_ROOT/<random>/<name> and returns its path."""
    safe_name = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(uploaded_file.name or "upload").name)[:200] or "upload"
    folder = Path(settings.UPLOAD_ROOT) / uuid.uuid4().hex
    folder.mkdir(parents=True, exist_ok=False)
    target = folder / safe_name
    with target.open("wb") as handle:
        for chunk in uploaded_file.chunks():
            handle.write(chunk)
    return target
