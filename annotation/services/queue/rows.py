"""Model instances from the queue's plain SQL, as `Model.objects.raw()` makes them, for less CPU.

Every judged pair runs several raw reads (the pool for the rater, the leased pair, the query row,
earlier labels). `raw()` works out anew for every statement which columns are the model's, in
what order the model takes them and which converters each needs: more CPU than PostgreSQL spends
answering. That work depends only on the model and the statement's column names, so it is done
once per (model, columns, database vendor) here; the rows themselves are always read fresh.
Columns that are not the model's become attributes, unconverted, as with `raw()`.
"""
from __future__ import annotations

import functools

from django.db import connection

from annotation import prepared


@functools.cache
def _plan(model, columns: tuple[str, ...], vendor: str):
    by_column = {f.column: f for f in model._meta.concrete_fields}
    # In the model's field order, which from_db() assumes (a table's columns are in the order
    # migrations added them, which can differ).
    order = {f.column: n for n, f in enumerate(model._meta.concrete_fields)}
    model_fields = sorted(((i, by_column[name]) for i, name in enumerate(columns) if name in by_column),
                          key=lambda found: order[found[1].column])
    if model._meta.pk.column not in columns:
        raise ValueError(f"the statement must select {model._meta.pk.column!r} of {model.__name__}")
    converters = []
    for position, (_, field) in enumerate(model_fields):
        expression = field.get_col(model._meta.db_table)
        found = connection.ops.get_db_converters(expression) + expression.get_db_converters(connection)
        if found:
            converters.append((position, found, expression))
    extras = [(i, name) for i, name in enumerate(columns) if name not in by_column]
    return [i for i, _ in model_fields], [f.attname for _, f in model_fields], converters, extras


def raw_rows(model, sql: str, params, *, inline: tuple[str, ...] = ()) -> list:
    """The instances of `model` that `sql` selects (a prepared statement on PostgreSQL: `inline`
    as in annotation.prepared.execute)."""
    with connection.cursor() as cursor:
        db = cursor.db  # the connection itself, not looked up through the proxy again per value
        prepared.execute(cursor, sql, params, inline=inline)
        columns = tuple(col[0] for col in cursor.description)
        rows = cursor.fetchall()
    return instances_from(model, db, columns, rows)


def instances_from(model, db, columns: tuple[str, ...], rows) -> list:
    """The instances of `model` in `rows` (tuples of `columns`, as a cursor on `db` gave them)."""
    if not rows:
        return []
    positions, attnames, converters, extras = _plan(model, columns, db.vendor)
    alias, out = db.alias, []
    for row in rows:
        values = [row[i] for i in positions]
        for position, found, expression in converters:
            value = values[position]
            for converter in found:
                value = converter(value, expression, db)
            values[position] = value
        instance = model.from_db(alias, attnames, values)
        for i, name in extras:
            setattr(instance, name, row[i])
        out.append(instance)
    return out


def raw_first(model, sql: str, params, *, inline: tuple[str, ...] = ()):
    """The first instance `sql` selects, or None."""
    found = raw_rows(model, sql, params, inline=inline)
    return found[0] if found else None
