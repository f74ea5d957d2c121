"""Query parameters that take a whole number (ids, offsets, limits, hours), read through the one
parser the pages use too (annotation.query_numbers: ASCII digits only), so a bad value is a 400
naming the parameter. Reading them with str.isdigit() and int() answered 500 to ?pool=² ('²' is a
digit to isdigit, not to int), to 5,000 digits (int refuses them) and, for ?hours=, to values too
large for a date; int() and DRF's IntegerField also took '١', '+1' and ' 1' for 1. Unless a narrower
range is given, the value must fit the database (api/bounds.py): a larger id answered 500 on SQLite."""
from __future__ import annotations

from rest_framework.exceptions import ValidationError

from annotation.query_numbers import NotAWholeNumber, whole_number
from api.bounds import DB_INT_MAX


def query_int(request, name: str, *, default: int | None = None, min_value: int | None = None,
              max_value: int | None = None) -> int | None:
    """The whole-number query parameter `name` (0 or more), `default` when absent or empty."""
    raw = request.query_params.get(name, "")
    if raw == "":
        return default
    try:
        return whole_number(raw, low=max(min_value or 0, 0),
                            high=DB_INT_MAX if max_value is None else min(max_value, DB_INT_MAX))
    except NotAWholeNumber as exc:
        raise ValidationError({name: [str(exc)]}) from exc


#: The longest Idempotency-Key kept (Job.idempotency_key's column): a longer one is cut, not refused.
IDEMPOTENCY_KEY_MAX = 100


def idempotency_key(request) -> str | None:
    """The request's `Idempotency-Key` header, trimmed (None when absent or blank): the upload
    endpoints give a request sent again with the same key the first job or submission back."""
    return (request.headers.get("Idempotency-Key") or "").strip()[:IDEMPOTENCY_KEY_MAX] or None
