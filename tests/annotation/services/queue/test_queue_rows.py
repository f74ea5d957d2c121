"""raw_rows() makes the instances Model.objects.raw() would, whatever order the columns come in."""
from __future__ import annotations

import pytest

from annotation.models import Label, PooledPair
from annotation.services.queue.rows import raw_first, raw_rows
from tests.factories import make_pool_with_runs

pytestmark = pytest.mark.django_db


def _fields(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def test_raw_rows_match_django_raw_in_any_column_order_with_extra_columns():
    pool, _ = make_pool_with_runs(captions=2, clips=3, depth=2)
    PooledPair.objects.filter(pool=pool).update(state="resolved", resolved_label="relevant", judged_at="2026-01-02T03:04:05Z")
    table = PooledPair._meta.db_table
    # Reversed: a model's fields in another order than its table's columns (as migrations leave them) once
    # put each value in the wrong field.
    columns = ", ".join(f'"{f.column}"' for f in reversed(PooledPair._meta.concrete_fields))
    sql = f"SELECT {columns}, 1 + 1 AS two FROM {table} WHERE pool_id = %(pool)s ORDER BY id"
    ours, django = raw_rows(PooledPair, sql, {"pool": pool.pk}), list(PooledPair.objects.raw(sql, {"pool": pool.pk}))
    assert len(ours) == len(django) == pool.pairs.count() > 1
    for a, b in zip(ours, django, strict=True):
        assert _fields(a) == _fields(b) and a.state == "resolved" and a.judged_at is not None
        assert a.two == b.two == 2 and not a._state.adding
    assert raw_first(Label, f"SELECT * FROM {Label._meta.db_table} WHERE id = %(id)s", {"id": -1}) is None
    with pytest.raises(ValueError, match="must select 'id'"):
        raw_rows(PooledPair, f"SELECT pool_id FROM {table} WHERE pool_id = %(pool)s", {"pool": pool.pk})
