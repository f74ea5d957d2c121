"""Errors the client raises; every one says what to do or which file is at fault."""
from __future__ import annotations


class RejudgeError(Exception):
    """Base class of the client's errors."""


class APIError(RejudgeError):
    """The server refused a request or answered something that is not the releases API."""

    def __init__(self, message: str, *, status: int | None = None, url: str | None = None):
        super().__init__(message)
        self.status = status
        self.url = url


class VerificationError(RejudgeError):
    """A downloaded archive or one of its files does not match its published checksum or size."""

    def __init__(self, message: str, *, path: str | None = None):
        super().__init__(message)
        self.path = path


class ReleaseFormatError(RejudgeError):
    """A release folder or one of its files is not laid out as rejudge-release/1 says."""


class RunFileError(RejudgeError):
    """A run file has a malformed line; the message names the file, the line and the field."""


class MissingExtra(RejudgeError, ImportError):
    """An optional dependency (pandas, ir_measures) is not installed."""


def require(module: str, purpose: str):
    """Imports an optional dependency, or says which extra installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(f"{purpose} needs {module}, which is not installed: "
                           f"pip install 'rejudge-client[analysis]' (or pip install {module})") from exc
