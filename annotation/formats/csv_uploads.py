"""Small CSV uploads (raters, known pairs): read whole, each row with its line number, so every
problem can name the file, the line and the field."""
from __future__ import annotations

import csv
import io

from .errors import IssueCollector


def csv_rows(content: bytes, issues: IssueCollector, *, required: tuple[str, ...],
             optional: tuple[str, ...] = ()) -> list[tuple[int, dict[str, str]]]:
    """(line number, row) pairs with stripped names and values; raises ImportRejected when the
    file cannot be read as UTF-8 or its header lacks a required column."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        issues.add(content[:exc.start].count(b"\n") + 1, None, f"not valid UTF-8 (byte 0x{content[exc.start]:02x})")
        issues.raise_if_any()
    reader = csv.DictReader(io.StringIO(text))
    names = [name.strip() for name in reader.fieldnames or []]
    missing = [name for name in required if name not in names]
    if missing:
        also = f" (and optionally {', '.join(repr(n) for n in optional)})" if optional else ""
        issues.add(1, None, f"header must contain {', '.join(repr(n) for n in required)}{also}; "
                            f"missing {', '.join(repr(n) for n in missing)}")
        issues.raise_if_any()
    reader.fieldnames = names
    return [(reader.line_num, {name: (value or "").strip() for name, value in row.items() if name is not None})
            for row in reader]
