"""Celery jobs, one module per area; each is a thin wrapper around services and analysis code."""
from .imports import import_dataset, import_run, ping  # noqa: F401
from .pools import build_pool, pool_add_run_job, release_expired_leases  # noqa: F401
from . import reports, proxies, moments  # noqa: F401  (areas register their own tasks)
