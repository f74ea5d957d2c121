"""Whole numbers typed by a client into a query string or a form field (ids, offsets, limits,
hours): the one parser the API (api/params.py) and the pages (frontend/views) read them with.

Only the ASCII digits 0-9 are a number here. str.isdigit() also accepts '²', which int() refuses
(a 500 on `?pool=²`); int() itself accepts '١' (Arabic-Indic), '+1', ' 1' and '1_000', and refuses
more than 4,300 digits with a ValueError. None of those is an id anyone meant. Below the API and the
pages, which do not import each other, and free of Django, so both can use it.
"""
from __future__ import annotations

import re

_ASCII_DIGITS = re.compile(r"[0-9]+")


class NotAWholeNumber(ValueError):
    """The text is not a whole number in range; the message says what was expected."""


def whole_number(text: str, *, low: int, high: int) -> int:
    """The number `text` writes in ASCII digits (no sign, space or exponent), low <= n <= high."""
    if not isinstance(text, str) or not _ASCII_DIGITS.fullmatch(text):
        raise NotAWholeNumber("expected a whole number written with the digits 0-9")
    digits = text.lstrip("0") or "0"
    if len(digits) > len(str(high)) or int(digits) > high:  # never int() of 5,000 digits
        raise NotAWholeNumber(f"must be at most {high}")
    value = int(digits)
    if value < low:
        raise NotAWholeNumber(f"must be at least {low}")
    return value


#: The largest id the database holds (64-bit signed integers, SQLite's and PostgreSQL's bigint).
ID_MAX = 2**63 - 1


def id_or_none(text: str | None) -> int | None:
    """An id a page was given in its query string, or None when the text is not one (a page shows
    itself as if nothing was chosen rather than refusing)."""
    try:
        return whole_number(text or "", low=1, high=ID_MAX)
    except NotAWholeNumber:
        return None
