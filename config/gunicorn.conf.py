"""gunicorn settings for the container (`gunicorn config.wsgi:application -c config/gunicorn.conf.py`).

Request metrics (django-prometheus) live in each worker process; a scrape reaches one of them.
prometheus_client's multiprocess mode makes every worker write its counters and histograms to
files in PROMETHEUS_MULTIPROC_DIR, and /metrics (config/metrics.py) sums them over all workers.
The folder must be emptied when the server starts (old workers' files would be counted again)
and a dead worker's live gauges dropped. It is set here, in the master, before any worker
imports prometheus_client.
"""
from __future__ import annotations

import os
import shutil

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", "3"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "120"))

os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", "/tmp/rejudge-prometheus")


def on_starting(server) -> None:
    folder = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder, exist_ok=True)


def child_exit(server, worker) -> None:
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)
