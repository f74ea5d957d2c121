"""`list_operations`: every background operation the registry serves, with its parameters as
declared (annotation/services/operations/registry.py). `--markdown` writes the reference that
docs/background-jobs.md holds (tests/test_docs_background_jobs.py keeps the two the same)."""
from __future__ import annotations

from django.core.management.base import BaseCommand

from annotation.analysis.params import Param
from annotation.services.operations.operation import Operation
from annotation.services.operations.registry import OPERATIONS

HEADER = """# Background jobs: every operation and its parameters

Generated from the operations registry (`annotation/services/operations/registry.py`) by
`python manage.py list_operations --markdown > docs/background-jobs.md`; a test keeps this page equal
to the registry. Each operation runs as a job (`GET /api/v1/jobs/{id}/` shows its status, progress
and result); the API's start endpoints, the commands' options and the OpenAPI descriptions take
these parameters from the same declarations. docs/architecture.md says how an operation is
declared.
"""


def _target(operation: Operation) -> str:
    if operation.target is None:
        return "none"
    kinds = operation.target if isinstance(operation.target, tuple) else (operation.target,)
    return " or ".join(k.__name__ for k in kinds)


def _type(spec: Param) -> str:
    name = spec.type.__name__
    if spec.type is list:
        item = spec.items.__name__ if isinstance(spec.items, type) else str(spec.items)
        name = f"list of {item}"
    return name + (" or null" if spec.nullable else "")


def _default(spec: Param) -> str:
    if spec.required:
        return "required"
    if callable(spec.default):
        return "depends on the target"
    return "null" if spec.default is None else f"`{spec.default!r}`"


def _allowed(spec: Param) -> str:
    parts = []
    if spec.choices is not None:
        parts.append("one of " + ", ".join(f"`{c}`" for c in spec.choices))
    if spec.bounds_text():
        parts.append(("each " if spec.type is list else "") + spec.bounds_text())
    if spec.type is list:
        parts.append(f"{spec.min_items} or more items" if spec.max_items is None
                     else f"{spec.min_items} to {spec.max_items} items")
    if spec.max_length is not None:
        parts.append(f"at most {spec.max_length} characters")
    return "; ".join(parts)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def operations_markdown() -> str:
    lines = [HEADER, "| operation | what it does | works on | job kind |", "|---|---|---|---|"]
    for name in sorted(OPERATIONS):
        op = OPERATIONS[name]
        kind = "by its parameters" if callable(op.job_kind) else f"`{op.kind_of({})}`"
        lines.append(f"| [`{name}`](#{name}) | {_cell(op.title)} | {_target(op)} | {kind} |")
    for name in sorted(OPERATIONS):
        op = OPERATIONS[name]
        lines += ["", f"## {name}", "", f"{op.title}. Works on: {_target(op)}."]
        if not op.params:
            lines += ["", "No parameters."]
            continue
        lines += ["", "| parameter | type | default | allowed | description |", "|---|---|---|---|---|"]
        for param, spec in op.params.items():
            lines.append(f"| `{param}` | {_type(spec)} | {_cell(_default(spec))} | {_cell(_allowed(spec))} | "
                         f"{_cell(spec.description)} |")
    return "\n".join(lines) + "\n"


class Command(BaseCommand):
    help = "List every background operation and its declared parameters (--markdown: docs/background-jobs.md)."

    def add_arguments(self, parser):
        parser.add_argument("--markdown", action="store_true", help="Write the reference page as Markdown.")

    def handle(self, *args, **opts):
        if opts["markdown"]:
            self.stdout.write(operations_markdown(), ending="")
            return
        for name in sorted(OPERATIONS):
            op = OPERATIONS[name]
            self.stdout.write(f"{name}  ({op.title}; works on {_target(op)})")
            for param, spec in op.params.items():
                allowed = _allowed(spec)
                self.stdout.write(f"    {param}: {_type(spec)}, default {_default(spec)}"
                                  f"{'; ' + allowed if allowed else ''}. {spec.description}")
