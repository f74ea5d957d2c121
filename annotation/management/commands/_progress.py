"""Shared bits of the admin CLI."""
from __future__ import annotations

import sys
import time

from django.core.management.base import CommandError

from annotation.formats.errors import ImportRejected


class ConsoleProgress:
    """Prints 'done/total (pct)' on one line at most twice a second, to stderr."""

    def __init__(self, label: str, enabled: bool = True) -> None:
        self.label, self.enabled, self.last = label, enabled and sys.stderr.isatty(), 0.0

    def __call__(self, done: int, total: int | None = None, message: str = "") -> None:
        if not self.enabled or time.monotonic() - self.last < 0.5:
            return
        self.last = time.monotonic()
        pct = f" ({100 * done / total:.0f}%)" if total else ""
        sys.stderr.write(f"\r{self.label}: {done:,}/{total or 0:,}{pct} {message}")
        sys.stderr.flush()


def rejected_to_command_error(exc: ImportRejected) -> CommandError:
    lines = [str(issue) for issue in exc.issues]
    if exc.truncated:
        lines.append(f"... stopped after {len(exc.issues)} problems")
    return CommandError("import refused, nothing was written:\n  " + "\n  ".join(lines))
