"""Celery jobs, one module per area; each is a thin wrapper around services and analysis code.

Tasks are registered under the names in annotation/services/jobs/task_names.py; services start
them by name (annotation/services/jobs/dispatch.py) and never import this package. Operations of
the registry (annotation/services/operations/) all run under one task, operations.run_operation."""
from .pools import release_expired_leases  # noqa: F401
from . import operations, jobs, proxies  # noqa: F401  (areas register their own tasks)
