"""Links in README.md and docs/*.md lead somewhere: every relative link names a file of the
repository that exists (and, with '#anchor', a heading of that file), and nothing points outside the
repository except http(s) URLs to external references. A clone has no ../shared folder, so a link
there is a dead link for every reader.

Anchors follow GitHub's rule for heading ids: the heading's text without inline markup, lower-cased,
with every character other than a letter, digit, '_', '-' or space dropped and each space made a
'-'; a repeated heading gets '-1', '-2', ... Headings and links inside code are not Markdown.
"""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

REPO = Path(__file__).resolve().parents[1]

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# [text](target "title") and ![alt](target); the target ends at whitespace or the closing bracket.
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
AUTOLINK = re.compile(r"<([a-zA-Z][a-zA-Z0-9+.-]*:[^>\s]*)>")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with inline code spans blanked."""
    out, fenced = [], False
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)))
    return out


def heading_text(raw: str) -> str:
    text = INLINE_CODE.sub(lambda m: m.group(2), raw)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return text.replace("*", "")


def slug(heading: str) -> str:
    kept = "".join(ch for ch in heading_text(heading).strip().lower() if ch.isalnum() or ch in "_- ")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    text = path.read_text(encoding="utf-8")
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        match = None if fenced else HEADING.match(line)
        if match:
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            out.add(base if count == 0 else f"{base}-{count}")
    return out


def links(path: Path) -> list[tuple[int, str]]:
    found = []
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        found += [(number, m.group(1)) for m in INLINE_LINK.finditer(line)]
        found += [(number, m.group(1)) for m in AUTOLINK.finditer(line)]
        definition = REFERENCE_DEF.match(line)
        if definition:
            found.append((number, definition.group(1)))
    return found


def link_problems(path: Path, root: Path = REPO) -> list[str]:
    """Every dead or outside link of one Markdown file, as 'file:line: target: why'."""
    problems = []
    where = path.relative_to(root)
    for number, target in links(path):
        def problem(why: str) -> None:
            problems.append(f"{where}:{number}: {target}: {why}")

        if not target:
            problem("empty link")
            continue
        if SCHEME.match(target):
            if not target.lower().startswith(("http://", "https://")):
                problem("only http(s) links may leave the repository")
            continue
        file_part, _, anchor = target.partition("#")
        destination = (path.parent / unquote(file_part)).resolve() if file_part else path.resolve()
        if not destination.is_relative_to(root.resolve()):
            problem("points outside the repository")
            continue
        if not destination.exists():
            problem("no such file")
            continue
        if anchor and destination.suffix == ".md" and unquote(anchor) not in anchors(destination):
            problem(f"no heading with id '{anchor}'")
    return problems


@pytest.mark.parametrize("document", documents(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_leads_to_a_file_and_heading_of_the_repository(document):
    assert document.exists()
    assert link_problems(document) == []


def test_docs_folder_has_the_documents_the_readme_points_to():
    names = {p.name for p in (REPO / "docs").glob("*.md")}
    assert {"README.md", "methodology.md", "formats.md", "api.md", "campaign.md", "operations.md"} <= names
    readme_targets = {target.partition("#")[0] for _, target in links(REPO / "README.md")}
    assert "docs/methodology.md" in readme_targets


def test_the_checker_finds_dead_links_missing_anchors_and_links_leaving_the_repository(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\n## Files and `hosts`\n\n## Files and hosts\n", encoding="utf-8")
    page = tmp_path / "README.md"
    page.write_text(
        "See [the guide](docs/guide.md#files-and-hosts) and [again](docs/guide.md#files-and-hosts-1),\n"
        "[a paper](https://example.org/paper.pdf), [top](#readme).\n"
        "# README\n"
        "Dead: [gone](docs/missing.md), [bad anchor](docs/guide.md#nowhere),\n"
        "[shared](../shared/docs/methodology.md), [file](file:///etc/passwd).\n"
        "`[not a link](nowhere.md)`\n"
        "```\n[not a link either](nowhere.md)\n# not a heading\n```\n",
        encoding="utf-8",
    )
    problems = link_problems(page, root=tmp_path)
    assert [p.split(": ", 1)[1] for p in problems] == [
        "docs/missing.md: no such file",
        "docs/guide.md#nowhere: no heading with id 'nowhere'",
        "../shared/docs/methodology.md: points outside the repository",
        "file:///etc/passwd: only http(s) links may leave the repository",
    ]


def test_heading_ids_follow_githubs_rule():
    assert slug("1. `qrels` — TREC qrels") == "1-qrels--trec-qrels"
    assert slug("Score matrices (`.npz`)") == "score-matrices-npz"
    assert slug("Who may call what") == "who-may-call-what"
    assert slug("7. Cite a report") == "7-cite-a-report"
