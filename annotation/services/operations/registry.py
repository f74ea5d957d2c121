"""Every background operation, by name: the one list the runner, the meta-test
(tests/annotation/services/operations/test_every_operation.py) and the docs read.

A new operation is declared in its area package: an `Operation` in the area's `operations.py`,
listed in that module's OPERATIONS. The registry finds every area package's `operations.py` by
itself, so declaring the operation is the only change (plus its view when it has its own URL).
"""
from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from types import ModuleType

import annotation.services as services
from annotation.services.operations.operation import Operation


def _area_modules() -> tuple[ModuleType, ...]:
    """Every area package's operations module (annotation/services/<area>/operations.py), in name
    order. The `operations` package itself holds the machinery, not operations."""
    modules = []
    for info in sorted(pkgutil.iter_modules(services.__path__), key=lambda i: i.name):
        if not info.ispkg or info.name == "operations":
            continue
        name = f"{services.__name__}.{info.name}.operations"
        if importlib.util.find_spec(name) is not None:
            modules.append(importlib.import_module(name))
    return tuple(modules)


AREAS = _area_modules()



def _by_name(areas) -> dict[str, Operation]:
    found: dict[str, Operation] = {}
    for area in areas:
        for op in area.OPERATIONS:
            if op.name in found:
                raise ImportError(f"operation '{op.name}' is declared twice ({area.__name__} and another area)")
            found[op.name] = op
    return found


OPERATIONS: dict[str, Operation] = _by_name(AREAS)

#: Celery task names that jobs were queued under before the registry -> the operation that runs
#: them now (each still registered, as an alias of the one runner).
LEGACY_TASKS: dict[str, str] = {op.legacy_task: op.name for op in OPERATIONS.values() if op.legacy_task}


def operation(name: str) -> Operation:
    if name not in OPERATIONS:
        raise LookupError(f"no operation named '{name}'; registered: {', '.join(OPERATIONS)}")
    return OPERATIONS[name]
