"""What changed between two releases: a merge of their resolved pairs, both ordered by
(caption id, clip id), one pair held at a time. Pure: no Django, no files.

A pair is `ReleasePair(caption, clip, caption_id, clip_id, relevance, how, votes)`: `caption` and
`clip` the database keys that order the stream, `*_id` the dataset's external ids written in the
archive, `how` how the relevance was reached (original, adjudication, labels, imported,
judgment_set) and `votes` the counted votes behind it.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

CHANGE_KINDS = ("added", "changed", "removed")

_ADDED_REASONS = {"labels": "new labels", "adjudication": "adjudication", "imported": "imported judgment",
                  "judgment_set": "judgment set", "original": "original positive"}


class ReleasePair(NamedTuple):
    caption: int
    clip: int
    caption_id: str
    clip_id: str
    relevance: int
    how: str
    votes: int


class PairChange(NamedTuple):
    kind: str  # added / changed / removed
    caption_id: str
    clip_id: str
    old: int | None
    new: int | None
    reason: str

    def as_dict(self) -> dict:
        return {"query_id": self.caption_id, "clip_id": self.clip_id, "old_relevance": self.old,
                "new_relevance": self.new, "reason": self.reason}


def change_reason(old: ReleasePair | None, new: ReleasePair | None) -> str:
    """Why a pair's relevance differs: adjudication when an admin decided it now, re-judging when
    its votes changed, otherwise what now decides it."""
    if old is None:
        return _ADDED_REASONS.get(new.how, new.how)
    if new is None:
        return "no longer resolved" if old.how in ("labels", "adjudication", "imported") else f"{old.how} dropped"
    if new.how == "adjudication" and old.how != "adjudication":
        return "adjudication"
    if new.how == "adjudication":
        return "adjudication revised"
    if new.votes != old.votes or (new.how == "labels" and old.how == "labels"):
        return "re-judging"
    return f"now decided by {new.how.replace('_', ' ')} (was {old.how.replace('_', ' ')})"


def release_changes(old: Iterable[ReleasePair], new: Iterable[ReleasePair]) -> Iterator[PairChange]:
    """The pairs added, removed, or whose relevance changed from `old` to `new` (both ordered by
    (caption, clip), each key once), in that order."""
    old_it, new_it = iter(old), iter(new)
    a, b = next(old_it, None), next(new_it, None)
    while a is not None or b is not None:
        if b is None or (a is not None and (a.caption, a.clip) < (b.caption, b.clip)):
            yield PairChange("removed", a.caption_id, a.clip_id, a.relevance, None, change_reason(a, None))
            a = next(old_it, None)
        elif a is None or (b.caption, b.clip) < (a.caption, a.clip):
            yield PairChange("added", b.caption_id, b.clip_id, None, b.relevance, change_reason(None, b))
            b = next(new_it, None)
        else:
            if a.relevance != b.relevance:
                yield PairChange("changed", b.caption_id, b.clip_id, a.relevance, b.relevance, change_reason(a, b))
            a, b = next(old_it, None), next(new_it, None)
