"""What the client accepts from a server before it makes a path or a request out of it.

A release's name and version become folder and file names under the user's ``--dest``; the file
list's paths become files inside that folder; its sizes bound what is written. None of them is
trusted as sent: each is checked here against the platform's own rules, and a value that fails
is refused with the field named, before anything touches the disk.

The name rule is the server's (annotation/models/releases.py RELEASE_NAME_PATTERN: lower-case
letters, digits, single hyphens). The client cannot import the server, so it carries the same
regular expression; a test (clients/python/tests/test_client_trust.py) checks the two agree.
"""
from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any

from .errors import APIError, VerificationError

#: The server's release-name slug rule, copied (see the module docstring).
RELEASE_NAME_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
#: The server's Release.name max_length.
RELEASE_NAME_MAX = 80
_NAME = re.compile(RELEASE_NAME_PATTERN)
_HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_release_name(value: Any, where: str) -> str:
    if not isinstance(value, str) or len(value) > RELEASE_NAME_MAX or not _NAME.fullmatch(value):
        raise APIError(f"{where}: field 'name' is {str(value)[:100]!r}, not a release name (lower-case letters, "
                       f"digits and single hyphens, at most {RELEASE_NAME_MAX} characters); refused", url=where)
    return value


#: The largest id or version the server stores (a 64-bit integer): a longer number would make a
#: folder name the file system refuses.
INT_MAX = 2**63 - 1


def check_positive_int(value: Any, field: str, where: str) -> int:
    if not _is_int(value) or not 1 <= value <= INT_MAX:
        raise APIError(f"{where}: field '{field}' is {str(value)[:100]!r}, not a positive integer of at most "
                       f"{INT_MAX}; refused", url=where)
    return value


def check_byte_count(value: Any, field: str, where: str) -> int:
    if not _is_int(value) or value < 0:
        raise APIError(f"{where}: field '{field}' is {str(value)[:100]!r}, not a byte count; refused", url=where)
    return value


def check_sha256(value: Any, field: str, where: str) -> str:
    if not isinstance(value, str) or not _HEX64.fullmatch(value):
        raise APIError(f"{where}: field '{field}' is {str(value)[:100]!r}, not a SHA-256 (64 hex digits); refused",
                       url=where)
    return value.lower()


def is_plain_relative(path: str) -> bool:
    """A relative POSIX path of ordinary parts: no root, no drive, no backslash, no '.' or '..'."""
    if not isinstance(path, str) or not path or path.startswith("/") or "\\" in path or "\x00" in path:
        return False
    parts = PurePosixPath(path).parts
    return bool(parts) and all(p not in (".", "..") for p in parts) and ":" not in parts[0] \
        and path == "/".join(parts)


def check_file_list(value: Any, where: str) -> list:
    """The API's ``files``: a list of {path (plain relative), bytes (>= 0), sha256}, each path once."""
    if not isinstance(value, list):
        raise APIError(f"{where}: field 'files' is not a list; refused", url=where)
    seen = set()
    for number, entry in enumerate(value):
        field = f"files[{number}]"
        if not isinstance(entry, dict):
            raise APIError(f"{where}: field '{field}' is not an object; refused", url=where)
        path = entry.get("path")
        if not is_plain_relative(path):
            raise APIError(f"{where}: field '{field}.path' is {str(path)[:100]!r}, not a plain relative path; refused",
                           url=where)
        if path in seen:
            raise APIError(f"{where}: field '{field}.path' lists '{path}' twice; refused", url=where)
        seen.add(path)
        check_sha256(entry.get("sha256"), f"{field}.sha256", where)
        if entry.get("bytes") is not None:
            check_byte_count(entry["bytes"], f"{field}.bytes", where)
    return value


def path_inside(folder: Path, name: str) -> Path:
    """``folder / name``, resolved, and refused unless it is a direct child of ``folder`` (itself
    resolved): a name the checks above let through still never leads out of the destination."""
    folder = folder.resolve()
    path = (folder / name).resolve()
    if path.parent != folder or path.name != name:
        raise VerificationError(f"'{name}' would not be a file directly inside {folder}; refused", path=name)
    return path
