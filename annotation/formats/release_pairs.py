"""The pairs file a release keeps beside its archive (not in it): one resolved pair a line,
`caption<TAB>clip<TAB>caption_id<TAB>clip_id<TAB>relevance<TAB>how<TAB>votes`, ordered by the
database keys (caption, clip), so two releases' files merge in one pass (analysis/release_changes)."""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TextIO

from annotation.analysis.release_changes import ReleasePair


def write_release_pair(handle: TextIO, pair: ReleasePair) -> None:
    handle.write("\t".join(str(v) for v in pair) + "\n")


def read_release_pairs(lines: Iterable[str], *, name: str = "pairs file") -> Iterator[ReleasePair]:
    for number, line in enumerate(lines, start=1):
        line = line.rstrip("\n")
        if not line:
            continue
        parts = line.split("\t")
        if len(parts) != 7:
            raise ValueError(f"{name}, line {number}: expected 7 tab-separated fields, found {len(parts)}")
        try:
            yield ReleasePair(int(parts[0]), int(parts[1]), parts[2], parts[3], int(parts[4]), parts[5], int(parts[6]))
        except ValueError as exc:
            raise ValueError(f"{name}, line {number}: {exc}") from exc
