"""The queue's statements compute a pair's `available` flag in SQL (analysis/votes.py room_sql);
the services compute it in Python (has_room). Both are run here over every combination of the
counters a pair can hold, on the database the suite runs against, so the two cannot drift."""
import itertools

import pytest
from django.db import connection

from annotation.analysis.votes import MAX_VOTES, has_room, room_sql

COMBINATIONS = [(required, votes, leases) for required, votes, leases in
                itertools.product(range(1, MAX_VOTES + 1), range(0, MAX_VOTES + 1), range(0, MAX_VOTES + 1))]


@pytest.mark.django_db
@pytest.mark.parametrize("extra_leases", [0, 1])
def test_room_sql_equals_has_room_for_every_counter_combination(extra_leases):
    rows = " UNION ALL ".join("SELECT %s AS required_labels, %s AS vote_count, %s AS active_leases"
                              for _ in COMBINATIONS)
    params = [value for combination in COMBINATIONS for value in combination]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT required_labels, vote_count, active_leases, "
                       f"CASE WHEN {room_sql(extra_leases=extra_leases)} THEN 1 ELSE 0 END FROM ({rows}) AS pair", params)
        from_sql = {(r, v, l): bool(room) for r, v, l, room in cursor.fetchall()}
    from_python = {(r, v, l): has_room(required=r, votes=v, leases=l + extra_leases) for r, v, l in COMBINATIONS}
    assert from_sql == from_python
    assert any(from_python.values()) and not all(from_python.values())
