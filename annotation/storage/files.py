"""Files in a storage area, through Django's storage API, whether the area is a local folder or a
bucket prefix (settings.STORAGES; backends.py).

An area is one of settings.STORAGE_AREAS: uploads, exports, media, judgments, runs. Names are
relative to the area ("jobs/12/pool-qrels.qrels"), with forward slashes, as Artefact.path,
JudgmentSet.stored_file and Run.scores_file store them.

Large files never pass through memory whole:
- writes stream (`stored_file_write`): to a `.part` file renamed into place on a local folder, as
  multipart upload parts (AWS_S3_FILE_BUFFER_SIZE each) to a bucket, completed only when the
  writer finishes and aborted when it fails, so no reader ever sees half a file;
- readers that need a path (numpy.load on .npz, the import parsers, the evaluation tools, which
  print the judgments file's name) get `stored_file_local_path`: the file itself on a local
  folder, a temporary copy downloaded in parts (boto3's transfer manager) from a bucket, under its
  own name, removed afterwards;
- downloads stream in 1 MB blocks (`stored_file_chunks`), or are redirected to a signed URL
  (`stored_file_url`) so the store sends the bytes itself.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from django.conf import settings
from django.core.exceptions import SuspiciousFileOperation, SuspiciousOperation
from django.core.files import File
from django.core.files.storage import FileSystemStorage, Storage, storages

CHUNK = 1 << 20
PARTIAL_SUFFIX = ".part"


class StoredFileMissing(FileNotFoundError):
    """The name is not in the area (or would leave it)."""


def area_storage(area: str) -> Storage:
    if area not in settings.STORAGE_AREAS:
        raise ValueError(f"unknown storage area {area!r}; known: {', '.join(settings.STORAGE_AREAS)}")
    return storages[area]


def area_is_local(area: str) -> bool:
    """True when the area is a folder of this host (files have a path, no signed URLs)."""
    return isinstance(area_storage(area), FileSystemStorage)


def _clean(name: str) -> str:
    name = str(name).replace("\\", "/")
    parts = PurePosixPath(name).parts
    if not name or name.startswith("/") or ".." in parts:
        raise StoredFileMissing(f"{name!r} is not a name inside the storage area")
    return name


def _local_path(storage: FileSystemStorage, name: str) -> Path:
    try:
        return Path(storage.path(name))
    except SuspiciousFileOperation as exc:
        raise StoredFileMissing(f"{name!r} would leave the storage area") from exc


def _bucket_object(storage, name: str):
    from storages.utils import clean_name

    try:
        key = storage._normalize_name(clean_name(name))
    except SuspiciousOperation as exc:
        raise StoredFileMissing(f"{name!r} would leave the storage area") from exc
    return storage.bucket.Object(key)


@contextmanager
def stored_file_write(area: str, name: str) -> Iterator[BinaryIO]:
    """A binary writer for `name`; the file appears whole when the block ends, and not at all if
    it raises (see the module docstring)."""
    name = _clean(name)
    storage = area_storage(area)
    if isinstance(storage, FileSystemStorage):
        target = _local_path(storage, name)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + PARTIAL_SUFFIX)
        try:
            with partial.open("wb") as handle:
                yield handle
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
        return
    handle = storage.open(name, "wb")
    try:
        yield handle
    except BaseException:
        # S3File would complete the upload on close: abort it instead, so nothing appears.
        multipart = getattr(handle, "_multipart", None)
        if multipart is not None:
            multipart.abort()
            handle._multipart = None
        handle._is_dirty = False
        handle._raw_bytes_written = 1  # nothing to create on close either
        handle.close()
        raise
    handle.close()


def stored_file_save(area: str, name: str, content) -> str:
    """Stores a Django File / UploadedFile (read in chunks; a multipart upload to a bucket) under
    `name` exactly. Returns the name."""
    name = _clean(name)
    storage = area_storage(area)
    if isinstance(storage, FileSystemStorage):
        with stored_file_write(area, name) as out:
            for chunk in content.chunks(CHUNK):
                out.write(chunk)
        return name
    if hasattr(content, "seek"):
        content.seek(0)
    return storage.save(name, content)


def stored_file_copy_in(area: str, name: str, source: Path) -> str:
    """Stores the local file `source` under `name`."""
    with open(source, "rb") as handle:
        return stored_file_save(area, name, File(handle, name=Path(name).name))


def stored_file_exists(area: str, name: str) -> bool:
    try:
        name = _clean(name)
    except StoredFileMissing:
        return False
    storage = area_storage(area)
    if isinstance(storage, FileSystemStorage):
        try:
            return _local_path(storage, name).is_file()
        except StoredFileMissing:
            return False
    try:
        return storage.exists(name)
    except SuspiciousOperation:
        return False


def stored_file_size(area: str, name: str) -> int:
    return area_storage(area).size(_clean(name))


def stored_file_modified(area: str, name: str) -> datetime:
    return area_storage(area).get_modified_time(_clean(name))


def stored_file_delete(area: str, name: str) -> None:
    """Removes the file if it is there."""
    try:
        name = _clean(name)
        area_storage(area).delete(name)
    except (StoredFileMissing, FileNotFoundError):
        pass


def stored_files_under(area: str, prefix: str = "") -> Iterator[str]:
    """Every file name under the folder `prefix` ("" for the whole area), recursively."""
    storage = area_storage(area)
    prefix = prefix.strip("/")
    if isinstance(storage, FileSystemStorage):
        root = Path(storage.location)
        base = root / prefix if prefix else root
        if not base.is_dir():
            return
        for path in base.rglob("*"):
            if path.is_file():
                yield path.relative_to(root).as_posix()
        return
    location = storage.location.strip("/")
    key_prefix = "/".join(p for p in (location, prefix) if p)
    key_prefix = key_prefix + "/" if key_prefix else ""
    for obj in storage.bucket.objects.filter(Prefix=key_prefix):
        relative = obj.key[len(location):].lstrip("/") if location else obj.key
        if relative and not relative.endswith("/"):
            yield relative


def stored_folders(area: str, prefix: str = "") -> list[str]:
    """The names of the folders directly under `prefix`."""
    storage = area_storage(area)
    try:
        folders, _ = storage.listdir(prefix.strip("/"))
    except FileNotFoundError:
        return []
    return sorted(folders)


def stored_folder_delete(area: str, prefix: str) -> int:
    """Removes every file under the folder `prefix` (never the whole area). Returns how many."""
    prefix = _clean(prefix).strip("/")
    removed = 0
    for name in list(stored_files_under(area, prefix)):
        stored_file_delete(area, name)
        removed += 1
    storage = area_storage(area)
    if isinstance(storage, FileSystemStorage):
        shutil.rmtree(_local_path(storage, prefix), ignore_errors=True)
    return removed


def stored_file_open(area: str, name: str) -> BinaryIO:
    """A binary reader (for a bucket: spooled to a temporary file past AWS_S3_MAX_MEMORY_SIZE)."""
    name = _clean(name)
    storage = area_storage(area)
    if isinstance(storage, FileSystemStorage):
        path = _local_path(storage, name)
        if not path.is_file():
            raise StoredFileMissing(f"{name} is missing")
        return path.open("rb")
    try:
        return storage.open(name, "rb")
    except FileNotFoundError as exc:
        raise StoredFileMissing(f"{name} is missing") from exc


def stored_file_chunks(area: str, name: str, chunk: int = CHUNK, *,
                       byte_range: tuple[int, int] | None = None) -> Iterator[bytes]:
    """The file's bytes in blocks of `chunk`, read as they are sent (constant memory); with
    `byte_range` (first, last), inclusive as HTTP counts them, only those bytes (a bucket is asked
    for just that range)."""
    name = _clean(name)
    storage = area_storage(area)
    if isinstance(storage, FileSystemStorage):
        with stored_file_open(area, name) as handle:
            if byte_range is None:
                yield from iter(lambda: handle.read(chunk), b"")
                return
            handle.seek(byte_range[0])
            left = byte_range[1] - byte_range[0] + 1
            while left > 0:
                block = handle.read(min(chunk, left))
                if not block:
                    return
                left -= len(block)
                yield block
        return
    from botocore.exceptions import ClientError

    try:
        ranged = {"Range": f"bytes={byte_range[0]}-{byte_range[1]}"} if byte_range is not None else {}
        body = _bucket_object(storage, name).get(**ranged)["Body"]
    except ClientError as exc:
        raise StoredFileMissing(f"{name} is missing") from exc
    try:
        yield from body.iter_chunks(chunk)
    finally:
        body.close()


@contextmanager
def stored_file_local_path(area: str, name: str) -> Iterator[Path]:
    """A path on this host holding the file, for readers that need one (see the module docstring).
    The temporary copy of a bucket's file keeps the file's own name and is removed afterwards."""
    name = _clean(name)
    storage = area_storage(area)
    if isinstance(storage, FileSystemStorage):
        path = _local_path(storage, name)
        if not path.is_file():
            raise StoredFileMissing(f"{name} is missing")
        yield path
        return
    from botocore.exceptions import ClientError

    folder = Path(tempfile.mkdtemp(prefix="rejudge-", dir=getattr(settings, "FILE_UPLOAD_TEMP_DIR", None)))
    try:
        target = folder / PurePosixPath(name).name
        try:
            _bucket_object(storage, name).download_file(str(target), Config=storage.transfer_config)
        except ClientError as exc:
            raise StoredFileMissing(f"{name} is missing") from exc
        yield target
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def stored_file_url(area: str, name: str, *, filename: str | None = None, content_type: str | None = None) -> str | None:
    """A short-lived signed URL (AWS_QUERYSTRING_EXPIRE seconds) for a file in a bucket, or None
    for a local folder (whose files only the application's own views serve). With `filename`, the
    store answers as a download under that name."""
    storage = area_storage(area)
    if isinstance(storage, FileSystemStorage):
        return None
    parameters = {}
    if filename:
        safe = filename.replace('"', "").replace("\\", "")
        parameters["ResponseContentDisposition"] = f'attachment; filename="{safe}"'
    if content_type:
        parameters["ResponseContentType"] = content_type
    try:
        return storage.url(_clean(name), parameters=parameters or None)
    except SuspiciousOperation as exc:
        raise StoredFileMissing(f"{name!r} would leave the storage area") from exc


def stored_file_cached_path(area: str, name: str) -> Path:
    """A path on this host for a file whose name fixes its content (judgment files and score
    matrices are named by their SHA-256): the file itself on a local folder; from a bucket, a copy
    downloaded once into this host's cache (REJUDGE_STORAGE_CACHE_DIR) and reused, since the same
    name can never hold other bytes."""
    name = _clean(name)
    storage = area_storage(area)
    if isinstance(storage, FileSystemStorage):
        path = _local_path(storage, name)
        if not path.is_file():
            raise StoredFileMissing(f"{name} is missing")
        return path
    from botocore.exceptions import ClientError

    target = Path(settings.REJUDGE_STORAGE_CACHE_DIR) / area / name
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}{PARTIAL_SUFFIX}")
    try:
        _bucket_object(storage, name).download_file(str(partial), Config=storage.transfer_config)
        os.replace(partial, target)  # another process reading it sees all of it or nothing
    except ClientError as exc:
        raise StoredFileMissing(f"{name} is missing") from exc
    finally:
        partial.unlink(missing_ok=True)
    return target
