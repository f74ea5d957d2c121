"""Every table in README.md and docs/*.md has as many cells in each row as in its header.

A row with a cell too many renders without it (GitHub drops what passes the header), so the README's
`build_pool` row once hid "`--strategy` picks the judging order" from every reader. The documents are
parsed as CommonMark with GitHub's tables (markdown-it-py), so only real tables are checked (not
code blocks or prose that happens to hold pipes), and each row's cells are counted as GitHub splits
them: at every pipe not escaped with a backslash (an escaped pipe stays in its cell, code spans
included)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

REPO = Path(__file__).resolve().parents[1]
UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def cells(line: str) -> int:
    row = line.strip()
    row = row[1:] if row.startswith("|") else row
    row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
    return len(UNESCAPED_PIPE.split(row))


def table_problems(text: str, name: str) -> list[str]:
    lines = text.splitlines()
    problems = []
    for token in MarkdownIt("commonmark").enable("table").parse(text):
        if token.type != "table_open":
            continue
        first, end = token.map
        expected = cells(lines[first])
        for number in range(first + 2, end):  # after the header and the delimiter row
            got = cells(lines[number])
            if got != expected:
                problems.append(f"{name}, line {number + 1}: {got} cells where the header has {expected}")
    return problems


@pytest.mark.parametrize("path", documents(), ids=lambda p: p.name)
def test_every_table_row_has_the_header_s_cells(path):
    assert table_problems(path.read_text(), path.name) == []


def test_a_row_with_a_cell_too_many_or_too_few_is_found():
    text = ("| a | b |\n|---|---|\n| 1 | 2 |\n| 1 | 2 | 3 |\n| `x\\|y` | 2 |\n| 1 |\n\n"
            "```\n| not | a | table |\n```\n")
    assert table_problems(text, "t.md") == ["t.md, line 4: 3 cells where the header has 2",
                                            "t.md, line 6: 1 cells where the header has 2"]
