"""annotation/prepared.py: the hot statements as server-side prepared statements on PostgreSQL.

The text conversion is checked on any database; what PostgreSQL does with it (prepared once per
connection, a statement it cannot prepare run plainly without losing the transaction, a table
changed under a prepared statement) needs PostgreSQL itself."""
from __future__ import annotations

import uuid

import pytest
from django.db import connection, transaction
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from annotation import prepared
from annotation.models import Label

from tests.factories import make_pool_with_runs, make_rater


def test_placeholders_become_numbered_parameters_once_per_name():
    parts = prepared._template("SELECT %(a)s, %(b)s, %(a)s, 5 %% 2")
    assert parts == ("SELECT ", ("name", "a"), ", ", ("name", "b"), ", ", ("name", "a"), ", 5 ", "%", " 2")


def test_positional_placeholders_are_numbered_in_order():
    parts = prepared._template("UPDATE t SET x = %s WHERE id = %s")
    assert [p for p in parts if not isinstance(p, str)] == [("position", 0), ("position", 1)]


class _FakeCursor:
    """mogrify as psycopg2 quotes a string (only the form is checked here, not a database)."""

    @staticmethod
    def mogrify(template, values):
        return ("'" + str(values[0]).replace("'", "''") + "'").encode()


def test_inlined_constants_are_written_as_literals_and_the_rest_stay_parameters():
    prepared._STATEMENTS.clear()
    sql = "SELECT * FROM t WHERE role = %(role)s AND rater = %(rater)s AND other = %(rater)s AND x LIKE 'a%%'"
    name, body, values = prepared._prepared_form(_FakeCursor, sql, {"role": "gold", "rater": 7}, ("role",))
    assert body == "SELECT * FROM t WHERE role = 'gold' AND rater = $1 AND other = $1 AND x LIKE 'a%'"
    assert values == [7]
    # Another constant value is another statement; another variable value is the same one.
    other, _, _ = prepared._prepared_form(_FakeCursor, sql, {"role": "pool", "rater": 7}, ("role",))
    same, _, values = prepared._prepared_form(_FakeCursor, sql, {"role": "gold", "rater": 8}, ("role",))
    assert other != name and same == name and values == [8]


def test_a_quote_in_an_inlined_constant_cannot_end_the_literal():
    prepared._STATEMENTS.clear()
    _, body, _ = prepared._prepared_form(_FakeCursor, "SELECT %(role)s", {"role": "x'; DROP TABLE t; --"}, ("role",))
    assert body == "SELECT 'x''; DROP TABLE t; --'"


def _statements(captured) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if "SAVEPOINT" not in q["sql"]]


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_statement_is_prepared_once_per_connection_then_executed(require_postgres):
    sql = "SELECT id, value FROM annotation_label WHERE rater_id = %(rater)s AND value = %(value)s"
    with CaptureQueriesContext(connection) as captured, connection.cursor() as cursor:
        for rater in (1, 2, 3):
            prepared.execute(cursor, sql, {"rater": rater, "value": "relevant"}, inline=("value",))
            assert cursor.fetchall() == []
    sent = _statements(captured)
    assert len(sent) == 4, sent
    assert sent[0].startswith("PREPARE rejudge_") and "value = 'relevant'" in sent[0] and "rater_id = $1" in sent[0]
    assert all(s.startswith("EXECUTE rejudge_") for s in sent[1:])
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'rejudge_%%'")
        assert cursor.fetchone()[0] >= 1


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_statement_postgresql_cannot_prepare_runs_plainly_and_the_transaction_goes_on(require_postgres):
    sql = "SELECT %(value)s IS NULL"  # the parameter's type cannot be inferred: PREPARE fails
    with transaction.atomic():
        with connection.cursor() as cursor:
            prepared.execute(cursor, sql, {"value": None})
            assert cursor.fetchone() == (True,)
            prepared.execute(cursor, "SELECT 1 + %(n)s", {"n": 1})  # the transaction is still usable
            assert cursor.fetchone() == (2,)
    assert sql in prepared._UNPREPARABLE


@pytest.mark.postgres
@pytest.mark.django_db
def test_turned_off_it_sends_the_statement_as_it_is(require_postgres):
    sql = "SELECT %(n)s::int * 2"
    with override_settings(REJUDGE={**_rejudge_settings(), "DB_PREPARED_STATEMENTS": False}):
        with CaptureQueriesContext(connection) as captured, connection.cursor() as cursor:
            prepared.execute(cursor, sql, {"n": 21})
            assert cursor.fetchone() == (42,)
    assert _statements(captured) == ["SELECT 21::int * 2"]


def _rejudge_settings() -> dict:
    from django.conf import settings

    return dict(settings.REJUDGE)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_new_connection_prepares_again(require_postgres):
    sql = "SELECT %(n)s::int + 1"
    with connection.cursor() as cursor:
        prepared.execute(cursor, sql, {"n": 1})
        assert cursor.fetchone() == (2,)
    connection.close()  # a new session has none of the old one's statements
    with CaptureQueriesContext(connection) as captured, connection.cursor() as cursor:
        prepared.execute(cursor, sql, {"n": 2})
        assert cursor.fetchone() == (3,)
    sent = _statements(captured)
    assert sent[0].startswith("PREPARE rejudge_") and sent[-1].startswith("EXECUTE rejudge_"), sent


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_name_the_session_already_prepared_is_used_not_refused(require_postgres):
    sql = "SELECT %(n)s::int + 10"
    with connection.cursor() as cursor:
        prepared.execute(cursor, sql, {"n": 1})
        prepared._held(connection).names.clear()  # the module forgot; the session did not
        prepared.execute(cursor, sql, {"n": 2})
        assert cursor.fetchone() == (12,)
    assert sql not in prepared._UNPREPARABLE


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_column_added_under_a_prepared_statement_costs_no_answer(require_postgres, settings):
    # A migration that adds a column to the pairs' table while the web serves: PostgreSQL refuses
    # a prepared "SELECT pp.*" whose result type changed. The statements are prepared again and
    # the rater's next pair and answer go through.
    settings.REJUDGE = {**settings.REJUDGE, "MIN_WATCH_SECONDS": 0}
    from rest_framework.test import APIClient

    from annotation.services.accounts.raters import memberships_grant

    pool, _ = make_pool_with_runs()
    raters = [make_rater()]
    memberships_grant(pool=pool, users=raters)
    client = APIClient()
    client.force_authenticate(raters[0])

    def judge_one():
        nxt = client.post(f"/api/v1/pools/{pool.pk}/next/", {}, format="json")
        assert nxt.status_code == 200, nxt.content
        lease = nxt.json()["assignment"]["lease_id"]
        done = client.post("/api/v1/labels/", {"client_id": uuid.uuid4().hex, "lease_id": lease, "value": "relevant",
                                               "seconds": 1}, format="json")
        assert done.status_code == 201, done.content

    judge_one()  # prepares the hot statements on this connection
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE annotation_pooledpair ADD COLUMN added_by_a_migration integer")
    try:
        judge_one()
        judge_one()
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE annotation_pooledpair DROP COLUMN added_by_a_migration")
    assert Label.objects.filter(rater=raters[0]).count() == 3
    assert prepared._held(connection).generation >= 1  # the statements were prepared anew
