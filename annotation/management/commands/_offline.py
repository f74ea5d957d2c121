from django.core.management.base import BaseCommand


class OfflineCommand(BaseCommand):
    """A command that scores or measures files (or stored sets) and prints numbers.

    Django's system checks resolve every URL pattern, which imports every view and with them
    scipy.stats, crowd-kit and pandas: about 3 s of a 4 s `evaluate` run on a TRECVID file, for a
    command that serves no request. The checks still run for `check`, `migrate` and the servers."""

    requires_system_checks = []
