"""Query parameters read the way request bodies are, through a serializer field, so a bad value is
a 400 naming the parameter. Reading them with str.isdigit() and int() answered 500 to ?pool=²
('²' is a digit to isdigit, not to int), to 5,000 digits (int refuses them) and, for ?hours=,
to values too large for a date. Unless a narrower range is given, the value must fit the database
(api/bounds.py): a larger id answered 500 on SQLite."""
from __future__ import annotations

from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from api.bounds import DB_INT_MAX, DB_INT_MIN


def query_int(request, name: str, *, default: int | None = None, min_value: int | None = None,
              max_value: int | None = None) -> int | None:
    """The integer query parameter `name`, `default` when absent or empty."""
    raw = request.query_params.get(name, "")
    if raw == "":
        return default
    field = serializers.IntegerField(min_value=DB_INT_MIN if min_value is None else max(min_value, DB_INT_MIN),
                                     max_value=DB_INT_MAX if max_value is None else min(max_value, DB_INT_MAX))
    try:
        return field.run_validation(raw)
    except ValidationError as exc:
        raise ValidationError({name: exc.detail}) from exc

