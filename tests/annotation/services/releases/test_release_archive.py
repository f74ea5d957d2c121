"""The release archive writes each member's blocks on a thread of its own (issue 40): the zip is the
one a plain zipfile writes, byte for byte, and an error on the thread reaches the caller."""
from __future__ import annotations

import hashlib
import io
import threading
import zipfile
from datetime import datetime, timezone

import pytest

from annotation.services.releases.archive import ReleaseArchive

CREATED = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def _members() -> dict[str, list[str]]:
    """Texts written in many small writes, several 1 MB blocks long, non-ASCII included."""
    rows = [f"{n},caption {n} – café 日本,{n * 0.5!r}\n" for n in range(120_000)]
    return {"labels.csv": rows, "empty.txt": [], "small.json": ['{"a": 1}\n'], "again.txt": rows[::-1]}


def _threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == "release-archive-member"]


def test_the_archive_is_what_a_plain_zipfile_writes():
    raw = io.BytesIO()
    archive = ReleaseArchive(raw, folder="r-v1", created_at=CREATED)
    for path, parts in _members().items():
        with archive.text(path) as out:
            for part in parts:
                out.write(part)
    archive.close()

    plain = io.BytesIO()
    with zipfile.ZipFile(plain, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as expected:
        for path, parts in _members().items():
            info = zipfile.ZipInfo(f"r-v1/{path}", date_time=CREATED.timetuple()[:6])
            info.compress_type, info.external_attr = zipfile.ZIP_DEFLATED, 0o644 << 16
            with expected.open(info, "w", force_zip64=True) as member:
                member.write("".join(parts).encode("utf-8"))
    # The plain file was written seekable (headers patched in place); read both back member by member
    # and compare the deflated bytes themselves too, which the thread's block boundaries must not change.
    with zipfile.ZipFile(raw) as got, zipfile.ZipFile(plain) as want:
        assert got.namelist() == want.namelist()
        for name in want.namelist():
            assert got.read(name) == want.read(name)
            assert got.getinfo(name).compress_size == want.getinfo(name).compress_size
            assert got.getinfo(name).CRC == want.getinfo(name).CRC
    data = raw.getvalue()
    assert archive.size == len(data) and archive.sha256 == hashlib.sha256(data).hexdigest()
    for listed in archive.files:
        text = "".join(_members()[listed["path"]]).encode("utf-8")
        assert listed["bytes"] == len(text) and listed["sha256"] == hashlib.sha256(text).hexdigest()
    assert _threads() == []


class _FailingRaw(io.BytesIO):
    """Storage whose write number `good` + 1 fails, as a full disk or a lost bucket would."""

    def __init__(self, good: int) -> None:
        super().__init__()
        self.good = good

    def write(self, data) -> int:
        self.good -= 1
        if self.good == -1:
            raise OSError("disk full")
        return super().write(data)


@pytest.mark.parametrize("good", [0, 1, 3])
def test_an_error_on_the_writing_thread_reaches_the_caller(good):
    archive = ReleaseArchive(_FailingRaw(good), folder="r-v1", created_at=CREATED)
    with pytest.raises(OSError, match="disk full"):
        with archive.text("labels.csv") as out:
            for part in _members()["labels.csv"] * 4:
                out.write(part)
    assert _threads() == []
    assert archive.files == []  # the member is not listed as written
    archive.close()


def test_an_error_in_the_caller_is_raised_as_it_is_and_the_thread_ends():
    archive = ReleaseArchive(io.BytesIO(), folder="r-v1", created_at=CREATED)
    with pytest.raises(KeyError, match="made by the caller"):
        with archive.text("labels.csv") as out:
            for part in _members()["labels.csv"]:
                out.write(part)
            raise KeyError("made by the caller")
    assert _threads() == []
