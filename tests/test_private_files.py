"""The files the embedded default writes under var/ are readable by their owner only (issue 22,
finding 13: var/rejudge.sqlite3 was 0644 while it holds API tokens and password hashes).

Settings are read at import, so Django runs in a subprocess, under the umask a shell usually has
(022, which gave 0644), on a var/ folder of its own."""
from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

CONNECT = ("import django; django.setup(); from django.db import connection; "
           "connection.ensure_connection(); connection.cursor().execute('CREATE TABLE t (x integer)')")


def run_django(var: Path) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(var.parent), "LANG": "C.UTF-8",
           "REJUDGE_VAR_DIR": str(var), "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "1"}

    def with_umask_022():
        os.umask(0o022)

    done = subprocess.run([sys.executable, "-c", CONNECT], cwd=REPO, env=env, capture_output=True, text=True,
                          preexec_fn=with_umask_022, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_embedded_database_and_var_folder_are_private(tmp_path):
    var = tmp_path / "var"
    run_django(var)
    assert mode(var) == 0o700
    assert mode(var / "rejudge.sqlite3") == 0o600


def test_an_existing_world_readable_database_is_made_private(tmp_path):
    """A demo database made before this fix (0644) is tightened the next time Django starts."""
    var = tmp_path / "var"
    var.mkdir()
    (var / "rejudge.sqlite3").touch(mode=0o644)
    os.chmod(var / "rejudge.sqlite3", 0o644)
    run_django(var)
    assert mode(var / "rejudge.sqlite3") == 0o600


def test_the_demo_script_writes_with_a_private_umask():
    """scripts/demo.sh sets umask 077 before its first command that writes (setup, key, migrate):
    media, uploads and exports it makes are then private too."""
    lines = [line.strip() for line in (REPO / "scripts" / "demo.sh").read_text().splitlines()]
    umask = next(i for i, line in enumerate(lines) if re.fullmatch(r"umask 0?077", line))
    first_write = next(i for i, line in enumerate(lines) if line.startswith(("bash scripts/", ".venv/bin/python")))
    assert umask < first_write
