"""The two kinds of storage an area can live on (settings.STORAGES, one alias per area).

- LocalAreaStorage: a folder on this host (the embedded default). The folder is read from its
  setting (EXPORT_ROOT, ...) at each use rather than once, so a test or a command that points the
  setting elsewhere is obeyed, as the code that used the settings directly was.
- S3AreaStorage: a prefix of a bucket in an S3-compatible object store (django-storages).
"""
from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.files.storage import FileSystemStorage
from django.utils.deconstruct import deconstructible
from storages.backends.s3 import S3Storage


@deconstructible
class LocalAreaStorage(FileSystemStorage):
    def __init__(self, root_setting: str = "MEDIA_ROOT", **kwargs) -> None:
        self.root_setting = root_setting
        super().__init__(**kwargs)

    # FileSystemStorage caches these; the setting may change after the storage was made.
    @property
    def base_location(self):
        return Path(getattr(settings, self.root_setting))

    @property
    def location(self):
        return str(Path(self.base_location).resolve())


@deconstructible
class S3AreaStorage(S3Storage):
    """A bucket prefix (OPTIONS location). Names are made unique by the code (uuids, checksums, job
    folders) and AWS_S3_FILE_OVERWRITE is on, so a save never asks the store whether a name is free."""
