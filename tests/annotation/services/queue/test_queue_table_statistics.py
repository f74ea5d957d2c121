"""services/queue/table_statistics.py: the lease and label tables are analyzed as they grow, so a
plan PostgreSQL cached while they were nearly empty does not go on scanning them whole.

Needs PostgreSQL: the plans, the counters and ANALYZE are its own. Autovacuum is turned off for the
lease table during the test (it is off on the CI machines anyway), so it cannot analyze first."""
from __future__ import annotations

import pytest
from django.db import connection, transaction

from annotation.models import Label, Lease
from annotation.services.queue import table_statistics
from annotation.services.queue.table_statistics import (STATISTICS_CHECK_EVERY, queue_statistics_due,
                                                        queue_statistics_refresh)

from tests.factories import make_pool_with_runs, make_rater

LEASE = Lease._meta.db_table


def test_the_check_is_due_at_most_once_per_period(monkeypatch):
    monkeypatch.setattr(table_statistics, "_next_check", 0.0)
    assert queue_statistics_due(now=100.0)
    assert not queue_statistics_due(now=100.0 + STATISTICS_CHECK_EVERY - 0.01)
    assert queue_statistics_due(now=100.0 + STATISTICS_CHECK_EVERY)


def _one(sql: str, params=()):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone() if cursor.description else None


def _generic_plan() -> str:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN EXECUTE stats_probe('no-such-token')")
        return "\n".join(row[0] for row in cursor.fetchall())


def _flush_counters() -> None:
    """This session's row counters reach the shared statistics when it next goes idle."""
    _one("SELECT pg_stat_force_next_flush()")
    _one("SELECT 1")


@pytest.fixture
def lease_table_without_autovacuum(require_postgres):
    _one(f"ALTER TABLE {LEASE} SET (autovacuum_enabled = false)")
    # Earlier tests' rows (and their flush) count as changes too: only this test's should.
    _flush_counters()
    _one(f"ANALYZE {LEASE}, {Label._meta.db_table}")
    yield
    _one(f"ALTER TABLE {LEASE} RESET (autovacuum_enabled)")
    _one("DEALLOCATE ALL")  # the probe below, and the session's own: prepared.py prepares again
    from annotation import prepared

    prepared._held(connection).names.clear()


def _add_leases(pair_ids: list[int], rater_id: int, n: int, offset: int) -> None:
    _one(f"""INSERT INTO {LEASE} (pair_id, rater_id, token, state, device, created_at, expires_at)
             SELECT (%s::bigint[])[1 + i %% %s], %s, 'probe' || i, 'completed', '', now(), now()
             FROM generate_series(%s, %s) AS i RETURNING 1""",
         [pair_ids, len(pair_ids), rater_id, offset, offset + n - 1])


def _leases_analyzed(n: int) -> tuple[list[int], object]:
    """A pool's pair ids and a rater, with n of their (completed) leases, analyzed."""
    pool, *_ = make_pool_with_runs()
    pair_ids = list(pool.pairs.values_list("pk", flat=True))
    rater = make_rater()
    _add_leases(pair_ids, rater.pk, n, 0)
    _flush_counters()  # else they would count as changes since the analysis
    _one(f"ANALYZE {LEASE}")
    return pair_ids, rater


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_plan_cached_on_a_near_empty_lease_table_is_replaced_once_the_table_has_grown(lease_table_without_autovacuum):
    pair_ids, rater = _leases_analyzed(3)
    # A generic plan, as a prepared statement gets after its first runs, made on three rows.
    _one("SET plan_cache_mode = force_generic_plan")
    try:
        _one(f"PREPARE stats_probe(text) AS SELECT id FROM {LEASE} WHERE token = $1")
        assert "Seq Scan" in _generic_plan()

        _add_leases(pair_ids, rater.pk, 60_000, 3)
        _flush_counters()
        # The cached plan would stay as long as the statistics do, but is not asserted here: other
        # sessions' catalogue changes (another test worker's database) can overflow PostgreSQL's
        # shared invalidation queue, which resets every session's plans.

        assert queue_statistics_refresh() == [LEASE]
        plan = _generic_plan()
        assert "Index" in plan and "Seq Scan" not in plan, plan
        assert _one("SELECT n_mod_since_analyze FROM pg_stat_user_tables WHERE relid = %s::regclass", [LEASE])[0] == 0
        assert queue_statistics_refresh() == [], "nothing changed since: nothing to analyze"
    finally:
        _one("RESET plan_cache_mode")


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_fewer_changes_than_autovacuums_rule_leave_the_statistics_alone(lease_table_without_autovacuum):
    pair_ids, rater = _leases_analyzed(1_000)
    threshold = _one("SELECT current_setting('autovacuum_analyze_threshold')::float8"
                     " + current_setting('autovacuum_analyze_scale_factor')::float8 * 1000")[0]
    _add_leases(pair_ids, rater.pk, int(threshold) - 1, 1_000)  # one short of the rule
    _flush_counters()
    assert queue_statistics_refresh() == []
    _add_leases(pair_ids, rater.pk, 2, 5_000)
    _flush_counters()
    assert queue_statistics_refresh() == [LEASE]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_rater_asking_for_work_is_what_triggers_the_check(lease_table_without_autovacuum, monkeypatch):
    from rest_framework.test import APIClient

    from annotation.services.accounts.raters import memberships_grant

    pool, *_ = make_pool_with_runs()
    pair_ids = list(pool.pairs.values_list("pk", flat=True))
    rater = make_rater()
    memberships_grant(pool=pool, users=[rater])
    _add_leases(pair_ids, rater.pk, 500, 0)
    _flush_counters()
    analyses = _one("SELECT analyze_count FROM pg_stat_user_tables WHERE relid = %s::regclass", [LEASE])[0]
    monkeypatch.setattr(table_statistics, "_next_check", 0.0)
    client = APIClient()
    client.force_authenticate(rater)
    response = client.post(f"/api/v1/pools/{pool.pk}/next/", {}, format="json")
    assert response.status_code == 200 and response.json()["assignment"] is not None
    assert _one("SELECT analyze_count FROM pg_stat_user_tables WHERE relid = %s::regclass", [LEASE])[0] == analyses + 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_nothing_is_analyzed_inside_a_transaction(lease_table_without_autovacuum):
    pool, *_ = make_pool_with_runs()
    _add_leases(list(pool.pairs.values_list("pk", flat=True)), make_rater().pk, 500, 0)
    _flush_counters()
    with transaction.atomic():
        assert queue_statistics_refresh() == []
    assert queue_statistics_refresh() == [LEASE]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_failed_check_is_logged_and_raises_nothing(lease_table_without_autovacuum, monkeypatch, caplog):
    _one("SET statement_timeout = 1")  # the check (a 50 ms sleep here) is cancelled
    try:
        monkeypatch.setattr(table_statistics, "_STALE_SQL", "SELECT pg_sleep(0.05), %s::text[]")
        assert queue_statistics_refresh() == []
    finally:
        _one("RESET statement_timeout")
    assert "queue table statistics not refreshed" in caplog.text
    assert _one("SELECT 1") == (1,), "the connection is still usable"
