"""Planner statistics for the queue's fast-growing tables (leases and labels), kept fresh on PostgreSQL.

PostgreSQL plans a statement from the statistics it has of each table, and keeps a plan it has
cached (a prepared statement's generic plan, a foreign-key check's) until the table is analyzed
again. Plans first made while a new campaign's lease and label tables held a handful of rows scan
those tables whole, and kept doing so as they grew: nine whole lease scans per label after 2,830
labels (bench/bench_queue_latency.py, 5K pool, a new database).

Autovacuum analyzes a table once the rows changed since its last analysis exceed
`autovacuum_analyze_threshold + autovacuum_analyze_scale_factor * rows` (50 + 10% by default). Where
autovacuum is off (as on this project's CI machines) or behind, the queue applies the same rule,
with the server's own settings: `queue_statistics_refresh` reads the two tables' counters (one
catalogue query) and analyzes those past it. `lease_next` calls it at most every
STATISTICS_CHECK_EVERY seconds per process, outside any transaction. Analysing invalidates every
session's cached plans on the table, so all connections replan at once. With autovacuum keeping up
it finds nothing to do.
"""
from __future__ import annotations

import logging
import time

from django.db import DatabaseError, connection

from annotation.models import Label, Lease

STATISTICS_CHECK_EVERY = 5.0  # seconds between two checks in one process

# Tables whose rows a campaign adds by the thousand while its statements' plans are cached.
_TABLES = (Lease._meta.db_table, Label._meta.db_table)

_STALE_SQL = """
SELECT s.relname FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
WHERE s.relid = ANY(%s::regclass[])
  AND s.n_mod_since_analyze > current_setting('autovacuum_analyze_threshold')::float8
                              + current_setting('autovacuum_analyze_scale_factor')::float8 * GREATEST(c.reltuples, 0)
ORDER BY s.relname
"""

_next_check = 0.0  # time.monotonic() of this process's next check
logger = logging.getLogger(__name__)


def queue_statistics_refresh() -> list[str]:
    """Analyzes the queue's tables that changed past autovacuum's rule since their last analysis;
    returns their names. SKIP_LOCKED: a table another session is analyzing (autovacuum, another
    worker) is left to it rather than waited for. Nothing on SQLite, nor inside a transaction (the
    analysis's lock would be held to its end)."""
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        return []
    try:
        stale = stale_tables_analyze(_TABLES)
    except DatabaseError as error:
        # Upkeep that failed (a statement timeout, a cancelled query) must not cost the rater the
        # pair they asked for; the next check tries again.
        logger.warning("queue table statistics not refreshed: %s", str(error).strip())
        return []
    return stale


def stale_tables_analyze(tables) -> list[str]:
    """Analyzes those of `tables` (PostgreSQL names) whose rows changed past autovacuum's rule since
    their last analysis (SKIP_LOCKED); returns their names. The rule's one home: the queue's upkeep
    and a bulk delete (services/deletes.py) both ask it."""
    with connection.cursor() as cursor:
        cursor.execute(_STALE_SQL, [list(tables)])
        stale = [row[0] for row in cursor.fetchall()]
        if stale:
            cursor.execute(f"ANALYZE (SKIP_LOCKED) {', '.join(connection.ops.quote_name(name) for name in stale)}")
    return stale


def queue_statistics_due(now: float | None = None) -> bool:
    """True at most once per STATISTICS_CHECK_EVERY seconds in this process (a clock read, no
    round trip: it runs on every "next")."""
    global _next_check
    now = time.monotonic() if now is None else now
    if now < _next_check:
        return False
    _next_check = now + STATISTICS_CHECK_EVERY
    return True
