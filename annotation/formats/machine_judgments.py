"""Machine judgment files: an automatic assessor's verdicts, CSV with a header or JSON Lines.

Fields (CSV columns or JSON keys):

- `query`  the caption's id (its external id in the dataset), required;
- `item`   the clip's id (external id), required;
- `label`  required: `relevant` / `not_relevant` (also `irrelevant`, `1` / `0`, `true` / `false`);
- `score`  optional: the model's confidence or grade, a finite number;
- `model`  optional: the model's name; `prompt` (or `version`) optional: the prompt or version.

`model` and `prompt` describe the whole judge: when given, every row must carry the same value
(a file mixing two models is two judges). Problems name the file, the line and the field; the
reader goes on to collect every problem and the caller refuses the file if there is any.
"""
from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from annotation.analysis.storable_text import text_problem

from .errors import IssueCollector
from .fields import MAX_ID_LENGTH, csv_header, csv_records, json_object_lines, shown
from .text_lines import LineSource, NumberedLines

REQUIRED = ("query", "item", "label")
OPTIONAL = ("score", "model", "prompt", "version")
FILE_FORMATS = ("csv", "jsonl")
_LABELS = {"relevant": "relevant", "1": "relevant", "true": "relevant",
           "not_relevant": "not_relevant", "irrelevant": "not_relevant", "not relevant": "not_relevant",
           "0": "not_relevant", "false": "not_relevant"}


class MachineRow(NamedTuple):
    line: int
    query: str
    item: str
    label: str  # 'relevant' or 'not_relevant'
    score: float | None


class MachineFile(NamedTuple):
    rows: list[MachineRow]
    model: str
    prompt: str


def file_format_from_name(name: str) -> str | None:
    """'jsonl' or 'csv' when the file name says which, else None."""
    name = Path(name).name.lower()
    if name.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if name.endswith(".csv"):
        return "csv"
    return None


def guess_file_format(path: Path) -> str:
    named = file_format_from_name(str(path))
    if named:
        return named
    with Path(path).open("rb") as handle:
        head = handle.read(4096).decode("utf-8", "ignore").lstrip("\ufeff \t\r\n")
    return "jsonl" if head.startswith("{") else "csv"


class _Checker:
    def __init__(self, issues: IssueCollector) -> None:
        self.issues = issues
        self.described: dict[str, tuple[str, int]] = {}  # model / prompt -> (value, first line)

    def _text(self, line: int, field: str, raw, *, required: bool) -> str | None:
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            if required:
                self.issues.add(line, field, f"missing {field}")
            return None
        if isinstance(raw, bool) or not isinstance(raw, (str, int)):
            self.issues.add(line, field, f"expected text or a whole number, not {shown(repr(raw))}")
            return None
        text = str(raw).strip()
        problem = text_problem(text, max_length=MAX_ID_LENGTH if field in ("query", "item") else 300)
        if problem:
            self.issues.add(line, field, f"the {field} {problem}")
            return None
        return text

    def row(self, line: int, get) -> MachineRow | None:
        query = self._text(line, "query", get("query"), required=True)
        item = self._text(line, "item", get("item"), required=True)
        raw_label = get("label")
        label = None
        if raw_label is None or (isinstance(raw_label, str) and not raw_label.strip()):
            self.issues.add(line, "label", "missing label")
        elif isinstance(raw_label, bool):
            label = "relevant" if raw_label else "not_relevant"
        elif isinstance(raw_label, (str, int)):
            label = _LABELS.get(str(raw_label).strip().lower())
            if label is None:
                self.issues.add(line, "label", f"{shown(str(raw_label))} is not a label; use relevant or not_relevant "
                                               f"(or 1 / 0)")
        else:
            self.issues.add(line, "label", f"{shown(repr(raw_label))} is not a label; use relevant or not_relevant")
        score = None
        raw_score = get("score")
        if raw_score is not None and not (isinstance(raw_score, str) and not raw_score.strip()):
            try:
                if isinstance(raw_score, bool):
                    raise ValueError
                score = float(raw_score)
            except (TypeError, ValueError, OverflowError):
                score = None
                self.issues.add(line, "score", f"{shown(str(raw_score))} is not a number")
            else:
                if not math.isfinite(score):
                    self.issues.add(line, "score", f"{shown(str(raw_score))} is not a finite number")
                    score = None
        for field in ("model", "prompt"):
            raw = get(field) if field == "model" else (get("prompt") if get("prompt") is not None else get("version"))
            value = self._text(line, field, raw, required=False)
            if value is None:
                continue
            first = self.described.setdefault(field, (value, line))
            if first[0] != value:
                self.issues.add(line, field, f"{shown(value)} differs from {shown(first[0])} on line {first[1]}: "
                                             f"one file is one judge (one {field})")
        if query is None or item is None or label is None:
            return None
        return MachineRow(line, query, item, label, score)


def _read_csv(source: LineSource, issues: IssueCollector) -> Iterator[tuple[_Checker, MachineRow | None]]:
    numbered = NumberedLines(source)
    reader = csv.reader(text for _, text in numbered)
    header = csv_header(reader, numbered, issues)
    if header is None:
        return
    header = [h.strip() for h in header]
    missing = [f for f in REQUIRED if f not in header]
    if missing:
        issues.add(numbered.current, None, f"the header lacks {', '.join(missing)}; expected columns "
                                           f"query,item,label[,score,model,prompt]")
        return
    doubled = sorted({h for h in header if header.count(h) > 1})
    if doubled:
        issues.add(numbered.current, doubled[0], f"the header names column {doubled[0]!r} twice")
        return
    position = {name: i for i, name in enumerate(header)}
    checker = _Checker(issues)
    for row in csv_records(reader, numbered, issues, header):
        line = numbered.current
        if len(row) != len(header):
            issues.add(line, None, f"expected {len(header)} fields as in the header, found {len(row)}")
            continue
        yield checker, checker.row(line, lambda f: row[position[f]] if f in position else None)


def _read_jsonl(source: LineSource, issues: IssueCollector) -> Iterator[tuple[_Checker, MachineRow | None]]:
    checker = _Checker(issues)
    for line, obj in json_object_lines(source, issues, expected="expected a JSON object, one judgment a line"):
        yield checker, checker.row(line, obj.get)


def read_machine_judgments(path: Path, issues: IssueCollector, *, file_format: str | None = None,
                           progress=None) -> MachineFile:
    """Every well-formed row of the file; problems go to `issues` (the caller raises them).
    `progress(bytes_read, size)` is called as the file is read."""
    fmt = file_format or guess_file_format(path)
    if fmt not in FILE_FORMATS:
        raise ValueError(f"unknown file format {fmt!r}; use one of {', '.join(FILE_FORMATS)}")
    source = LineSource(Path(path), issues, progress)
    rows: list[MachineRow] = []
    checker = None
    for checker, row in (_read_csv if fmt == "csv" else _read_jsonl)(source, issues):
        if row is not None:
            rows.append(row)
    source.check_not_empty()
    described = checker.described if checker else {}
    return MachineFile(rows, described.get("model", ("", 0))[0], described.get("prompt", ("", 0))[0])
