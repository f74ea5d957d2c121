"""Commands that score or measure files and print numbers, and how they start fast."""
from __future__ import annotations

import sys
from importlib import import_module

from django.core.management.base import BaseCommand, CommandError, handle_default_options


class OfflineCommand(BaseCommand):
    """A command that scores or measures files (or stored sets) and prints numbers.

    Django's system checks resolve every URL pattern, which imports every view and with them
    scipy.stats, crowd-kit and pandas: about 3 s of a 4 s `evaluate` run on a TRECVID file, for a
    command that serves no request. The checks still run for `check`, `migrate` and the servers."""

    requires_system_checks = []

    def files_only(self, options) -> bool:
        """True when these parsed options need neither the database nor the app registry, so
        run_without_setup may run the command before django.setup(). Such a command imports
        nothing of annotation.models at module level."""
        return False


#: Commands that may run without django.setup(), by name: each one's files_only() decides per call.
WITHOUT_SETUP = {"evaluate": "annotation.management.commands.evaluate"}


def run_without_setup(argv: list[str]) -> bool:
    """Runs `manage.py NAME ...` without django.setup() when the command reads files only; False
    when it does not (the caller then runs Django's own entry point).

    django.setup() imports the settings, Celery, every app's models and admin: about 0.8 s of a
    1 s `evaluate` on small files, for a command that reads two files and prints numbers (goal of
    issue 26: within 2x of trec_eval and sample_eval.pl, bench/bench_evaluate_cli.py). What follows
    is Django's BaseCommand.run_from_argv less its closing of database connections (none opened,
    and closing them would load the settings)."""
    if len(argv) < 2 or argv[1] not in WITHOUT_SETUP:
        return False
    command = import_module(WITHOUT_SETUP[argv[1]]).Command()
    command._called_from_command_line = True  # argparse errors print usage and exit, as from Django
    options = command.create_parser(argv[0], argv[1]).parse_args(argv[2:])
    cmd_options = dict(vars(options))
    args = cmd_options.pop("args", ())
    if not command.files_only(cmd_options):
        return False
    handle_default_options(options)
    try:
        command.execute(*args, **cmd_options)
    except CommandError as exc:
        if options.traceback:
            raise
        command.stderr.write(f"{exc.__class__.__name__}: {exc}")
        sys.exit(exc.returncode)
    return True
