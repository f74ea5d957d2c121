"""Raw multi-rater label files (`rater_labels`): one row per label a rater gave, read as a stream.

Two layouts, CSV with a header or JSON Lines (one object a line), with the same columns (keys):

- `query,item,rater,value[,time]` by default: the judged unit is the (query, item) pair;
- or a single column naming the unit, `unit`, for files such as TVR-Ranking's
  `pair_id,worker,relevance`, read with the mapping `unit=pair_id,rater=worker,value=relevance`.

`value` is a number (a graded scale such as 0-4) or a label (text such as `relevant`); the file's
first value decides which, and a value of the other kind later on is refused, so a typo in a
graded file is not turned into a nominal label set. `time`, when the file has it, orders one
rater's repeated labels of a unit (see annotation/analysis/repeats.py): a number (e.g. Unix
seconds) or an ISO 8601 date-time, every row with one.

Problems go to an IssueCollector with the line and the file's own column name; the caller raises
them after the whole file is read, so nothing is used from a file with a bad line.
"""
from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

from annotation.analysis.storable_text import text_problem

from .errors import IssueCollector
from .fields import MAX_ID_LENGTH, csv_header, csv_records, json_object_lines, shown
from .text_lines import LineSource, NumberedLines, ProgressFn

#: The names a column mapping may use, in the order they are printed.
FIELDS = ("query", "item", "unit", "rater", "value", "time")
FILE_FORMATS = ("csv", "jsonl")
DEFAULT_COLUMNS = "query,item,rater,value[,time]"


class RaterLabel(NamedTuple):
    line: int
    unit: str | tuple[str, str]  # the unit column's text, or (query, item)
    rater: str
    value: float | str  # a finite number, or a label
    time: float | None  # seconds, when the file has a time column


def parse_columns(text: str | None) -> dict[str, str]:
    """`unit=pair_id,rater=worker,value=relevance` as {field: column}; ValueError says what is wrong."""
    mapping: dict[str, str] = {}
    if not text:
        return mapping
    for item in text.split(","):
        name, sep, column = (part.strip() for part in item.partition("="))
        if not sep or not name or not column:
            raise ValueError(f"--columns expects name=column pairs separated by commas, got {item.strip()!r}")
        if name not in FIELDS:
            raise ValueError(f"--columns: unknown name {name!r}; names: {', '.join(FIELDS)}")
        if name in mapping:
            raise ValueError(f"--columns: {name!r} is mapped twice")
        mapping[name] = column
    if "unit" in mapping and ({"query", "item"} & set(mapping)):
        raise ValueError("--columns: map either unit, or query and item, not both")
    if ("query" in mapping) != ("item" in mapping) and "unit" not in mapping:
        missing = "item" if "query" in mapping else "query"
        mapping.setdefault(missing, missing)
    return mapping


def guess_file_format(path: Path) -> str:
    """jsonl for .jsonl/.ndjson names or a file whose first character is '{'; csv otherwise."""
    name = Path(path).name.lower()
    if name.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if name.endswith(".csv"):
        return "csv"
    with Path(path).open("rb") as handle:
        head = handle.read(4096).decode("utf-8", "ignore").lstrip("\ufeff \t\r\n")
    return "jsonl" if head.startswith("{") else "csv"


def _as_float(raw) -> float | None:
    """The number `raw` stands for (infinity for a JSON integer too large for a float), or None."""
    try:
        return float(raw)
    except OverflowError:
        return math.inf
    except ValueError:
        return None


class _Checker:
    """Turns one row's raw fields into a RaterLabel, remembering what the first row decided
    (numbers or labels, the kind of time)."""

    def __init__(self, issues: IssueCollector, names: dict[str, str]) -> None:
        self.issues = issues
        self.names = names  # field -> the file's column name, for messages
        self.value_kind: str | None = None
        self.value_kind_line: int | None = None
        self.time_kind: str | None = None
        self.time_kind_line: int | None = None

    def _id(self, line: int, field: str, raw) -> str | None:
        column = self.names[field]
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            self.issues.add(line, column, f"missing {field} id")
            return None
        if isinstance(raw, bool) or not isinstance(raw, (str, int)):
            self.issues.add(line, column, f"the {field} id must be a string or a whole number, not {shown(json.dumps(raw))}")
            return None
        text = str(raw).strip()
        problem = text_problem(text, max_length=MAX_ID_LENGTH)
        if problem:
            self.issues.add(line, column, f"the {field} id {problem}")
            return None
        return text

    def _value(self, line: int, raw) -> float | str | None:
        column = self.names["value"]
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            self.issues.add(line, column, "missing value")
            return None
        if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
            self.issues.add(line, column, f"expected a number or a label, not {shown(json.dumps(raw))}")
            return None
        value: float | str | None = _as_float(raw)
        if value is None:
            value = raw.strip()
            problem = text_problem(value, max_length=MAX_ID_LENGTH)
            if problem:
                self.issues.add(line, column, f"the label {problem}")
                return None
        if isinstance(value, float) and not math.isfinite(value):
            self.issues.add(line, column, f"{shown(str(raw))} is not a finite number (NaN and infinity are refused)")
            return None
        kind = "number" if isinstance(value, float) else "label"
        if self.value_kind is None:
            self.value_kind, self.value_kind_line = kind, line
        elif kind != self.value_kind:
            first = "a number" if self.value_kind == "number" else "a label"
            self.issues.add(line, column, f"{shown(str(raw))} is not {first} like the file's first value "
                                          f"(line {self.value_kind_line}); values are all numbers or all labels")
            return None
        return value

    def _time(self, line: int, raw) -> float | None:
        """Seconds; raises nothing, reports and returns None when the time is unusable."""
        column = self.names["time"]
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            self.issues.add(line, column, "missing time (the file has a time column, so every label needs one)")
            return None
        if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
            self.issues.add(line, column, f"expected a number or an ISO 8601 date-time, not {shown(json.dumps(raw))}")
            return None
        kind = "number"
        seconds = _as_float(raw)
        if seconds is None:
            try:
                moment = datetime.fromisoformat(raw.strip())
            except ValueError:
                self.issues.add(line, column, f"{shown(raw)} is neither a number nor an ISO 8601 date-time")
                return None
            # Naive and zone-aware times cannot be ordered against each other: a file holds one kind.
            kind = "date-time with a time zone" if moment.tzinfo else "date-time without a time zone"
            try:
                seconds = (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()
            except (OverflowError, ValueError):  # e.g. 0001-01-01T00:00:00+01:00, before year 1 in UTC
                self.issues.add(line, column, f"{shown(raw)} is out of the range of dates")
                return None
        if not math.isfinite(seconds):
            self.issues.add(line, column, f"{shown(str(raw))} is not a finite number")
            return None
        if self.time_kind is None:
            self.time_kind, self.time_kind_line = kind, line
        elif kind != self.time_kind:
            self.issues.add(line, column, f"{shown(str(raw))} is a {kind}, but the file's first time "
                                          f"(line {self.time_kind_line}) is a {self.time_kind}")
            return None
        return seconds

    def row(self, line: int, get) -> RaterLabel | None:
        """`get(field)` returns the raw field of this row (None when absent)."""
        if "unit" in self.names:
            unit_id = self._id(line, "unit", get("unit"))
            unit = unit_id
        else:
            query, item = self._id(line, "query", get("query")), self._id(line, "item", get("item"))
            unit = (query, item) if query is not None and item is not None else None
        rater = self._id(line, "rater", get("rater"))
        value = self._value(line, get("value"))
        time = self._time(line, get("time")) if "time" in self.names else None
        if unit is None or rater is None or value is None or ("time" in self.names and time is None):
            return None
        return RaterLabel(line, unit, rater, value, time)


def _resolve_columns(available: list[str], mapping: dict[str, str], issues: IssueCollector, line: int | None,
                     what: str) -> dict[str, str] | None:
    """{field: column of the file}, from the mapping and the default names; None after reporting
    what is missing. `available` is the header (CSV) or the first record's keys (JSONL)."""
    present = set(available)
    names: dict[str, str] = {}
    for field, column in mapping.items():
        if column not in present:
            issues.add(line, column, f"--columns maps {field} to {column!r}, which is not a {what}; "
                                     f"the file has {', '.join(repr(c) for c in available) or 'none'}")
            return None
        names[field] = column
    if "unit" not in names and not {"query", "item"} <= set(names):
        if "query" in present and "item" in present:
            names.setdefault("query", "query")
            names.setdefault("item", "item")
        elif "unit" in present:
            names["unit"] = "unit"
    for field in ("rater", "value", "time"):
        if field not in names and field in present:
            names[field] = field
    missing = [f for f in ("rater", "value") if f not in names]
    if "unit" not in names and not {"query", "item"} <= set(names):
        missing.insert(0, "query and item (or unit)")
    if missing:
        issues.add(line, None, f"no {what} for {', '.join(missing)}: expected {DEFAULT_COLUMNS}, or map them with "
                               f"--columns, e.g. unit=pair_id,rater=worker,value=relevance")
        return None
    return names


def read_csv(source: LineSource, issues: IssueCollector, mapping: dict[str, str]) -> Iterator[RaterLabel]:
    numbered = NumberedLines(source)
    reader = csv.reader(text for _, text in numbered)
    header = csv_header(reader, numbered, issues)
    if header is None:
        return
    header = [h.strip() for h in header]
    doubled = sorted({h for h in header if header.count(h) > 1})
    if doubled:
        issues.add(numbered.current, doubled[0], f"the header names column {doubled[0]!r} twice")
        return
    names = _resolve_columns(header, mapping, issues, numbered.current, "column of the header")
    if names is None:
        return
    position = {field: header.index(column) for field, column in names.items()}
    checker = _Checker(issues, names)
    for row in csv_records(reader, numbered, issues, header):
        line = numbered.current
        if len(row) != len(header):
            issues.add(line, None, f"expected {len(header)} fields as in the header, found {len(row)}")
            continue
        label = checker.row(line, lambda field: row[position[field]] if field in position else None)
        if label:
            yield label


def read_jsonl(source: LineSource, issues: IssueCollector, mapping: dict[str, str]) -> Iterator[RaterLabel]:
    checker: _Checker | None = None
    for line, obj in json_object_lines(source, issues, expected="expected a JSON object, one label a line"):
        if checker is None:
            # The first record fixes which keys are used (a default name present only in later
            # records would silently change the meaning of the file halfway through).
            names = _resolve_columns(list(obj), mapping, issues, line, "key of the first record")
            if names is None:
                return
            checker = _Checker(issues, names)
        label = checker.row(line, obj.get)
        if label:
            yield label


def read_rater_labels(path: Path, issues: IssueCollector, *, columns: dict[str, str] | None = None,
                      file_format: str | None = None, progress: ProgressFn | None = None) -> Iterator[RaterLabel]:
    """Streams the labels of `path`; problems go to `issues` (the caller raises them at the end)."""
    fmt = file_format or guess_file_format(path)
    if fmt not in FILE_FORMATS:
        raise ValueError(f"file format must be one of {FILE_FORMATS}, got {fmt!r}")
    source = LineSource(Path(path), issues, progress)
    reader = read_csv if fmt == "csv" else read_jsonl
    yield from reader(source, issues, dict(columns or {}))
    source.check_not_empty()
