#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # A command that reads files only (evaluate --judgments FILE) runs without Django.
    from annotation.management.commands._without_setup import run_without_setup

    if not run_without_setup(sys.argv):
        from django.core.management import execute_from_command_line

        execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
