"""Inserting many plain rows fast: COPY on PostgreSQL, batched INSERTs elsewhere.

The ORM's bulk_create builds a model instance per row and a large VALUES statement per batch; at
pool scale (10^5–10^6 rows) that costs a minute where COPY takes seconds.
A database helper beside prepared.py, used by the dataset imports and the pool builds.
"""
from __future__ import annotations

import io
from collections.abc import Iterable
from itertools import islice

from django.db import connection

BATCH = 50_000
_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _copy_value(value) -> str:
    if value is None:
        return r"\N"
    if isinstance(value, str):
        return value.translate(_ESCAPES)
    return str(value)


def rows_insert(model, fields: list[str], rows: Iterable[tuple]) -> int:
    """Inserts tuples (in the order of `fields`) into the model's table; returns how many."""
    table = connection.ops.quote_name(model._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(model._meta.get_field(f).column) for f in fields)
    rows = iter(rows)
    count = 0
    with connection.cursor() as cursor:
        while batch := list(islice(rows, BATCH)):
            if connection.vendor == "postgresql":
                text = io.StringIO()
                text.writelines("\t".join(_copy_value(v) for v in row) + "\n" for row in batch)
                text.seek(0)
                cursor.cursor.copy_expert(f"COPY {table} ({columns}) FROM STDIN", text)
            else:
                cursor.executemany(f"INSERT INTO {table} ({columns}) VALUES ({', '.join(['%s'] * len(fields))})", batch)
            count += len(batch)
    return count


def ids_reserve(model, count: int) -> list[int]:
    """PostgreSQL only: `count` ids from the table's own sequence, so rows COPYed with them can be
    referred to (a caption's clip) without reading them back."""
    if count <= 0:
        return []
    with connection.cursor() as cursor:
        cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
                       [model._meta.db_table, count])
        return [row[0] for row in cursor.fetchall()]
