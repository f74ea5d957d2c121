"""Request body parsers that turn any malformed JSON into a 400, never a 500.

DRF's JSONParser catches ValueError only. A body nested a few thousand levels deep makes the
standard library's decoder raise RecursionError instead, which escaped as an HTML 500; and a body
nested a few hundred levels deep parses but can then exhaust the stack wherever it is walked
recursively (validation, rendering, storing as JSON). No body of this API is nested more than a
handful of levels, so anything deeper than MAX_DEPTH is refused before a view sees it.

A number too large for a float (1e309) parses as infinity, which DRF's FloatField lets through: it
was stored, and the response that echoed it could not be rendered as JSON. It is refused here,
as NaN and Infinity literals already are.

An integer the database cannot hold (beyond 64-bit signed, see api/bounds.py) is refused here too,
with a 400 naming the field, so no view's query sees it (SQLite raised OverflowError: a 500).
"""
from __future__ import annotations

import codecs
import json
import math

from rest_framework import parsers
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.utils import json as drf_json

from api.bounds import out_of_range_integers, out_of_range_message

MAX_DEPTH = 32


def nesting_depth(value) -> int:
    """How many arrays/objects deep `value` goes (0 for a scalar), walked without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            deepest = max(deepest, depth)
            continue
        depth += 1
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            return depth
        stack.extend((child, depth) for child in item)
    return deepest


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        encoding = parsers.get_encoding(parser_context or {})
        too_deep = f"JSON parse error - the body is nested too deeply (at most {MAX_DEPTH} levels)"
        try:
            data = json.load(codecs.getreader(encoding)(stream), parse_float=_finite_float,
                             parse_constant=drf_json.strict_constant if self.strict else None)
        except RecursionError as exc:
            raise ParseError(too_deep) from exc
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
        if nesting_depth(data) > MAX_DEPTH:
            raise ParseError(too_deep)
        errors: dict[str, list[str]] = {}
        for path, value in out_of_range_integers(data):
            field, message = out_of_range_message(path, value)
            errors.setdefault(field, []).append(message)
        if errors:
            raise ValidationError(errors)
        return data
