"""Celery jobs, one module per area; each is a thin wrapper around services and analysis code.

Tasks are registered under the names in annotation/services/jobs/task_names.py; services start
them by name (annotation/services/jobs/dispatch.py) and never import this package."""
from .imports import import_dataset, import_run, ping  # noqa: F401
from .pools import build_pool, pool_add_run_job, release_expired_leases  # noqa: F401
from . import jobs, reports, proxies, moments, judgment_sets, judging, machine_judges, releases  # noqa: F401  (areas register their own tasks)
