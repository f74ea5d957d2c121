"""Every background operation, by name: the one list the runner, the meta-test
(tests/annotation/services/operations/test_every_operation.py) and the docs read.

A new operation is declared in its area package (an `Operation` in the area's operations.py,
listed in that module's OPERATIONS) and the module is added to AREAS below; nothing else.
"""
from __future__ import annotations

from annotation.services.jobs import operations as jobs_operations
from annotation.services.judging import operations as judging_operations
from annotation.services.operations.operation import Operation
from annotation.services.pools import operations as pools_operations
from annotation.services.releases import operations as releases_operations

AREAS = (jobs_operations, pools_operations, releases_operations, judging_operations)

OPERATIONS: dict[str, Operation] = {operation.name: operation for area in AREAS for operation in area.OPERATIONS}

#: Celery task names that jobs were queued under before the registry -> the operation that runs
#: them now (each still registered, as an alias of the one runner).
LEGACY_TASKS: dict[str, str] = {op.legacy_task: op.name for op in OPERATIONS.values() if op.legacy_task}


def operation(name: str) -> Operation:
    if name not in OPERATIONS:
        raise LookupError(f"no operation named '{name}'; registered: {', '.join(OPERATIONS)}")
    return OPERATIONS[name]
