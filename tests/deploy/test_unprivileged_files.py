"""Issue 23, findings 1 and 2: what the image's user (uid 10001) must be able to read or write,
checked here on the code that decides it (the same checks run inside the built image in CI,
scripts/image_checks.sh, as that user)."""
from __future__ import annotations

import os
import runpy
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from annotation.analysis.proxies import wordnet
from tests.deploy.files import REPO


def _other_can_read(path: Path) -> bool:
    return bool(path.stat().st_mode & stat.S_IROTH)


def test_every_file_of_the_wordnet_copy_is_readable_by_other_users(tmp_path):
    # The image lays the copy out as root at build time and its user reads it: a file only its
    # owner can read (mkstemp's 0600) breaks every WordNet proxy in the containers.
    source = tmp_path / "source"
    source.mkdir()
    for name in wordnet.WORDNET_FILES:
        (source / name).write_text("x\n")
        (source / name).chmod(0o644)
    target = wordnet.ensure_wordnet_cache(tmp_path / "root", source)
    files = sorted(target.iterdir())
    assert {f.name for f in files} == set(wordnet.WORDNET_FILES) | {"lexnames"}
    unreadable = [f.name for f in files if not _other_can_read(f)]
    assert not unreadable, unreadable


def test_a_rewritten_file_follows_the_umask_like_any_new_file(tmp_path):
    dest = tmp_path / "lexnames"
    old = os.umask(0o027)
    try:
        wordnet._atomic_write_bytes(dest, b"data")
    finally:
        os.umask(old)
    assert dest.read_bytes() == b"data"
    assert stat.S_IMODE(dest.stat().st_mode) == 0o640


def _wait_for(condition, timeout: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} not within {timeout:.0f}s; gunicorn said:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)


def test_gunicorn_keeps_its_control_socket_in_the_var_folder_not_in_home(tmp_path):
    # In the image HOME is /app, root's and read-only to the user: gunicorn's default
    # ($HOME/.gunicorn) logged "Control server error: Permission denied" at every start.
    var, home = tmp_path / "var", tmp_path / "home"
    var.mkdir()
    home.mkdir()
    log = tmp_path / "gunicorn.log"
    env = {k: v for k, v in os.environ.items() if k not in {"XDG_RUNTIME_DIR", "GUNICORN_CONTROL_SOCKET"}} | {
        "REJUDGE_VAR_DIR": str(var), "HOME": str(home), "GUNICORN_BIND": "127.0.0.1:0", "GUNICORN_WORKERS": "1",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "prometheus"), "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "SECRET_KEY": "gunicorn-test-key", "REJUDGE_HTTPS": "0",
    }
    gunicorn = Path(sys.executable).with_name("gunicorn")
    with log.open("w") as out:
        server = subprocess.Popen([str(gunicorn), "config.wsgi:application", "-c", "config/gunicorn.conf.py"],
                                  cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_for(lambda: "Booting worker" in log.read_text() or server.poll() is not None, 120,
                  "a gunicorn worker booting", log)
        assert server.poll() is None, log.read_text()
        _wait_for(lambda: (var / "gunicorn.ctl").exists(), 60, "the control socket in REJUDGE_VAR_DIR", log)
        assert stat.S_ISSOCK((var / "gunicorn.ctl").stat().st_mode)
        assert not (home / ".gunicorn").exists()
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    assert "Control server error" not in log.read_text()


def _gunicorn_settings(monkeypatch, tmp_path, **env) -> dict:
    monkeypatch.delenv("GUNICORN_CONTROL_SOCKET", raising=False)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path / "prometheus"))  # the file sets it otherwise
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(REPO / "config" / "gunicorn.conf.py"))


def test_the_control_socket_can_be_moved_or_turned_off(monkeypatch, tmp_path):
    moved = _gunicorn_settings(monkeypatch, tmp_path, GUNICORN_CONTROL_SOCKET=str(tmp_path / "ctl.sock"))
    assert moved["control_socket"] == str(tmp_path / "ctl.sock") and not moved["control_socket_disable"]
    off = _gunicorn_settings(monkeypatch, tmp_path, GUNICORN_CONTROL_SOCKET="off")
    assert off["control_socket_disable"] is True


def test_the_debian_files_can_be_read_in_place_inside_the_nltk_folder(tmp_path):
    # The image moves Debian's files into the NLTK data folder (one copy, not two): the cache is
    # then its own source, and only lexnames is added, readable by everyone.
    target = tmp_path / "root" / "corpora" / "wordnet"
    target.mkdir(parents=True)
    for name in wordnet.WORDNET_FILES:
        (target / name).write_text(name + "\n")
        (target / name).chmod(0o644)
    before = {name: (target / name).stat().st_mtime_ns for name in wordnet.WORDNET_FILES}
    assert wordnet.ensure_wordnet_cache(tmp_path / "root", target) == target
    assert {name: (target / name).stat().st_mtime_ns for name in wordnet.WORDNET_FILES} == before
    assert (target / "lexnames").read_text() == wordnet.lexnames_text()
    assert _other_can_read(target / "lexnames")
