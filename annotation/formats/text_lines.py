"""Streaming a text file line by line, decoding UTF-8 per line so one bad byte names its line."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from .errors import IssueCollector

ProgressFn = Callable[[int, int], None]


class LineSource:
    """Iterates (line_number, text) over a file, reporting progress in bytes.

    Undecodable lines are reported to `issues` and skipped; blank lines are skipped.
    """

    def __init__(self, path: Path, issues: IssueCollector, progress: ProgressFn | None = None,
                 progress_every: int = 50_000) -> None:
        self.path = Path(path)
        self.issues = issues
        self.progress = progress
        self.progress_every = progress_every
        self.size = self.path.stat().st_size
        self.bytes_read = 0
        self.non_blank_lines = 0

    def __iter__(self) -> Iterator[tuple[int, str]]:
        with self.path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                self.bytes_read += len(raw)
                if self.progress and number % self.progress_every == 0:
                    self.progress(self.bytes_read, self.size)
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    self.issues.add(number, None, f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})")
                    continue
                if number == 1:
                    text = text.lstrip("\ufeff")
                text = text.rstrip("\r\n")
                if not text.strip():
                    continue
                self.non_blank_lines += 1
                yield number, text
        if self.progress:
            self.progress(self.bytes_read, self.size)

    def check_not_empty(self) -> None:
        if self.non_blank_lines == 0 and not self.issues:
            self.issues.add(None, None, "the file is empty")


def whole_text(path: Path) -> str | None:
    """The file decoded at once, for readers' fast paths: None when a byte is not UTF-8 or a NUL is
    in it, so the caller falls back to LineSource, whose per-line reading names the line at fault.

    Split it with ``str.split("\\n")`` (not ``splitlines``, which also breaks at \\x0b, \\x1c or
    U+2028 and would number lines unlike LineSource). Decoded text holds no lone surrogate, so of
    fields.text_problem's rules only the length is left for the caller to check."""
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\x00" in text:
        return None
    return text.lstrip("\ufeff")


def file_checksum(path: Path) -> str:
    import hashlib  # here: the readers' fast paths (a file-only `evaluate`) never need it

    sha = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


class NumberedLines:
    """Feeds plain strings to a csv reader while remembering the current line's number and text
    (the text lets an error the csv module raises be traced to its field)."""

    def __init__(self, source: Iterable[tuple[int, str]]) -> None:
        self._iter = iter(source)
        self.current: int | None = None
        self.text = ""

    def __iter__(self) -> "NumberedLines":
        return self

    def __next__(self) -> tuple[int, str]:
        self.current, self.text = next(self._iter)
        return self.current, self.text
