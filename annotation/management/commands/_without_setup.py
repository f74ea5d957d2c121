"""Commands that run before django.setup(), and without importing Django at all, when their
arguments name files only (manage.py asks here first).

django.setup() imports the settings, Celery, every app's models and admin: about 0.8 s of a 1 s
`evaluate` on small files, for a command that reads two files and prints numbers (issue 26);
importing django.core.management is a tenth of a second more, a quarter of a file-only `evaluate`
on TREC-sized files (issue 40: at most pytrec_eval's time, bench/bench_evaluate_cli.py).
"""
from __future__ import annotations

from importlib import import_module

#: Commands that may run without Django, by name: the module whose run_without_setup(args) runs
#: the command and returns True, or returns False having printed nothing.
WITHOUT_SETUP = {"evaluate": "annotation.management.commands._evaluate_files"}


def run_without_setup(argv: list[str]) -> bool:
    """Runs `manage.py NAME ...` without Django when the command reads files only and all goes
    well; False otherwise (the caller then runs Django's own entry point, which runs the command
    again and prints any problem as Django prints it)."""
    if len(argv) < 2 or argv[1] not in WITHOUT_SETUP:
        return False
    return import_module(WITHOUT_SETUP[argv[1]]).run_without_setup(argv[2:])
