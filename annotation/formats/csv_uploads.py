"""Small CSV uploads (raters, known pairs): read whole, each row with its line number, so every
problem can name the file, the line and the field."""
from __future__ import annotations

import csv
import io

from .errors import IssueCollector
from .fields import check_text, csv_header, csv_records
from .text_lines import NumberedLines


def csv_rows(content: bytes, issues: IssueCollector, *, required: tuple[str, ...],
             optional: tuple[str, ...] = ()) -> list[tuple[int, dict[str, str]]]:
    """(line number, row) pairs with stripped names and values; raises ImportRejected when the
    file cannot be read as UTF-8 or its header lacks a required column. Rows the csv module
    refuses, and values that could not be stored (a NUL character), are reported to `issues` with
    their line and field and left out."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        issues.add(content[:exc.start].count(b"\n") + 1, None, f"not valid UTF-8 (byte 0x{content[exc.start]:02x})")
        issues.raise_if_any()
    # io.StringIO splits lines on "\n" only, as the csv module expects; each keeps its line ending.
    lines = NumberedLines(enumerate(io.StringIO(text), start=1))
    reader = csv.reader(line for _, line in lines)
    header = csv_header(reader, lines, issues)
    issues.raise_if_any()
    names = [name.strip() for name in header or []]
    missing = [name for name in required if name not in names]
    if missing:
        also = f" (and optionally {', '.join(repr(n) for n in optional)})" if optional else ""
        issues.add(1, None, f"header must contain {', '.join(repr(n) for n in required)}{also}; "
                            f"missing {', '.join(repr(n) for n in missing)}")
        issues.raise_if_any()
    rows = []
    for values in csv_records(reader, lines, issues, names):
        if not values:
            continue  # a blank line
        line = lines.current
        row = {name: value.strip() for name, value in zip(names, values)} | {n: "" for n in names[len(values):]}
        if all([check_text(issues, line, name, value) for name, value in row.items()]):
            rows.append((line, row))
    return rows
