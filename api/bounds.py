"""The range of integers the database can hold, and the request-level checks that keep numbers a
client sends inside it, so that every endpoint (new ones included) inherits them.

SQLite and PostgreSQL both store integers (ids, bigint columns) as 64-bit signed. A larger Python int
reaching a query answered 500 on SQLite (`OverflowError: Python int too large to convert to SQLite
INTEGER`) wherever it came from: a path, a query string, a body, a list of ids. PostgreSQL compares
such a number as numeric and finds nothing, which is why the fuzz run there never saw it.

- In a path, `<id:name>` (registered in config/urls.py) matches only integers the database can hold:
  a larger one is a 404, as no such object can exist.
- In a query string, api.params.query_int and id_field refuse them (400 naming the parameter), reading
  ASCII digits only (annotation.query_numbers).
- In a JSON body, api.parsers.JSONParser refuses them (400 naming the field), whatever the field.
"""
from __future__ import annotations

from collections.abc import Iterator

from rest_framework import serializers

from annotation.query_numbers import ID_MAX, NotAWholeNumber, whole_number

DB_INT_MIN = -(2**63)
DB_INT_MAX = ID_MAX


class IdConverter:
    """Django's `int` path converter bounded to what the database holds."""

    regex = "[0-9]+"

    def to_python(self, value: str) -> int:
        number = int(value)  # ValueError (over 4,300 digits) is "no match" too: a 404
        if number > DB_INT_MAX:
            raise ValueError(f"{value} is beyond the largest id the database holds")
        return number

    def to_url(self, value: int) -> str:
        return str(value)


def out_of_range_integers(data) -> Iterator[tuple[tuple, int]]:
    """(path, value) of each integer in a parsed JSON body that the database cannot hold; the path
    is the keys and list positions leading to it. Walked without recursion (bodies are nested at
    most api.parsers.MAX_DEPTH levels, but the walk need not rely on it)."""
    stack = [((), data)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, dict):
            stack.extend(((*path, key), value) for key, value in reversed(list(item.items())))
        elif isinstance(item, list):
            stack.extend(((*path, i), value) for i, value in reversed(list(enumerate(item))))
        elif isinstance(item, int) and not isinstance(item, bool) and not DB_INT_MIN <= item <= DB_INT_MAX:
            yield path, item


def out_of_range_message(path: tuple, value: int) -> tuple[str, str]:
    """The field to name (the body's top-level key) and the message, for a 400 in DRF's shape."""
    field = str(path[0]) if path and isinstance(path[0], str) else "non_field_errors"
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path[1:])
    shown = str(value) if len(str(value)) <= 30 else str(value)[:27] + "..."
    return field, (f"{field}{where}: {shown} is out of range (integers must lie between {DB_INT_MIN} and "
                   f"{DB_INT_MAX})")


class _QueryIdField(serializers.IntegerField):
    """Reads a string as annotation.query_numbers does (ASCII digits only: IntegerField alone takes
    '١', '+1' and ' 1' for 1); a JSON number as IntegerField does."""

    def to_internal_value(self, data):
        if isinstance(data, str):
            try:
                return whole_number(data, low=1, high=DB_INT_MAX)
            except NotAWholeNumber as exc:
                raise serializers.ValidationError([str(exc)]) from exc
        return super().to_internal_value(data)


def id_field(**options) -> serializers.IntegerField:
    """An object's id read by a serializer from a query string or a form (a JSON body is already
    bounded by the parser): ASCII digits, 1 to DB_INT_MAX, a 400 naming the field otherwise."""
    return _QueryIdField(min_value=1, max_value=DB_INT_MAX, **options)


# The time a client reports for one answer (labels, rankings). No one judges a clip for a day: a
# larger value is a broken or hostile client, and one 1e308 stored made the quality table's mean
# infinite. One day, not less, so that a tab left open overnight still reports honestly.
MAX_ANSWER_SECONDS = 24 * 3600


def answer_seconds_field():
    """The `seconds` field of an answer (label, ranking): optional, 0 to MAX_ANSWER_SECONDS."""
    return serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=MAX_ANSWER_SECONDS,
                                  help_text="Seconds the client measured for this answer (at most a day).")
