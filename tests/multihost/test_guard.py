"""The multi-host test's guard (guard.py) really keeps a process out of another host's folders:
without this, a clean guard log would prove nothing. No services needed."""
from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO
from tests.multihost.guard import forbidden_roots, offending_path


def _guarded(argv: list[str], *, forbidden, log) -> subprocess.CompletedProcess:
    env = os.environ | {"REJUDGE_TEST_FORBIDDEN_ROOTS": str(forbidden), "REJUDGE_TEST_GUARD_LOG": str(log)}
    return subprocess.run([sys.executable, "-m", "tests.multihost.guard", *argv], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)


def test_a_guarded_process_cannot_open_the_other_hosts_files_and_the_attempt_is_logged(tmp_path):
    other, mine = tmp_path / "other-host", tmp_path / "this-host"
    other.mkdir()
    mine.mkdir()
    (other / "upload.json").write_text('{"a": 1}')
    (mine / "upload.json").write_text('{"a": 1}')
    log = tmp_path / "guard.log"

    refused = _guarded(["json.tool", str(other / "upload.json")], forbidden=other, log=log)
    assert refused.returncode != 0 and "multi-host guard: open" in refused.stderr
    assert log.read_text().split()[2:] == ["open", str(other / "upload.json")]

    allowed = _guarded(["json.tool", str(mine / "upload.json")], forbidden=other, log=log)
    assert allowed.returncode == 0 and '"a": 1' in allowed.stdout
    assert len(log.read_text().splitlines()) == 1  # nothing more was refused


def test_listing_renaming_and_relative_paths_under_a_forbidden_root_are_caught(tmp_path, monkeypatch):
    roots = forbidden_roots(f"{tmp_path / 'other'}{os.pathsep}")
    inside, outside = str(tmp_path / "other" / "exports" / "x.csv"), str(tmp_path / "otherwise" / "x.csv")
    assert offending_path("os.scandir", (tmp_path / "other",), roots) == str(tmp_path / "other")
    assert offending_path("os.rename", (outside, inside, None, None), roots) == inside
    assert offending_path("open", (outside, "r", 0), roots) is None  # a sibling whose name starts the same
    assert offending_path("open", (3, "r", 0), roots) is None  # a descriptor: checked when it was opened
    assert offending_path("socket.connect", (inside,), roots) is None  # not a file event
    monkeypatch.chdir(tmp_path)
    assert offending_path("open", ("other/exports/x.csv", "r", 0), roots) == inside
