"""Report inputs as NumPy columns (selectors/reports.py `_columns`): on PostgreSQL read by a binary
COPY parsed into the arrays, elsewhere by a chunked cursor. Either way they must equal what the
ORM reads row by row (the independent oracle here), NULL seconds as NaN, states as their strings."""
from __future__ import annotations

import math

import numpy as np
import pytest
from django.db import connection
from django.db.models import Value

from annotation.models import Label, PooledPair
from annotation.selectors import reports
from annotation.selectors.reports import pool_pairs, pool_votes
from annotation.services.accounts.raters import memberships_grant
from tests.factories import label_pair, make_pool_with_runs, make_rater

pytestmark = pytest.mark.django_db


@pytest.fixture
def labelled_pool():
    pool, _ = make_pool_with_runs(captions=4, clips=6, depth=3)
    first, second = make_rater(), make_rater()
    memberships_grant(pool=pool, users=[first, second])
    pairs = list(PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL).order_by("pk"))
    for i, pair in enumerate(pairs[:6]):
        label_pair(first, pair, "relevant" if i % 2 else "not_relevant", seconds=None if i % 3 == 0 else 1.25 * i)
    label_pair(second, pairs[0], "relevant", seconds=7.5)
    label_pair(second, pairs[1], "ambiguous", comment="cannot tell")  # not a vote: left out of pool_votes
    return pool


def test_pool_votes_equal_the_labels_read_row_by_row(labelled_pool):
    votes = pool_votes(pool=labelled_pool)
    rows = list(Label.objects.filter(pair__pool=labelled_pool, pair__role="pool", counted=True,
                                     value__in=["relevant", "not_relevant"]).order_by("id")
                .values_list("pair_id", "rater_id", "value", "sequence", "seconds"))
    assert len(rows) == 6  # the second rater's vote on a pair already resolved is surplus, not counted
    assert votes.pair.tolist() == [r[0] for r in rows] and votes.rater.tolist() == [r[1] for r in rows]
    assert votes.value.tolist() == [1 if r[2] == "relevant" else 0 for r in rows]
    assert votes.sequence.tolist() == [r[3] for r in rows]
    assert votes.seconds.dtype == np.float64
    for got, (*_, seconds) in zip(votes.seconds.tolist(), rows):
        assert (math.isnan(got) and seconds is None) or got == seconds
    assert sum(math.isnan(s) for s in votes.seconds.tolist()) == 2  # labels 0 and 3 gave no seconds


def test_pool_pairs_equal_the_pairs_read_row_by_row(labelled_pool):
    pairs = pool_pairs(pool=labelled_pool)
    rows = list(PooledPair.objects.filter(pool=labelled_pool, role="pool").order_by("id").values_list(
        "id", "caption_id", "clip_id", "is_original_positive", "state", "resolved_label", "vote_count",
        "resolved_by_admin"))
    assert pairs.id.tolist() == [r[0] for r in rows]
    assert (pairs.caption.tolist(), pairs.clip.tolist()) == ([r[1] for r in rows], [r[2] for r in rows])
    assert pairs.is_original.dtype == bool and pairs.is_original.tolist() == [r[3] for r in rows]
    assert pairs.state.dtype == object and pairs.state.tolist() == [r[4] for r in rows]
    assert len(set(pairs.state.tolist())) > 1  # resolved and open pairs both read
    assert pairs.resolved.tolist() == [(1 if r[5] == "relevant" else 0) if r[4] == "resolved" else -1 for r in rows]
    assert pairs.votes.tolist() == [r[6] for r in rows] and pairs.by_admin.tolist() == [r[7] for r in rows]
    assert (pairs.resolved.dtype, pairs.votes.dtype) == (np.int16, np.int32)  # codes and counts: narrow columns


def test_an_empty_read_gives_empty_columns_of_the_types_asked():
    unlabelled, _ = make_pool_with_runs()
    votes = pool_votes(pool=unlabelled)
    assert votes.pair.size == 0 and votes.pair.dtype == np.int64 and votes.seconds.dtype == np.float64


def _copy(sql: str, dtypes: list, size: int, piece: int) -> list[np.ndarray]:
    sink = reports._BinaryColumns(dtypes, size)
    chunks = []

    class Pieces:  # the stream handed on in small pieces: rows and the header split anywhere
        def write(self, data):
            chunks.append(bytes(data))

    with connection.cursor() as cursor:
        cursor.cursor.copy_expert(f"COPY ({sql}) TO STDOUT (FORMAT binary)", Pieces())
    stream = b"".join(chunks)
    for start in range(0, len(stream), piece):
        sink.write(stream[start:start + piece])
    return sink.columns()


@pytest.mark.postgres
@pytest.mark.parametrize("piece", [1, 7, 1 << 20])
def test_the_binary_copy_parser_on_extreme_values_and_a_stream_in_pieces(piece):
    if connection.vendor != "postgresql":
        pytest.fail("needs PostgreSQL")
    # int16 and int32 columns (codes and counts) are sent as smallint and integer: 2 and 4 bytes.
    sql = ("SELECT a::bigint, b::double precision, c::boolean, d::smallint, e::integer FROM (VALUES "
           "(-4611686018427387904, '-0', true, -32768, -2147483648), (1099511627776, '1e300', false, 32767, 2147483647), "
           "(0, 'NaN', true, -1, 0), (-1, '-Infinity', false, 0, -1), (7, '2.5e-310', true, 1, 1)) AS v(a, b, c, d, e) "
           "ORDER BY a")
    ints, floats, flags, small, middle = _copy(sql, [np.int64, float, bool, np.int16, np.int32], size=0,
                                               piece=piece)  # size 0: the arrays grow
    assert ints.tolist() == [-4611686018427387904, -1, 0, 7, 1099511627776]
    assert floats[1] == -math.inf and math.isnan(floats[2]) and floats[3] == 2.5e-310 and floats[4] == 1e300
    assert floats[0] == 0 and math.copysign(1, floats[0]) == -1.0  # -0.0 keeps its sign
    assert flags.tolist() == [True, False, True, True, False]
    assert (small.dtype, middle.dtype) == (np.int16, np.int32)
    assert small.tolist() == [-32768, 0, -1, 1, 32767] and middle.tolist() == [-2147483648, -1, 0, 1, 2147483647]


def test_a_column_type_with_no_wire_type_is_refused():
    with pytest.raises(ValueError, match="no column type for int8"):
        reports._wire(np.int8)


@pytest.mark.postgres
def test_a_value_out_of_a_narrow_columns_range_is_an_error_not_a_wrapped_number(labelled_pool):
    if connection.vendor != "postgresql":
        pytest.fail("needs PostgreSQL")
    from django.db import transaction
    from psycopg2.errors import NumericValueOutOfRange  # the COPY runs on psycopg2's own cursor
    with pytest.raises(NumericValueOutOfRange, match="smallint out of range"), transaction.atomic():
        reports._columns(PooledPair.objects.filter(pool=labelled_pool).annotate(big=Value(40000)), ["big"], [np.int16])


@pytest.mark.postgres
def test_a_null_or_a_column_of_another_type_is_refused_not_misread():
    if connection.vendor != "postgresql":
        pytest.fail("needs PostgreSQL")
    with pytest.raises(ValueError, match="not the columns asked for"):
        _copy("SELECT a::bigint FROM (VALUES (1), (NULL), (3)) AS v(a)", [np.int64], size=3, piece=1 << 20)
    with pytest.raises(ValueError, match="not the columns asked for"):
        _copy("SELECT a::integer FROM (VALUES (1), (2)) AS v(a)", [np.int64], size=2, piece=1 << 20)
