"""The files jobs keep in storage: uploads waiting for their import job (uploads.py), and the files
jobs write and their clean-up (job_files.py). The storage API itself, which selectors read through
too, is annotation/storage."""
