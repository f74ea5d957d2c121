"""How many web processes serve requests: gunicorn's worker count, in one place.

Read by config/gunicorn.conf.py (the `workers` setting) and by the system check that refuses a
per-process cache when there is more than one (config/checks.py). GUNICORN_WORKERS wins;
WEB_CONCURRENCY (gunicorn's own variable, which many hosts set) comes next; 3 otherwise. No
Django here: gunicorn's master reads it before any app is loaded.
"""
from __future__ import annotations

import os

DEFAULT_WEB_WORKERS = 3


def web_workers(environ=os.environ) -> int:
    for variable in ("GUNICORN_WORKERS", "WEB_CONCURRENCY"):
        value = (environ.get(variable) or "").strip()
        if value:
            try:
                workers = int(value)
            except ValueError:
                raise ValueError(f"{variable} must be a whole number of web processes, got {value!r}") from None
            if workers < 1:
                raise ValueError(f"{variable} must be at least 1, got {workers}")
            return workers
    return DEFAULT_WEB_WORKERS
