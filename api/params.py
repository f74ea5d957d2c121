"""Query parameters read the way request bodies are, through a serializer field, so a bad value is
a 400 naming the parameter. Reading them with str.isdigit() and int() answered 500 to ?pool=²
('²' is a digit to isdigit, not to int), to 5,000 digits (int refuses them) and, for ?hours=,
to values too large for a date."""
from __future__ import annotations

from rest_framework import serializers
from rest_framework.exceptions import ValidationError


def query_int(request, name: str, *, default: int | None = None, min_value: int | None = None,
              max_value: int | None = None) -> int | None:
    """The integer query parameter `name`, `default` when absent or empty."""
    raw = request.query_params.get(name, "")
    if raw == "":
        return default
    field = serializers.IntegerField(min_value=min_value, max_value=max_value)
    try:
        return field.run_validation(raw)
    except ValidationError as exc:
        raise ValidationError({name: exc.detail}) from exc

