"""Server-side prepared statements for the statements every judged pair runs, on PostgreSQL.

PostgreSQL parses, analyses and plans every statement it is sent; for the queue's short
statements that costs more CPU than running them (about 2.3 ms of the database's 5 ms per
label: bench/bench_queue_latency.py --explain). psycopg2 has no protocol-level prepare, so
`execute` sends `PREPARE name AS ...` once per connection and `EXECUTE name(...)` after that:
PostgreSQL then skips parsing and, once its plan cache finds a generic plan no costlier than
the custom ones (after five runs), planning too.

- Parameters named in `inline` are written into the prepared text as literals (quoted by the
  driver), each distinct value its own statement: they are the few constants (a pair's role, a
  lease state) that the partial indexes' predicates name, so a generic plan can still use them.
  Everything else goes through `$n` parameters, values never into SQL text.
- A statement PostgreSQL cannot prepare (a parameter whose type it cannot infer) is run plainly
  from then on and logged once; inside a transaction its PREPARE runs under a savepoint, so the
  failure leaves the transaction usable.
- Prepared statements belong to a connection and outlive a rolled-back transaction. They are
  remembered per DB-API connection object, so a reconnect starts afresh.
- REJUDGE_DB_PREPARED_STATEMENTS=0 turns it off (a pooler in transaction mode, such as pgbouncer's
  `pool_mode = transaction` before 1.21, hands a session's statements to other sessions).
"""
from __future__ import annotations

import functools
import hashlib
import logging
import re

from django.conf import settings
from django.db import DatabaseError

logger = logging.getLogger(__name__)

_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%s|%%")
_UNPREPARABLE: set[str] = set()


@functools.cache
def _template(sql: str) -> tuple:
    """The statement cut at its placeholders: text pieces alternating with ("name" | position)
    markers. `%%` becomes `%` (PREPARE's text is sent without parameters, so the driver no longer
    un-doubles it)."""
    parts: list = []
    last, positional = 0, 0
    for match in _PLACEHOLDER.finditer(sql):
        parts.append(sql[last:match.start()])
        if match.group(0) == "%%":
            parts.append("%")
        elif match.group(1) is not None:
            parts.append(("name", match.group(1)))
        else:
            parts.append(("position", positional))
            positional += 1
        last = match.end()
    parts.append(sql[last:])
    return tuple(parts)


def _prepared_form(cursor, sql: str, params, inline: tuple[str, ...]) -> tuple[str, str, list]:
    """(statement name, PREPARE text, the values for EXECUTE in $n order)."""
    constants = tuple((key, params[key]) for key in inline if isinstance(params, dict) and key in params)
    name, body, keys = _statement(cursor, sql, constants)
    return name, body, [params[key] for key in keys]


_STATEMENTS: dict = {}


def _statement(cursor, sql: str, constants: tuple) -> tuple[str, str, tuple]:
    """(name, PREPARE text, the parameter keys in $n order) of `sql` with `constants` written in:
    worked out once per statement and constants, as every judged pair runs the same few."""
    found = _STATEMENTS.get((sql, constants))
    if found is not None:
        return found
    parts = _template(sql)
    inline = dict(constants)
    numbers: dict = {}
    text: list[str] = []
    for part in parts:
        if isinstance(part, str):
            text.append(part)
            continue
        kind, key = part
        if kind == "name" and key in inline:
            text.append(cursor.mogrify("%s", [inline[key]]).decode())
            continue
        numbers.setdefault(key, len(numbers) + 1)
        text.append(f"${numbers[key]}")
    literals = "\0".join(f"{key}={value!r}" for key, value in constants)
    digest = hashlib.sha1(f"{sql}\0{literals}".encode()).hexdigest()[:16]
    found = (f"rejudge_{digest}", "".join(text), tuple(numbers))
    if len(_STATEMENTS) < 10_000:  # a bound, should a caller ever inline a value that varies
        _STATEMENTS[(sql, constants)] = found
    return found


def _enabled(db) -> bool:
    return db.vendor == "postgresql" and settings.REJUDGE["DB_PREPARED_STATEMENTS"]


class _Held:
    """What one DB-API connection has prepared. `generation` is part of every statement's name:
    after PostgreSQL refused a prepared statement (see StatementsReset) it is raised, so the
    statements are prepared again under new names (the old ones may still exist there)."""

    def __init__(self, raw) -> None:
        self.raw, self.names, self.generation = raw, set(), 0


def _held(db) -> _Held:
    raw = db.connection
    held = getattr(db, "_rejudge_prepared", None)
    if held is None or held.raw is not raw:
        held = db._rejudge_prepared = _Held(raw)
    return held


class StatementsReset(DatabaseError):
    """PostgreSQL refused a prepared statement: a migration changed the columns a statement
    returns ("cached plan must not change result type"), or the session lost its statements
    (DISCARD ALL). The connection's statements are prepared anew from the next call on; inside a
    transaction the transaction is lost, so the caller may run it again (label_submit does)."""


# SQLSTATEs: feature_not_supported (a cached plan whose result type changed), invalid_sql_statement_name
# (no such prepared statement).
_RESET_CODES = {"0A000", "26000"}
_DUPLICATE = "42P05"  # duplicate_prepared_statement


def execute(cursor, sql: str, params=(), *, inline: tuple[str, ...] = (), _again: bool = True) -> None:
    """`cursor.execute(sql, params)`, through a prepared statement where it can be (see above).

    `cursor` is a Django cursor (`connection.cursor()`); `params` a dict for `%(name)s`
    placeholders or a sequence for `%s` ones; `inline` names dict parameters whose values are
    written into the prepared text."""
    db = cursor.db  # the Django connection the cursor belongs to (not looked up again: it is per thread)
    if not _enabled(db) or sql in _UNPREPARABLE:
        cursor.execute(sql, params)
        return
    held = _held(db)
    name, body, values = _prepared_form(cursor, sql, params, inline)
    name = f"{name}_{held.generation}"
    if name not in held.names:
        if not _prepare(cursor, db, name, body, sql):
            cursor.execute(sql, params)
            return
        held.names.add(name)
    try:
        if values:
            cursor.execute(f"EXECUTE {name}({', '.join(['%s'] * len(values))})", values)
        else:
            cursor.execute(f"EXECUTE {name}")
    except DatabaseError as error:
        if getattr(error.__cause__, "pgcode", None) not in _RESET_CODES:
            raise
        held.names.clear()
        held.generation += 1
        logger.warning("prepared statements of this connection reset (%s)", str(error).strip())
        if db.in_atomic_block or not _again:
            raise StatementsReset(str(error)) from error
        execute(cursor, sql, params, inline=inline, _again=False)  # autocommit: nothing was lost, run it again


def _prepare(cursor, db, name: str, body: str, sql: str) -> bool:
    in_transaction = db.in_atomic_block
    if in_transaction:
        cursor.execute("SAVEPOINT rejudge_prepare")
    try:
        cursor.execute(f"PREPARE {name} AS {body}")
    except DatabaseError as error:
        if in_transaction:
            cursor.execute("ROLLBACK TO SAVEPOINT rejudge_prepare")
        code = getattr(error.__cause__, "pgcode", None) or ""
        if code == _DUPLICATE:  # the session has it already: use it
            return True
        if not code.startswith("42"):  # not the statement's fault (a cancelled query, a lost server)
            raise
        _UNPREPARABLE.add(sql)
        logger.warning("statement run unprepared (PostgreSQL could not prepare it: %s): %s", error, " ".join(sql.split())[:200])
        return False
    if in_transaction:
        cursor.execute("RELEASE SAVEPOINT rejudge_prepare")
    return True
