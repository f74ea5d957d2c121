"""Checks that every value read from an uploaded file passes before it can reach the database, and
CSV reading that turns the csv module's own errors into problems with file, line and field.

Without them an import failed on the database instead ("value too long for type character
varying(200)", "A string literal cannot contain NUL (0x00) characters") or on the csv module
("field larger than field limit (131072)"), and the error named neither the line nor the field.
"""
from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator

from annotation.analysis.storable_text import text_problem

from .errors import IssueCollector

#: External ids (clip, caption, video) are stored in CharField(max_length=200) columns.
MAX_ID_LENGTH = 200


def check_text(issues: IssueCollector, line: int | None, field: str | None, value: str, *,
               what: str = "the value", max_length: int | None = None) -> bool:
    """Reports `value` to `issues` when it cannot be stored; True when it is fine."""
    problem = text_problem(value, max_length=max_length)
    if problem:
        issues.add(line, field, f"{what} {problem}")
        return False
    return True


def is_scalar(value) -> bool:
    """True for what a JSON record may hold in a text or number field (not a list or an object)."""
    return value is None or isinstance(value, (str, int, float))


#: What the JSON readers say of a value the standard library's decoder cannot take: nested past
#: Python's recursion limit (RecursionError) or an integer over 4,300 digits (a bare ValueError).
NESTED_TOO_DEEPLY = "nested too deeply"
TOO_MANY_DIGITS = "an integer with too many digits"


def load_json(text: str):
    """json.loads that reports absurd nesting and integers over Python's 4,300-digit limit as the
    JSONDecodeError they are, not a RecursionError or a bare ValueError."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError as exc:
        raise json.JSONDecodeError(NESTED_TOO_DEEPLY, text, 0) from exc
    except ValueError as exc:  # int("9" * 5000): the only other ValueError json.loads raises
        raise json.JSONDecodeError(TOO_MANY_DIGITS, text, 0) from exc


def json_object_lines(source, issues, *, expected: str = "expected a JSON object"):
    """(line, object) for each line of a JSON-lines file that holds a JSON object; a line that does
    not is reported (malformed JSON, or `expected`) and skipped, so a reader goes on to find every
    problem of the file."""
    for line, text in source:
        try:
            obj = load_json(text)
        except json.JSONDecodeError as exc:
            issues.add(line, None, f"malformed JSON: {exc.msg} at column {exc.colno}")
            continue
        if not isinstance(obj, dict):
            issues.add(line, None, expected)
            continue
        yield line, obj


def shown(value: str, limit: int = 80) -> str:
    """`value` quoted for a message: escaped (no NUL or control characters reach the stored job
    errors) and cut to `limit` characters."""
    cut = value if len(value) <= limit else value[:limit] + "..."
    return repr(cut)


# --- CSV --------------------------------------------------------------------------------------

# A field is a quoted string (with anything up to the next comma after its closing quote, as the
# csv module reads it), a quoted string left open to the end of the line, or unquoted text.
_CSV_FIELD = re.compile(r'"(?:[^"]|"")*"[^,]*|"(?:[^"]|"")*$|[^,]*')


def split_csv_line(text: str) -> list[str]:
    """Fields of one physical CSV line (default dialect), to locate the field the csv module refused."""
    fields, pos = [], 0
    while True:
        match = _CSV_FIELD.match(text, pos)
        fields.append(match.group())
        pos = match.end()
        if pos >= len(text):
            return fields
        pos += 1  # the comma


def csv_error_message(exc: csv.Error) -> str:
    text = str(exc)
    if "field limit" in text:
        return f"the value is longer than {csv.field_size_limit():,} characters"
    return f"malformed CSV: {text}"


def csv_error_field(text: str, names: list[str] | None) -> str | None:
    """The header name of the first field on the physical line `text` that the csv module would refuse
    (longer than its limit, or holding a stray carriage return); None when none can be told."""
    limit = csv.field_size_limit()
    for column, field in enumerate(split_csv_line(text.rstrip("\r\n"))):
        if len(field) > limit or "\r" in field:
            return names[column] if names and column < len(names) else f"column {column + 1}"
    return None


def csv_header(reader, lines, issues: IssueCollector) -> list[str] | None:
    """The first row of `reader` (None for an empty file, or after reporting a header the csv module
    refuses)."""
    try:
        return next(reader, None)
    except csv.Error as exc:
        issues.add(lines.current, csv_error_field(lines.text, None), f"in the header: {csv_error_message(exc)}")
        return None


def csv_records(reader, lines, issues: IssueCollector, names: list[str] | None) -> Iterator:
    """Rows of `reader`, which reads from `lines` (a text_lines.NumberedLines). A row the csv module
    refuses (a field over its size limit, a stray carriage return) is reported with its line and
    field and skipped, and reading goes on with the next line."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            issues.add(lines.current, csv_error_field(lines.text, names), csv_error_message(exc))
            continue
        yield row
