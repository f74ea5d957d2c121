"""The release archive: ONE zip written straight to storage as it is made (no seeking, so it can
be a multipart upload to a bucket), each member streamed in and hashed on the way.

The zip is hashed and counted as it is written, so the release row records the archive's size and
SHA-256 without reading it back; each member's size and SHA-256 (of its uncompressed bytes) go to
release.json and SHA256SUMS.
"""
from __future__ import annotations

import hashlib
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

from annotation.services.exports.labels import HashingTextFile


class _Sink:
    """A forward-only binary sink over the storage writer: no seek(), so zipfile writes data
    descriptors instead of going back to patch headers."""

    def __init__(self, raw) -> None:
        self.raw = raw
        self.sha256 = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.raw.write(data)
        self.sha256.update(data)
        self.size += len(data)
        return len(data)

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        pass


class ReleaseArchive:
    def __init__(self, raw, *, folder: str, created_at: datetime) -> None:
        self.folder = folder
        self.sink = _Sink(raw)
        self.zip = zipfile.ZipFile(self.sink, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6)
        self.stamp = created_at.timetuple()[:6]
        self.files: list[dict] = []

    @contextmanager
    def text(self, path: str) -> Iterator[HashingTextFile]:
        """A text writer (UTF-8) for the member `path` (relative to the release folder)."""
        info = zipfile.ZipInfo(f"{self.folder}/{path}", date_time=self.stamp)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
        # force_zip64: a labels file past 2 GB at a very large pool must still fit.
        with self.zip.open(info, "w", force_zip64=True) as member:
            out = HashingTextFile(member)
            yield out
            out.flush()
        self.files.append({"path": path, "bytes": out.size, "sha256": out.sha256.hexdigest()})

    def write_text(self, path: str, text: str) -> None:
        with self.text(path) as out:
            out.write(text)

    def close(self) -> None:
        self.zip.close()

    @property
    def size(self) -> int:
        return self.sink.size

    @property
    def sha256(self) -> str:
        return self.sink.sha256.hexdigest()
