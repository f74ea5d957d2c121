"""The release archive: ONE zip written straight to storage as it is made (no seeking, so it can
be a multipart upload to a bucket), each member streamed in and hashed on the way.

The zip is hashed and counted as it is written, so the release row records the archive's size and
SHA-256 without reading it back; each member's size and SHA-256 (of its uncompressed bytes) go to
release.json and SHA256SUMS.

A member's text is hashed, deflated and written on a thread of its own while the caller makes the
next block of it (_MemberText): zlib's deflate and crc32 and hashlib's sha256 let go of the GIL on
large buffers, so on a second core they run beside the Python that makes rows.
"""
from __future__ import annotations

import hashlib
import queue
import threading
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


class _MemberText(HashingTextFile):
    """A zip member's text sink whose 1 MB blocks are hashed and written into the member (deflated,
    then through the archive's sink to storage) on a thread of its own, in the order they were made.

    The thread is the only one writing to the zip while the member is open. An error in it stops
    the writing: the caller's next block raises it, and so does close(); stop() ends the thread
    without raising, for a caller that is already raising. Either way the thread is joined."""

    _QUEUED = 4  # blocks made but not yet written: what the thread may fall behind by

    def __init__(self, member) -> None:
        super().__init__(member)
        self._blocks: queue.Queue[bytes | None] = queue.Queue(maxsize=self._QUEUED)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._write_blocks, name="release-archive-member", daemon=True)
        self._thread.start()

    def write_block(self, block: bytes) -> None:
        if self._error is not None:
            raise self._error
        self._blocks.put(block)

    def _write_blocks(self) -> None:
        while (block := self._blocks.get()) is not None:
            if self._error is None:  # after an error, blocks are only taken, so the caller never waits
                try:
                    super().write_block(block)
                except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                    self._error = exc

    def stop(self) -> None:
        """Waits until the thread has taken every block and ended."""
        if self._thread.is_alive():
            self._blocks.put(None)
            self._thread.join()

    def close(self) -> None:
        """Waits until every block is written; raises the thread's error, if it had one."""
        self.stop()
        if self._error is not None:
            raise self._error


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
            out = _MemberText(member)
            try:
                yield out
                out.flush()
            except BaseException:
                out.stop()
                raise
            out.close()
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
