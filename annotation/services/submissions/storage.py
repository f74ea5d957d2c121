"""Where submitted run files are kept: the `runs` storage area, under submissions/<random>/<name>.
Not the uploads area, whose files the job clean-up removes once their import succeeded: a
submission's run is kept for the next step (its holes judged, the run scored again)."""
from __future__ import annotations

import re
import uuid
from pathlib import Path

from annotation.storage import stored_file_delete, stored_file_save

SUBMISSIONS = "runs"


def submission_file_store(*, uploaded_file) -> str:
    """Streams the uploaded run to the submissions folder; returns its name in the area."""
    safe_name = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(uploaded_file.name or "run").name)[:200] or "run"
    return stored_file_save(SUBMISSIONS, f"submissions/{uuid.uuid4().hex}/{safe_name}", uploaded_file)


def submission_file_remove(name: str) -> None:
    stored_file_delete(SUBMISSIONS, name)
