"""FIRE's rule for one pair's counted votes, the one home of "when is a pair resolved, and when does
it need a third label" (methodology §3, Redundancy). Pure: the queue's label service, an answer
change and the crowd's set-aside recount all call it with the pair's votes as they now stand.

- A pair needs `required` counted votes: 1 for most, 2 for the seeded redundancy share. Until it
  has them it stays open.
- With enough votes, a strict majority (more than half) resolves it to that answer.
- Two votes that disagree (a 1-1 split) ask for a third vote from a third rater.
- Three votes without a strict majority (only possible with more than two answers) are a
  disagreement, recorded as such.

The majority rule over many pairs at once (agreement.resolve_majority) counts every label of a
unit; this is the queue's rule for one pair, which also says what the pair needs next.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

#: The most votes a pair ever needs: two that disagree, then a third.
MAX_VOTES = 3


@dataclass(frozen=True)
class VoteOutcome:
    """What a pair's counted votes decide: `state` ("open", "resolved" or "disagreement"), the
    answer when resolved, and how many counted votes the pair needs (raised to 3 by a split)."""

    state: Literal["open", "resolved", "disagreement"]
    answer: str | None
    required: int


def base_requirement(required: int) -> int:
    """A pair's own requirement (1, or 2 for the redundancy share) from its stored one: 3 is only
    ever the third-label rule's, so a recount starts again from 2."""
    return 1 if required <= 1 else 2


def resolve_votes(votes: Sequence[str], required: int) -> VoteOutcome:
    """FIRE's rule (module docstring) over `votes`, the pair's counted answers, and `required`, the
    counted votes it needs before the majority is read (1 to 3)."""
    if not 1 <= required <= MAX_VOTES:
        raise ValueError(f"a pair needs 1 to {MAX_VOTES} votes, not {required}")
    if len(votes) < required:
        return VoteOutcome("open", None, required)
    top, count = Counter(votes).most_common(1)[0]
    if count * 2 > len(votes):
        return VoteOutcome("resolved", top, required)
    if len(votes) < MAX_VOTES:
        return VoteOutcome("open", None, len(votes) + 1)
    return VoteOutcome("disagreement", None, required)


def has_room(*, required: int, votes: int, leases: int) -> bool:
    """Whether an open pair can take another holder: its counted votes and the live leases on it
    stay short of the votes it needs (so a pair never has more holders than it needs). The queue's
    `available` flag is this on an open pool pair; `room_sql` is the same rule for its statements."""
    return votes + leases < required


def room_sql(*, extra_leases: int = 0) -> str:
    """`has_room` as a SQL expression over a pair row's columns (`required_labels`, `vote_count`,
    `active_leases`), with `extra_leases` more leases than the row holds: a statement that adds a
    lease computes the flag from the row before its own update. Kept equal to `has_room` by a test
    that runs both over every counter combination on the database."""
    leases = "active_leases" if not extra_leases else f"active_leases + {int(extra_leases)}"
    return f"(vote_count + {leases} < required_labels)"
