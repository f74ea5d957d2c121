"""A stored release's qrels.txt, for `evaluate --release NAME@vN`: the file of the archive that
researchers download, not a fresh export of the pools, so the platform scores a run against exactly
what the client's `evaluate` reads (issue 38: Judged@K for any run against any release).

The only module of this package that touches the database and the storage; the command imports it
only when --release is given, so a file-only evaluation still runs before django.setup().
"""
from __future__ import annotations

import shutil
import zipfile
from pathlib import Path, PurePosixPath

from annotation.selectors.releases import release_by_slug
from annotation.services.exports.labels import EXPORTS
from annotation.storage import stored_file_local_path

from .errors import EvaluationError


def release_qrels_write(*, slug: str, folder: Path) -> Path:
    """Writes the qrels.txt of release ``slug`` (NAME@vN, or NAME for its newest version) into
    ``folder`` as ``NAME-vN-qrels.txt`` (the name outputs print); raises EvaluationError for an
    unknown release or an archive without qrels.txt."""
    release = release_by_slug(slug)
    if release is None:
        raise EvaluationError(f"--release {slug!r}: no such release (give NAME@vN; `release list` shows them)")
    target = Path(folder) / f"{release.name}-v{release.version}-qrels.txt"
    with stored_file_local_path(EXPORTS, release.archive) as path, zipfile.ZipFile(path) as archive:
        # The archive holds one top folder (NAME-vN/), as the client extracts it.
        names = [n for n in archive.namelist() if PurePosixPath(n).name == "qrels.txt" and n.count("/") <= 1]
        if not names:
            raise EvaluationError(f"release {release.name}@v{release.version}: its archive holds no qrels.txt")
        with archive.open(names[0]) as source, open(target, "wb") as out:
            shutil.copyfileobj(source, out)
    return target
