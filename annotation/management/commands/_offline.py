"""Commands that score or measure files and print numbers, and how they start fast."""
from __future__ import annotations

from django.core.management.base import BaseCommand

# Named here too (tests import it from here); manage.py imports it from _without_setup, which
# imports no Django.
from ._without_setup import WITHOUT_SETUP, run_without_setup  # noqa: F401


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
