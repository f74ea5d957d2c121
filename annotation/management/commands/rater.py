"""manage.py rater add NAME [--email E] [--password-stdin] | import FILE [--links-out F] | invite NAME | list"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation import roles
from annotation.formats.csv_safe import safe_csv_writer
from annotation.formats.errors import ImportRejected
from annotation.services.accounts.invitations import INVITATION_LIFETIME, invitation_path
from annotation.services.accounts.raters import rater_create_or_invite, rater_password_reset, raters_import


class Command(BaseCommand):
    help = ("Rater accounts. `add NAME` creates one (with --password-stdin, or else prints a one-use link with which "
            "the rater sets their own password); `import FILE` creates them from a CSV (username[,email][,password]) "
            "and writes each password-less row's link; `invite NAME` makes a new link for an existing rater (a "
            "password reset: their earlier unused links stop working); `list` names them. Links are on "
            "--base-url, by default REJUDGE_PUBLIC_URL, and valid for "
            f"{INVITATION_LIFETIME.days} days. They are printed once: only their hash is stored.")

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True, metavar="{add,import,invite,list}")
        add = actions.add_parser("add", help="create a rater; without a password, print their invitation link")
        add.add_argument("name")
        add.add_argument("--email", default="")
        # Read from stdin, never from the command line, where it would stay in the shell's history.
        add.add_argument("--password-stdin", action="store_true",
                         help="read the password from the first line of stdin (else an invitation link is printed)")
        imported = actions.add_parser("import", help="create raters from a CSV file; all or none")
        imported.add_argument("file", type=Path)
        imported.add_argument("--links-out", type=Path, default=None,
                              help="write the links (CSV username,link) to this new file, readable by you only, "
                                   "instead of stdout")
        invite = actions.add_parser("invite", help="a new invitation link for a rater (a password reset)")
        invite.add_argument("name")
        for sub in (add, imported, invite):
            sub.add_argument("--base-url", default=None,
                             help="the site's address the links start with (default: REJUDGE_PUBLIC_URL)")
        actions.add_parser("list", help="list raters")

    def handle(self, *args, action: str, **opts):
        getattr(self, f"_{action}")(**opts)

    def _link(self, base_url: str | None, token: str) -> str:
        base = (base_url or settings.REJUDGE_PUBLIC_URL or "").rstrip("/")
        return f"{base}{invitation_path(token)}"

    @staticmethod
    def _need_base(base_url: str | None) -> None:
        # Checked before anything is made: a link without a host is no use to a rater.
        if not (base_url or settings.REJUDGE_PUBLIC_URL):
            raise CommandError("links need the site's address: give --base-url https://… or set REJUDGE_PUBLIC_URL")

    def _add(self, *, name: str, email: str, password_stdin: bool, base_url: str | None, **_):
        password = sys.stdin.readline().rstrip("\r\n") if password_stdin else None
        if password_stdin and len(password or "") < 8:
            raise CommandError("--password-stdin: the password needs at least 8 characters")
        if not password:
            self._need_base(base_url)
        if get_user_model().objects.filter(username=name).exists():
            raise CommandError(f"a user named '{name}' already exists")
        try:
            new = rater_create_or_invite(username=name, password=password, email=email)
        except ValidationError as exc:
            problems = "; ".join(f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items())
            raise CommandError(f"rater '{name}': {problems}") from exc
        self.stdout.write(self.style.SUCCESS(f"rater '{new.user.username}' created"))
        if new.invitation_token:
            self.stdout.write(f"invitation link (works once, for {INVITATION_LIFETIME.days} days; shown only now): "
                              f"{self._link(base_url, new.invitation_token)}")

    def _import(self, *, file: Path, links_out: Path | None, base_url: str | None, **_):
        if links_out is not None and links_out.exists():
            raise CommandError(f"{links_out} exists; the links go to a new file")
        try:
            content = file.read_bytes()
        except OSError as exc:
            raise CommandError(f"{file}: {exc.strerror}") from exc
        try:
            with transaction.atomic():
                created = raters_import(content=content, source_name=file.name)
                # Undone when rows need links and the links would have no host.
                if any(new.invitation_token for new in created):
                    self._need_base(base_url)
        except ImportRejected as exc:
            raise CommandError("\n".join(["nothing was created:", *(str(issue) for issue in exc.issues)])) from exc
        invited = [(new.user.username, self._link(base_url, new.invitation_token)) for new in created if new.invitation_token]
        self.stderr.write(f"{len(created)} rater(s) created, {len(invited)} with an invitation link")
        if not invited:
            return
        if links_out is None:
            self._write_links(self.stdout, invited)
            return
        # Created readable by the owner only: each line opens an account.
        descriptor = os.open(links_out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", newline="") as out:
            self._write_links(out, invited)
        self.stderr.write(f"links written to {links_out} (works once each, for {INVITATION_LIFETIME.days} days)")

    @staticmethod
    def _write_links(out, invited) -> None:
        # A username a spreadsheet would run as a formula ("=...") is written as text.
        writer = safe_csv_writer(out, lineterminator="\n")
        writer.writerow(["username", "link"])
        writer.writerows(invited)

    def _invite(self, *, name: str, base_url: str | None, **_):
        self._need_base(base_url)
        user = get_user_model().objects.filter(username=name, groups__name=roles.RATER).first()
        if user is None:
            raise CommandError(f"no rater named '{name}'")
        try:
            token = rater_password_reset(user=user)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"invitation link for '{name}' (works once, for {INVITATION_LIFETIME.days} days; earlier "
                          f"unused links no longer work): {self._link(base_url, token)}")

    def _list(self, **_):
        found = get_user_model().objects.filter(groups__name=roles.RATER).order_by("username")
        for user in found:
            seen = f"last sign-in {user.last_login:%Y-%m-%d %H:%M}" if user.last_login else "never signed in"
            password = "password set" if user.has_usable_password() else "no password yet"
            self.stdout.write(f"{user.username}\t{user.email or '-'}\t{password}\t{seen}")
        if not found:
            self.stdout.write("no rater")
