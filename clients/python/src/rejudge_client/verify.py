"""Checks a release archive or folder against its own manifests (rejudge-release/1).

A release folder holds ``release.json`` (its ``files``: path, bytes and SHA-256 of every file but
itself and ``SHA256SUMS``) and ``SHA256SUMS`` (``<hex>  <path>`` lines for every file but itself).
Both are checked, every file is hashed once, and a file on disk that neither lists is refused too:
a release is exactly what it says it is.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import stat
import tempfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import Iterable, Mapping, Optional

from .errors import ReleaseFormatError, VerificationError

FORMAT_PREFIX = "rejudge-release/"
META = "release.json"
SUMS = "SHA256SUMS"
_CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_sums(text: str, where: str) -> dict:
    """``SHA256SUMS`` as {relative path: hex}; sha256sum's binary marker (``*path``) is accepted."""
    sums = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        digest, sep, name = line.partition(" ")
        name = name[1:] if name.startswith((" ", "*")) else name
        if not sep or len(digest) != 64 or not name or any(c not in "0123456789abcdefABCDEF" for c in digest):
            raise ReleaseFormatError(f"{where}, line {number}: expected '<64 hex digits>  <path>', got {line!r}")
        if name in sums:
            raise ReleaseFormatError(f"{where}, line {number}: '{name}' is listed twice")
        sums[name] = digest.lower()
    return sums


def read_meta(folder: Path) -> dict:
    path = folder / META
    if not path.is_file():
        raise ReleaseFormatError(f"{folder}: no {META}; is this a Rejudge release folder?")
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReleaseFormatError(f"{path}: not JSON ({exc})") from exc
    fmt = meta.get("format") if isinstance(meta, dict) else None
    if not isinstance(fmt, str) or not fmt.startswith(FORMAT_PREFIX):
        raise ReleaseFormatError(f"{path}, field 'format': expected '{FORMAT_PREFIX}1', got {fmt!r}")
    files = meta.get("files")
    if not isinstance(files, list) or not all(isinstance(f, dict) and {"path", "sha256"} <= f.keys() for f in files):
        raise ReleaseFormatError(f"{path}, field 'files': expected a list of {{path, bytes, sha256}}")
    return meta


def _files_on_disk(folder: Path) -> list:
    found = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            raise VerificationError(f"{folder}: '{rel}' is a symbolic link; a release holds only files", path=rel)
        if path.is_file():
            found.append(rel)
    return found


def verify_folder(folder, expected_files: Optional[Iterable[Mapping]] = None) -> list:
    """Hashes every file of a release folder against SHA256SUMS and release.json's ``files`` (and
    ``expected_files``, the server's list, when given). Returns the checked paths; raises
    VerificationError listing every mismatch by file."""
    folder = Path(folder)
    meta = read_meta(folder)
    sums_path = folder / SUMS
    if not sums_path.is_file():
        raise ReleaseFormatError(f"{folder}: no {SUMS}")
    sums = read_sums(sums_path.read_text(encoding="utf-8"), str(sums_path))
    on_disk = [p for p in _files_on_disk(folder) if p != SUMS]
    hashes = {}
    problems = []

    def digest(rel: str) -> str:
        if rel not in hashes:
            hashes[rel] = sha256_file(folder / rel)
        return hashes[rel]

    for rel in sorted(set(on_disk) | set(sums)):
        if rel not in on_disk:
            problems.append(f"{rel}: listed in {SUMS} but missing")
        elif rel not in sums:
            problems.append(f"{rel}: present but not listed in {SUMS}")
        elif digest(rel) != sums[rel]:
            problems.append(f"{rel}: SHA-256 is {digest(rel)}, {SUMS} says {sums[rel]}")
    listed = set()
    for entry in meta["files"]:
        rel = entry["path"]
        listed.add(rel)
        if rel not in on_disk:
            problems.append(f"{rel}: listed in {META} but missing")
            continue
        if str(entry["sha256"]).lower() != digest(rel):
            problems.append(f"{rel}: SHA-256 is {digest(rel)}, {META} says {entry['sha256']}")
        size = (folder / rel).stat().st_size
        if entry.get("bytes") is not None and int(entry["bytes"]) != size:
            problems.append(f"{rel}: {size} bytes, {META} says {entry['bytes']}")
    for rel in on_disk:
        if rel not in listed and rel != META:
            problems.append(f"{rel}: present but not listed in {META}")
    if expected_files is not None:
        # The server's list may name release.json and SHA256SUMS too: each entry is checked
        # against the file itself, and release.json must list every other one.
        for entry in expected_files:
            rel = entry["path"]
            if rel not in on_disk and rel != SUMS:
                problems.append(f"{rel}: listed by the server but missing")
            elif rel not in listed and rel not in (META, SUMS):
                problems.append(f"{rel}: listed by the server but not in {META}")
            elif digest(rel) != str(entry["sha256"]).lower():
                problems.append(f"{rel}: SHA-256 is {digest(rel)}, the server says {entry['sha256']}")
    if problems:
        shown = "\n  ".join(problems[:50]) + (f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else "")
        raise VerificationError(f"release {folder} failed verification ({len(problems)} problem(s)):\n  {shown}",
                                path=problems[0].split(":", 1)[0])
    return sorted(set(on_disk) | {SUMS})


def extract_archive(archive, into, expected_top: Optional[str] = None) -> Path:
    """Extracts a release zip into ``into`` after checking its layout: one top folder (named
    ``expected_top`` when given), relative paths only, no links. Returns the top folder."""
    archive, into = Path(archive), Path(into)
    try:
        zf = zipfile.ZipFile(archive)
    except zipfile.BadZipFile as exc:
        raise VerificationError(f"{archive.name}: not a zip archive ({exc})", path=archive.name) from exc
    with zf:
        tops = set()
        for info in zf.infolist():
            name = info.filename
            parts = PurePosixPath(name).parts
            if name.startswith("/") or "\\" in name or ".." in parts or (parts and ":" in parts[0]):
                raise ReleaseFormatError(f"{archive.name}: entry '{name}' is not a plain relative path")
            if stat.S_ISLNK(info.external_attr >> 16):
                raise ReleaseFormatError(f"{archive.name}: entry '{name}' is a symbolic link")
            if len(parts) == 1 and not info.is_dir():
                raise ReleaseFormatError(f"{archive.name}: '{name}' lies outside the release's top folder")
            tops.add(parts[0])
        if len(tops) != 1:
            raise ReleaseFormatError(f"{archive.name}: expected one top folder, found {sorted(tops) or 'none'}")
        top = tops.pop()
        if expected_top is not None and top != expected_top:
            raise ReleaseFormatError(f"{archive.name}: top folder is '{top}', expected '{expected_top}'")
        zf.extractall(into)
    return into / top


def verify(path, expected_files: Optional[Iterable[Mapping]] = None) -> list:
    """Verifies a release folder, or a release zip (extracted to a temporary folder, removed after)."""
    path = Path(path)
    if path.is_dir():
        return verify_folder(path, expected_files)
    if not path.is_file():
        raise ReleaseFormatError(f"{path}: no such file or folder")
    tmp = Path(tempfile.mkdtemp(prefix=".rejudge-verify-"))
    try:
        return verify_folder(extract_archive(path, tmp), expected_files)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
