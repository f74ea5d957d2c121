"""Active time and rate from label times (annotation/analysis/activity.py), worked by hand."""
from __future__ import annotations

import math

import pytest

from annotation.analysis.activity import active_seconds, labels_per_hour


def test_sixty_labels_in_a_minute_are_a_minute_of_work_not_48_hours():
    # One label a second, t = 0..59: 59 gaps of 1 s, all under the 300 s cutoff -> 59 s, plus the
    # first label's own 1.0 s measured by the client -> 60 s. Rate 60 / 60 s = 3600/h (the old
    # page said 60 / 48 h = 1.25/h).
    times = [1_700_000_000 + i for i in range(60)]
    active = active_seconds(times, [1.0] * 60)
    assert active == pytest.approx(60.0)
    assert labels_per_hour(60, active) == pytest.approx(3600.0)


def test_a_gap_over_the_cutoff_is_a_break_and_starts_a_new_session():
    # Times (s): 0, 10, 30 | 1000, 1020 (a 970 s gap is a break). Given in a shuffled order.
    # Gaps under 300: 10 + 20 + 20 = 50. Session starts at 0 (client 4 s) and 1000 (client
    # 900 s, capped at the 300 s cutoff) -> 50 + 4 + 300 = 354 s. Five labels: 5 * 3600 / 354.
    times = [1000, 0, 30, 1020, 10]
    seconds = [900.0, 4.0, 5.0, 6.0, 7.0]
    active = active_seconds(times, seconds)
    assert active == pytest.approx(354.0)
    assert labels_per_hour(5, active) == pytest.approx(5 * 3600 / 354)


def test_unknown_client_seconds_count_nothing_and_a_gap_at_the_cutoff_is_a_break():
    # 0 and 300: the gap equals the cutoff, so it is a break; both labels start sessions with no
    # measured time (None, NaN) -> 0 s, and there is no rate.
    assert active_seconds([0, 300], [None, math.nan]) == 0.0
    assert labels_per_hour(2, 0.0) is None
    # A smaller cutoff: 0, 50, 100 with cutoff 60 -> 50 + 50 = 100 s; no seconds given.
    assert active_seconds([0, 50, 100], idle_cutoff=60) == pytest.approx(100.0)
    assert active_seconds([]) == 0.0
