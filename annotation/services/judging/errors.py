"""The judging area's refusal, raised by its settings checks and by drawing a design."""
from __future__ import annotations


class JudgingError(ValueError):
    """A judging request that cannot be carried out; `code` is "invalid" or "conflict"."""

    def __init__(self, message: str, code: str = "invalid") -> None:
        self.code = code
        super().__init__(message)
