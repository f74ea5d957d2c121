"""What each pytest-xdist worker must not share with the others, set before Django reads its settings.

scripts/test.sh runs the suite in several worker processes (`-n`, pytest-xdist). pytest-django
gives each its own test database; the rest that a session owns is named here, from the worker's
id, in the environment that config/settings.py reads at import (scripts/test.sh loads this module as a
plugin, `-p tests.parallel`, so it is imported before pytest-django sets Django up):

- the Celery queue: each worker's session starts its own Celery worker process on its own test
  database, which must take only that session's jobs;
- REJUDGE_VAR_DIR: the session's folder for the secret key, sockets and other run files.

Without xdist (PYTEST_XDIST_WORKER unset) nothing changes.
"""
from __future__ import annotations

import os
from pathlib import Path

WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")

if WORKER:
    os.environ["CELERY_TASK_DEFAULT_QUEUE"] = f"{os.environ.get('CELERY_TASK_DEFAULT_QUEUE') or 'rejudge-test'}-{WORKER}"
    if os.environ.get("REJUDGE_VAR_DIR"):
        own = Path(os.environ["REJUDGE_VAR_DIR"]) / WORKER
        own.mkdir(parents=True, exist_ok=True)
        os.environ["REJUDGE_VAR_DIR"] = str(own)
