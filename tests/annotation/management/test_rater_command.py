"""manage.py rater add | import | invite | list (issue 39): raters made on the command line can log
in, with their own password or an invitation link printed once; never a password nobody is shown."""
from __future__ import annotations

import csv
import io
import os
import stat

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from annotation.models import RaterInvitation
from tests.factories import make_rater

pytestmark = pytest.mark.django_db
BASE = "https://rejudge.example.org"


def run(*args, stdin: str | None = None, monkeypatch=None) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    call_command("rater", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def use_link(link: str, password: str) -> int:
    path = link.removeprefix(BASE)
    return Client().post(path, {"password": password, "password_again": password}).status_code


def can_log_in(username: str, password: str) -> bool:
    return Client().post("/login/", {"username": username, "password": password}).status_code == 302


def test_add_without_a_password_prints_a_link_that_sets_one():
    out, _ = run("add", "hana", "--base-url", BASE)
    link = out.split(": ")[-1].strip()
    assert "created" in out and link.startswith(f"{BASE}/invite/")
    assert not get_user_model().objects.get(username="hana").has_usable_password()
    assert use_link(link, "hana-pw-1234") == 302 and can_log_in("hana", "hana-pw-1234")


def test_add_with_a_password_from_stdin(monkeypatch):
    out, _ = run("add", "ivo", "--password-stdin", stdin="ivo-pw-12345\n", monkeypatch=monkeypatch)
    assert "invitation" not in out and can_log_in("ivo", "ivo-pw-12345") and not RaterInvitation.objects.exists()


def test_add_refuses_without_an_address_for_the_link_and_creates_nothing(settings):
    settings.REJUDGE_PUBLIC_URL = ""
    with pytest.raises(CommandError, match="--base-url"):
        run("add", "jon")
    assert not get_user_model().objects.filter(username="jon").exists()


def test_the_public_url_setting_is_the_default_address(settings):
    settings.REJUDGE_PUBLIC_URL = BASE
    out, _ = run("add", "kim")
    assert f"{BASE}/invite/" in out


def test_import_writes_the_links_to_a_private_new_file(tmp_path):
    source = tmp_path / "raters.csv"
    source.write_text("username,email,password\nlea,,\nmax,m@example.org,\nned,,ned-pw-12345\n")
    links = tmp_path / "links.csv"
    out, err = run("import", str(source), "--links-out", str(links), "--base-url", BASE)
    assert out == "" and "3 rater(s) created, 2 with an invitation link" in err
    assert stat.S_IMODE(os.stat(links).st_mode) == 0o600
    rows = list(csv.reader(links.open()))
    assert rows[0] == ["username", "link"] and [r[0] for r in rows[1:]] == ["lea", "max"]
    assert use_link(rows[1][1], "lea-pw-12345") == 302 and can_log_in("lea", "lea-pw-12345")
    assert can_log_in("ned", "ned-pw-12345")
    with pytest.raises(CommandError, match="exists"):
        run("import", str(source), "--links-out", str(links), "--base-url", BASE)


def test_import_prints_the_links_without_a_file(tmp_path):
    source = tmp_path / "raters.csv"
    source.write_text("username\nola\n")
    out, _ = run("import", str(source), "--base-url", BASE)
    assert out.splitlines()[0] == "username,link" and out.splitlines()[1].startswith(f"ola,{BASE}/invite/")


def test_import_needing_links_without_an_address_creates_nothing(tmp_path, settings):
    settings.REJUDGE_PUBLIC_URL = ""
    source = tmp_path / "raters.csv"
    source.write_text("username,password\npia,pia-pw-12345\nquin,\n")
    with pytest.raises(CommandError, match="--base-url"):
        run("import", str(source))
    assert not get_user_model().objects.filter(username__in=["pia", "quin"]).exists()
    only_passwords = tmp_path / "with-passwords.csv"
    only_passwords.write_text("username,password\npia,pia-pw-12345\n")
    run("import", str(only_passwords))  # no link needed, no address needed
    assert can_log_in("pia", "pia-pw-12345")


def test_import_refusals_name_the_line(tmp_path):
    source = tmp_path / "raters.csv"
    source.write_text("username\nrue\nrue\n")
    with pytest.raises(CommandError, match="nothing was created") as refused:
        run("import", str(source), "--base-url", BASE)
    assert "line 3" in str(refused.value) and not get_user_model().objects.filter(username="rue").exists()


def test_invite_resets_a_password_with_a_new_link():
    make_rater(username="sam")
    first, _ = run("invite", "sam", "--base-url", BASE)
    second, _ = run("invite", "sam", "--base-url", BASE)
    old, new = first.split(": ")[-1].strip(), second.split(": ")[-1].strip()
    assert use_link(old, "sam-pw-12345") == 410  # replaced by the newer link
    assert use_link(new, "sam-pw-12345") == 302 and can_log_in("sam", "sam-pw-12345")
    with pytest.raises(CommandError, match="no rater named"):
        run("invite", "nobody", "--base-url", BASE)


def test_list_says_who_has_no_password_yet():
    make_rater(username="tia")
    run("add", "uma", "--base-url", BASE)
    out, _ = run("list")
    assert "tia\t-\tpassword set" in out and "uma\t-\tno password yet" in out
