"""The flag of a Judged@K below the threshold (annotation/analysis/judged.py), at and around it,
and the threshold's declaration (0.9, between 0 and 1), which the client keeps as its own."""
import pytest

from annotation.analysis.judged import JUDGED_THRESHOLD, below_threshold, judged_name, not_comparable_note
from annotation.analysis.params import ParamInvalid


def test_the_threshold_is_declared_once_with_its_bounds():
    assert JUDGED_THRESHOLD.default == 0.9 and (JUDGED_THRESHOLD.low, JUDGED_THRESHOLD.high) == (0, 1)
    assert JUDGED_THRESHOLD.check(0) == 0 and JUDGED_THRESHOLD.check(1) == 1
    for bad in (-0.01, 1.01, float("nan"), "0.9", True):
        with pytest.raises(ParamInvalid):
            JUDGED_THRESHOLD.check(bad, name="judged_threshold")


def test_the_client_keeps_the_platforms_default():
    # The client package cannot import the platform; this keeps its copy equal to the declaration.
    import rejudge_client

    assert rejudge_client.JUDGED_THRESHOLD == JUDGED_THRESHOLD.default


@pytest.mark.parametrize("judged, threshold, flagged", [
    (0.9, 0.9, False),  # at the threshold: comparable
    (9 / 10, 0.9, False),
    (sum([0.3] * 3), 0.9, False),  # 0.8999999999999999: a rounding error, not a hole
    (0.8999, 0.9, True),
    (0.89, 0.9, True),
    (0.95, 0.9, False),
    (1.0, 1.0, False),
    (0.999, 1.0, True),  # a threshold of 1: every top K wholly judged
    (0.0, 0.0, False),  # a threshold of 0: never flagged
    (0.0, 0.1, True),
    (None, 0.9, False),  # no Judged@K (no cutoff, no query): nothing to flag
])
def test_the_flag_at_and_around_the_threshold(judged, threshold, flagged):
    assert below_threshold(judged, threshold) is flagged
    note = not_comparable_note("Judged@10", judged, threshold)
    assert (note is not None) is flagged
    if flagged:
        assert note == f"not comparable with the leaderboard (Judged@10 < {threshold:g})"


def test_names():
    assert judged_name(5) == "Judged@5"
    assert not_comparable_note("Judged@5", 0.5, 0.75) == "not comparable with the leaderboard (Judged@5 < 0.75)"
