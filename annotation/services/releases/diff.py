"""What changed between two releases of one name (`release diff`, changes.json): a merge of their
pairs files, streamed from storage (analysis/release_changes)."""
from __future__ import annotations

import io
import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

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


def _pairs(name: str) -> Iterator:
    return read_release_pairs(release_pairs_lines(name=name), name=name)


def release_change_stream(*, old: Release, new: Release) -> Iterator[PairChange]:
    if old.dataset_id != new.dataset_id:
        raise ReleaseDiffError(f"{old.slug} and {new.slug} are over different datasets")
    return release_changes(_pairs(old.pairs_file), _pairs(new.pairs_file))


@contextmanager
def change_listing(changes: Iterator[PairChange], limit: int | None = None
                   ) -> Iterator[tuple[dict[str, int], Iterator[tuple[str, dict]]]]:
    """`(counts, listed)`: every change counted by kind, and `listed` yields `(kind, change)` for at
    most `limit` of each kind (None: all), added first, then changed, then removed. The listed
    changes wait in temporary files while the merge counts the rest, so listing every change of two
    FIRE-sized releases holds one change at a time (issue 40): `release diff` and changes.json."""
    counts = {kind: 0 for kind in CHANGE_KINDS}
    with tempfile.TemporaryDirectory(prefix="rejudge-changes-") as folder:
        parked = {kind: open(f"{folder}/{kind}", "w+", encoding="utf-8") for kind in CHANGE_KINDS}
        try:
            for change in changes:
                counts[change.kind] += 1
                if limit is None or counts[change.kind] <= limit:
                    parked[change.kind].write(json.dumps(change.as_dict(), ensure_ascii=False) + "\n")

            def listed() -> Iterator[tuple[str, dict]]:
                for kind in CHANGE_KINDS:
                    parked[kind].seek(0)
                    for line in parked[kind]:
                        yield kind, json.loads(line)

            yield counts, listed()
        finally:
            for handle in parked.values():
                handle.close()


@contextmanager
def release_diff_listing(*, old: Release, new: Release, limit: int | None = None
                         ) -> Iterator[tuple[dict, Iterator[tuple[str, dict]]]]:
    """`({"from", "to", "counts"}, listed)` of the changes from `old` to `new` (change_listing)."""
    with change_listing(release_change_stream(old=old, new=new), limit) as (counts, listed):
        yield {"from": old.slug, "to": new.slug, "counts": counts}, listed


def new_version_changes(*, previous_pairs: str | None, pairs: str) -> Iterator[PairChange]:
    """The changes a new version's pairs file makes to the previous version's (none for a first)."""
    return release_changes(_pairs(previous_pairs), _pairs(pairs)) if previous_pairs else iter(())


def release_diff(*, old: Release, new: Release, limit: int | None = None) -> dict:
    """{"from", "to", "counts", "added", "changed", "removed"}: every change counted, at most
    `limit` of each kind listed (None: all, held in memory: `release_diff_listing` streams them)."""
    with release_diff_listing(old=old, new=new, limit=limit) as (head, listed):
        out = head | {kind: [] for kind in CHANGE_KINDS}
        for kind, change in listed:
            out[kind].append(change)
    return out
