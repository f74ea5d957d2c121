"""What changed between two releases of one name (`release diff`, changes.json): a merge of their
pairs files, streamed from storage (analysis/release_changes)."""
from __future__ import annotations

import io
from collections.abc import Iterator

from annotation.analysis.release_changes import CHANGE_KINDS, PairChange, release_changes
from annotation.formats.release_pairs import read_release_pairs
from annotation.models import Release
from annotation.services.exports.labels import EXPORTS
from annotation.storage import stored_file_open


class ReleaseDiffError(ValueError):
    """Two releases that cannot be compared; the message says why."""


def release_pairs_lines(*, name: str) -> Iterator[str]:
    """The lines of a release's pairs file, read as they are used."""
    with stored_file_open(EXPORTS, name) as raw, io.TextIOWrapper(raw, encoding="utf-8") as text:
        yield from text


def release_change_stream(*, old: Release, new: Release) -> Iterator[PairChange]:
    if old.dataset_id != new.dataset_id:
        raise ReleaseDiffError(f"{old.slug} and {new.slug} are over different datasets")
    return release_changes(read_release_pairs(release_pairs_lines(name=old.pairs_file), name=old.pairs_file),
                           read_release_pairs(release_pairs_lines(name=new.pairs_file), name=new.pairs_file))


def release_diff(*, old: Release, new: Release, limit: int | None = None) -> dict:
    """{"from", "to", "counts", "added", "changed", "removed"}: every change counted, at most
    `limit` of each kind listed (None: all)."""
    out: dict = {"from": old.slug, "to": new.slug, "counts": {kind: 0 for kind in CHANGE_KINDS}}
    out |= {kind: [] for kind in CHANGE_KINDS}
    for change in release_change_stream(old=old, new=new):
        out["counts"][change.kind] += 1
        if limit is None or len(out[change.kind]) < limit:
            out[change.kind].append(change.as_dict())
    return out
