"""docs/background-jobs.md is the operations registry as `list_operations --markdown` writes it: a
new operation, parameter, bound or default shows up there, or this test says how to regenerate it."""
from __future__ import annotations

from io import StringIO
from pathlib import Path

from django.core.management import call_command

from annotation.services.operations.registry import OPERATIONS

PAGE = Path(__file__).resolve().parents[1] / "docs" / "background-jobs.md"


def test_the_page_is_the_registry_as_generated():
    out = StringIO()
    call_command("list_operations", "--markdown", stdout=out)
    assert PAGE.read_text() == out.getvalue(), (
        "docs/background-jobs.md is out of date: python manage.py list_operations --markdown > docs/background-jobs.md")


def test_every_operation_and_parameter_is_on_the_page():
    text = PAGE.read_text()
    for name, operation in OPERATIONS.items():
        assert f"\n## {name}\n" in text
        section = text.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
        for param, spec in operation.params.items():
            assert f"| `{param}` |" in section and " ".join(spec.description.split()) in section
