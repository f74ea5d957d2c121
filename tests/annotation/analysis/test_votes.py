"""FIRE's vote rule for one pair (annotation/analysis/votes.py), every case worked by hand."""
import pytest

from annotation.analysis.votes import VoteOutcome, base_requirement, has_room, resolve_votes

R, N = "relevant", "not_relevant"


@pytest.mark.parametrize("votes, required, expected", [
    # Not enough votes yet: open, the requirement unchanged.
    ([], 1, VoteOutcome("open", None, 1)),
    ([], 2, VoteOutcome("open", None, 2)),
    ([R], 2, VoteOutcome("open", None, 2)),
    ([R, N], 3, VoteOutcome("open", None, 3)),
    # One vote decides a single-label pair, whichever answer.
    ([R], 1, VoteOutcome("resolved", R, 1)),
    ([N], 1, VoteOutcome("resolved", N, 1)),
    # Two that agree resolve a double-labelled pair.
    ([N, N], 2, VoteOutcome("resolved", N, 2)),
    ([R, R], 2, VoteOutcome("resolved", R, 2)),
    # Two that disagree ask for a third, in either order.
    ([R, N], 2, VoteOutcome("open", None, 3)),
    ([N, R], 2, VoteOutcome("open", None, 3)),
    # A single-label pair that got a second, disagreeing vote (an answer changed) needs a third too.
    ([R, N], 1, VoteOutcome("open", None, 3)),
    # The third vote decides by 2 to 1.
    ([R, N, R], 3, VoteOutcome("resolved", R, 3)),
    ([R, N, N], 3, VoteOutcome("resolved", N, 3)),
    # Three votes with no strict majority (three different answers): a disagreement.
    ([R, N, "ambiguous"], 3, VoteOutcome("disagreement", None, 3)),
    # More votes than required: the majority of all of them counts.
    ([R, R, N], 2, VoteOutcome("resolved", R, 2)),
])
def test_resolve_votes(votes, required, expected):
    assert resolve_votes(votes, required) == expected


@pytest.mark.parametrize("required", [0, 4, -1])
def test_a_requirement_outside_one_to_three_is_refused(required):
    with pytest.raises(ValueError, match="1 to 3"):
        resolve_votes([R], required)


@pytest.mark.parametrize("stored, base", [(1, 1), (2, 2), (3, 2), (0, 1)])
def test_base_requirement_forgets_the_third_label_rule(stored, base):
    assert base_requirement(stored) == base


@pytest.mark.parametrize("required, votes, leases, room", [
    (1, 0, 0, True), (1, 0, 1, False), (1, 1, 0, False),
    (2, 0, 1, True), (2, 1, 0, True), (2, 1, 1, False), (2, 0, 2, False),
    (3, 2, 0, True), (3, 2, 1, False), (3, 1, 1, True),
])
def test_has_room_while_votes_and_leases_stay_short_of_the_requirement(required, votes, leases, room):
    assert has_room(required=required, votes=votes, leases=leases) is room
