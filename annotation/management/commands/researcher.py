"""manage.py researcher add NAME [--email E] [--password-stdin] | remove NAME | list"""
from __future__ import annotations

import sys

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation import roles
from annotation.services.accounts.users import api_token_for, researcher_create, researcher_remove, researchers


class Command(BaseCommand):
    help = ("Researcher accounts (read-only API and pages). `add NAME` creates one and prints its API token; "
            "`remove NAME` takes the role away (an account that is only a researcher is deleted); `list` names them.")

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True, metavar="{add,remove,list}")
        add = actions.add_parser("add", help="create a researcher and print their API token")
        add.add_argument("name")
        add.add_argument("--email", default="")
        # Read from stdin, never from the command line, where it would stay in the shell's history.
        add.add_argument("--password-stdin", action="store_true",
                         help="read a password (for the web pages) from the first line of stdin; without one the "
                              "account uses its API token only")
        remove = actions.add_parser("remove", help="remove a researcher")
        remove.add_argument("name")
        actions.add_parser("list", help="list researchers")

    def handle(self, *args, action: str, **opts):
        getattr(self, f"_{action}")(**opts)

    def _add(self, *, name: str, email: str, password_stdin: bool, **_):
        password = sys.stdin.readline().rstrip("\r\n") if password_stdin else None
        if password_stdin and len(password or "") < 8:
            raise CommandError("--password-stdin: the password needs at least 8 characters")
        try:
            user = researcher_create(username=name, email=email, password=password)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        except ValidationError as exc:
            problems = "; ".join(f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items())
            raise CommandError(f"researcher '{name}': {problems}") from exc
        self.stdout.write(self.style.SUCCESS(f"researcher '{user.username}' created"))
        self.stdout.write(f"API token {api_token_for(user=user)}")

    def _remove(self, *, name: str, **_):
        user = get_user_model().objects.filter(username=name, groups__name=roles.RESEARCHER).first()
        if user is None:
            raise CommandError(f"no researcher named '{name}'")
        outcome = researcher_remove(user=user)
        self.stdout.write(self.style.SUCCESS(f"researcher '{name}': {outcome}"))

    def _list(self, **_):
        found = list(researchers())
        for user in found:
            seen = f"last sign-in {user.last_login:%Y-%m-%d %H:%M}" if user.last_login else "never signed in"
            state = "active" if user.is_active else "inactive"
            self.stdout.write(f"{user.username}\t{user.email or '-'}\t{state}\t{seen}")
        if not found:
            self.stdout.write("no researcher")
