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
from .names import is_plain_relative

FORMAT_PREFIX = "rejudge-release/"
META = "release.json"
SUMS = "SHA256SUMS"
_CHUNK = 1 << 20
#: release.json and SHA256SUMS list every file: a few hundred bytes each, far below this.
MANIFEST_MAX_BYTES = 16 << 20
#: What one release may hold, unpacked, unless the caller says otherwise (Client(max_bytes=...)).
DEFAULT_MAX_BYTES = 20 << 30


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


def parse_meta(raw: bytes, where: str) -> dict:
    """release.json's content, checked: rejudge-release/1 with a ``files`` list of {path, sha256}."""
    try:
        meta = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReleaseFormatError(f"{where}: not JSON ({exc})") from exc
    fmt = meta.get("format") if isinstance(meta, dict) else None
    if not isinstance(fmt, str) or not fmt.startswith(FORMAT_PREFIX):
        raise ReleaseFormatError(f"{where}, field 'format': expected '{FORMAT_PREFIX}1', got {fmt!r}")
    files = meta.get("files")
    if not isinstance(files, list) or not all(isinstance(f, dict) and {"path", "sha256"} <= f.keys() for f in files):
        raise ReleaseFormatError(f"{where}, field 'files': expected a list of {{path, bytes, sha256}}")
    for entry in files:
        if not is_plain_relative(entry["path"]):
            raise ReleaseFormatError(f"{where}, field 'files': '{str(entry['path'])[:100]}' is not a plain relative path")
    return meta


def read_meta(folder: Path) -> dict:
    path = folder / META
    if not path.is_file():
        raise ReleaseFormatError(f"{folder}: no {META}; is this a Rejudge release folder?")
    return parse_meta(path.read_bytes(), str(path))


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


def _declared_sizes(meta: dict, expected_files, where: str) -> dict:
    """{path: [(who says, bytes)]} from release.json's ``files`` and the server's list."""
    sizes: dict = {}
    for who, entries in ((META, meta["files"]), ("the server", expected_files or ())):
        for entry in entries:
            if entry.get("bytes") is None:
                continue
            size = entry["bytes"]
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise ReleaseFormatError(f"{where}: {who} gives '{entry.get('path')}' {size!r} bytes, not a size")
            sizes.setdefault(entry["path"], []).append((who, size))
    return sizes


def _copy_bounded(source, target: Path, limit: int, rel: str) -> None:
    """Streams one entry to ``target``, stopping (and removing the partial file) as soon as it
    goes past ``limit`` bytes, whatever the zip's headers claim."""
    written = 0
    try:
        with open(target, "xb") as out:
            for chunk in iter(lambda: source.read(_CHUNK), b""):
                written += len(chunk)
                if written > limit:
                    raise VerificationError(f"{rel}: the archive's entry holds more than the {limit} bytes declared; "
                                            f"extraction stopped there", path=rel)
                out.write(chunk)
    except BaseException:
        target.unlink(missing_ok=True)
        raise


def extract_archive(archive, into, expected_top: Optional[str] = None, *, expected_files: Optional[Iterable[Mapping]] = None,
                    max_bytes: int = DEFAULT_MAX_BYTES) -> Path:
    """Extracts a release zip into ``into`` after checking its layout: one top folder (named
    ``expected_top`` when given), plain relative paths only, each once, no links. Returns the top
    folder.

    release.json is read first (at most MANIFEST_MAX_BYTES); then every entry's size must equal
    what release.json and ``expected_files`` (the server's list) declare for it, an entry neither
    declares is refused (release.json and SHA256SUMS themselves may be up to MANIFEST_MAX_BYTES),
    and the declared sizes together may not pass ``max_bytes``; all of this before a byte is
    written. Each entry is then streamed out and stopped at its declared size."""
    archive, into = Path(archive), Path(into)
    try:
        zf = zipfile.ZipFile(archive)
    except zipfile.BadZipFile as exc:
        raise VerificationError(f"{archive.name}: not a zip archive ({exc})", path=archive.name) from exc
    with zf:
        tops, names = set(), set()
        for info in zf.infolist():
            name = info.filename
            parts = PurePosixPath(name).parts
            if not is_plain_relative(name.rstrip("/")):
                raise ReleaseFormatError(f"{archive.name}: entry '{name}' is not a plain relative path")
            if stat.S_ISLNK(info.external_attr >> 16):
                raise ReleaseFormatError(f"{archive.name}: entry '{name}' is a symbolic link")
            if len(parts) == 1 and not info.is_dir():
                raise ReleaseFormatError(f"{archive.name}: '{name}' lies outside the release's top folder")
            if name.rstrip("/") in names:
                raise ReleaseFormatError(f"{archive.name}: entry '{name}' appears twice")
            names.add(name.rstrip("/"))
            tops.add(parts[0])
        if len(tops) != 1:
            raise ReleaseFormatError(f"{archive.name}: expected one top folder, found {sorted(tops) or 'none'}")
        top = tops.pop()
        if expected_top is not None and top != expected_top:
            raise ReleaseFormatError(f"{archive.name}: top folder is '{top}', expected '{expected_top}'")
        files = [info for info in zf.infolist() if not info.is_dir()]
        by_rel = {info.filename.split("/", 1)[1]: info for info in files}
        meta_info = by_rel.get(META)
        if meta_info is None:
            raise ReleaseFormatError(f"{archive.name}: no {top}/{META}; is this a Rejudge release?")
        if meta_info.file_size > MANIFEST_MAX_BYTES:
            raise VerificationError(f"{META}: the archive's entry is {meta_info.file_size} bytes, more than a "
                                    f"manifest may be ({MANIFEST_MAX_BYTES}); not extracted", path=META)
        with zf.open(meta_info) as source:
            raw = source.read(MANIFEST_MAX_BYTES + 1)
        meta = parse_meta(raw, f"{archive.name}: {top}/{META}")
        declared = _declared_sizes(meta, expected_files, archive.name)
        limits, total = {}, 0
        for rel, info in sorted(by_rel.items()):
            sizes = declared.get(rel, [])
            if not sizes and rel not in (META, SUMS):
                raise VerificationError(f"{rel}: present but not listed in {META} (nor by the server); not extracted",
                                        path=rel)
            for who, size in sizes:
                if info.file_size != size:
                    raise VerificationError(f"{rel}: the archive's entry is {info.file_size} bytes, {who} says {size}; "
                                            f"not extracted", path=rel)
            limits[rel] = sizes[0][1] if sizes else MANIFEST_MAX_BYTES
            if info.file_size > limits[rel]:
                raise VerificationError(f"{rel}: the archive's entry is {info.file_size} bytes, more than a manifest "
                                        f"may be ({MANIFEST_MAX_BYTES}); not extracted", path=rel)
            total += limits[rel] if sizes else info.file_size
        if total > max_bytes:
            raise VerificationError(f"{archive.name}: its files declare {total} bytes in all, more than the limit of "
                                    f"{max_bytes} (Client(max_bytes=...)); not extracted", path=archive.name)
        root = into.resolve() / top
        root.mkdir(parents=True, exist_ok=True)
        for rel, info in sorted(by_rel.items()):
            target = (root / rel).resolve()
            if root not in target.parents:  # cannot happen after the checks above; kept as the last word
                raise ReleaseFormatError(f"{archive.name}: entry '{info.filename}' would leave {root}")
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as source:
                _copy_bounded(source, target, limits[rel], rel)
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
