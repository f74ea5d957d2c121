"""The README stays a reference (issue 37): short enough to read, its tables one line of facts per
row, and the two commands of the front door stated.

It once grew to 616 lines with a benchmark cell of 3,162 characters listing every before/after run;
the detail now lives in docs/ (benchmarks.md keeps the dated history, operations.md every setting,
commands.md every option). Tables are found as GitHub renders them (markdown-it-py, as in
tests/test_docs_tables.py) and split into cells at unescaped pipes.
"""
from __future__ import annotations

from pathlib import Path

from markdown_it import MarkdownIt

from tests.test_docs_tables import UNESCAPED_PIPE

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"

MAX_LINES = 320
MAX_CELL_CHARACTERS = 400
THE_TWO_COMMANDS = ("bash scripts/demo.sh", "bash scripts/test.sh")


def table_cells(text: str) -> list[tuple[int, str]]:
    """(line number, cell text) of every cell of every table of a Markdown text."""
    lines = text.splitlines()
    found = []
    for token in MarkdownIt("commonmark").enable("table").parse(text):
        if token.type != "table_open":
            continue
        first, end = token.map
        for number in range(first, end):
            if number == first + 1:  # the delimiter row
                continue
            row = lines[number].strip().removeprefix("|")
            row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
            found += [(number + 1, cell.strip()) for cell in UNESCAPED_PIPE.split(row)]
    return found


def long_cells(text: str, limit: int = MAX_CELL_CHARACTERS) -> list[str]:
    return [f"line {number}: {len(cell)} characters: {cell[:60]}…" for number, cell in table_cells(text)
            if len(cell) > limit]


def fenced_commands(text: str) -> set[str]:
    """Each line of the README's ```bash blocks, as a reader would copy it."""
    commands = set()
    for token in MarkdownIt("commonmark").parse(text):
        if token.type == "fence" and token.info.strip() in ("bash", "sh", "shell"):
            commands |= {line.strip() for line in token.content.splitlines() if line.strip()}
    return commands


def test_the_readme_is_short_enough_to_be_a_reference():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines; move detail into docs/"


def test_no_readme_table_cell_is_a_lab_notebook():
    assert long_cells(README.read_text(encoding="utf-8")) == []


def test_the_two_commands_are_stated_first_as_commands_to_copy():
    text = README.read_text(encoding="utf-8")
    assert set(THE_TWO_COMMANDS) <= fenced_commands(text)
    first_section = text.split("\n## ", 2)[1]
    assert first_section.startswith("The two commands")
    assert all(command in first_section for command in THE_TWO_COMMANDS)
    assert "bash scripts/test.sh --quick" in fenced_commands(text)


def test_the_checks_find_a_long_cell_and_read_commands_only_from_code_blocks():
    cell = "x" * (MAX_CELL_CHARACTERS + 1)
    text = (f"| a | b |\n|---|---|\n| short | {cell} |\n| `p\\|q` | fine |\n\n"
            "Run `bash scripts/demo.sh` in prose.\n\n```bash\nbash scripts/test.sh\n```\n")
    assert long_cells(text) == [f"line 3: {len(cell)} characters: {'x' * 60}…"]
    assert [c for _, c in table_cells(text)] == ["a", "b", "short", cell, "`p\\|q`", "fine"]
    assert fenced_commands(text) == {"bash scripts/test.sh"}
