"""Problems found in an uploaded file, each naming the file, the line and the field."""
from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class FileIssue:
    file: str
    line: int | None
    field: str | None
    message: str

    def __post_init__(self) -> None:
        # Issues are stored in a job's JSON errors, and PostgreSQL's jsonb refuses a NUL character
        # and half a surrogate pair: one quoted from a bad file must not fail the job that reports
        # it, so both are written as escapes. Fields named after the file's own keys (JSON runs)
        # are cut to a readable length.
        for name, limit in (("file", 500), ("field", 200), ("message", 2000)):
            value = getattr(self, name)
            if isinstance(value, str):
                value = value.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")
                object.__setattr__(self, name, value if len(value) <= limit else value[:limit] + "...")

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}, line {self.line}"
        if self.field:
            where += f", field '{self.field}'"
        return f"{where}: {self.message}"

    def as_dict(self) -> dict:
        return asdict(self) | {"text": str(self)}


class ImportRejected(Exception):
    """The file was refused; nothing was written. `issues` lists up to the cap, in file order."""

    def __init__(self, issues: list[FileIssue], *, truncated: bool = False) -> None:
        self.issues = issues
        self.truncated = truncated
        more = f" (stopped at the first {len(issues)}; there may be more)" if truncated else ""
        first = str(issues[0]) if issues else "unknown error"
        super().__init__(f"{len(issues)} problem(s){more}; first: {first}")

    def as_list(self) -> list[dict]:
        return [issue.as_dict() for issue in self.issues]


class IssueCollector:
    """Collects problems up to a cap instead of stopping at the first one."""

    def __init__(self, file: str, cap: int = 100) -> None:
        self.file = file
        self.cap = cap
        self.issues: list[FileIssue] = []
        self.truncated = False

    def add(self, line: int | None, field: str | None, message: str) -> None:
        if len(self.issues) >= self.cap:
            self.truncated = True
            return
        self.issues.append(FileIssue(self.file, line, field, message))

    @property
    def full(self) -> bool:
        return len(self.issues) >= self.cap

    def __bool__(self) -> bool:
        return bool(self.issues)

    def raise_if_any(self) -> None:
        if self.issues:
            ordered = sorted(self.issues, key=lambda i: (i.line is None, i.line or 0))
            raise ImportRejected(ordered, truncated=self.truncated)
