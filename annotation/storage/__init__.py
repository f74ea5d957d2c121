"""Storage of every file the platform keeps, through Django's storage API (files.py), on a local
folder or an S3-compatible bucket (backends.py). Below the selectors and services, which both read
and write files through it; the files jobs keep (uploads, outputs and their clean-up) are
annotation/services/storage."""
from .files import (StoredFileMissing, area_is_local, area_storage, stored_file_cached_path, stored_file_chunks,
                    stored_file_copy_in, stored_file_delete, stored_file_exists, stored_file_local_path,
                    stored_file_modified, stored_file_open, stored_file_save, stored_file_size, stored_file_url,
                    stored_file_write, stored_files_under, stored_folder_delete, stored_folders)

__all__ = ["StoredFileMissing", "area_is_local", "area_storage", "stored_file_cached_path", "stored_file_chunks",
           "stored_file_copy_in", "stored_file_delete", "stored_file_exists", "stored_file_local_path",
           "stored_file_modified", "stored_file_open", "stored_file_save", "stored_file_size", "stored_file_url",
           "stored_file_write", "stored_files_under", "stored_folder_delete", "stored_folders"]
