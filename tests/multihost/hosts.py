"""Two "hosts" on one machine for the multi-host test: a web process (gunicorn) and a Celery worker,
each a subprocess with local folders of its own for every *_ROOT setting, its own var and temp
folders, and an audit-hook guard (guard.py) that refuses any access to the other's folders.
They share only what separate hosts share: PostgreSQL (the test database), Redis (the test broker,
a queue of the test's own) and the S3-compatible server (a bucket of the test's own).
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests

from tests.conftest import REPO

# Every setting naming a folder a process keeps files in (config/settings.py).
ROOT_SETTINGS = ("UPLOAD_ROOT", "EXPORT_ROOT", "MEDIA_ROOT", "JUDGMENTS_ROOT", "RUNS_ROOT", "STATIC_ROOT",
                 "REJUDGE_STORAGE_CACHE_DIR", "REJUDGE_VAR_DIR")
# Settings of the test session's own process that must not leak into a host.
DROPPED = ("SECRET_KEY_FILE", "REJUDGE_S3_PREFIX", "DJANGO_SETTINGS_MODULE")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Host:
    name: str
    root: Path
    env: dict = field(default_factory=dict)
    process: subprocess.Popen | None = None

    @property
    def log_path(self) -> Path:
        return self.root / f"{self.name}.log"

    @property
    def guard_log(self) -> Path:
        return self.root / "guard.log"

    def folders(self) -> dict[str, Path]:
        """Where this host's settings point: under root/disk, which only this host may touch."""
        disk = self.root / "disk"
        return {setting: disk / setting.lower() for setting in ROOT_SETTINGS} | {"TMPDIR": disk / "tmp"}

    def configure(self, *, shared: dict, other: Host) -> None:
        folders = self.folders()
        folders["TMPDIR"].mkdir(parents=True)
        folders["REJUDGE_VAR_DIR"].mkdir(parents=True)
        self.guard_log.touch()
        base = {k: v for k, v in os.environ.items() if k not in DROPPED and k not in ROOT_SETTINGS}
        self.env = base | shared | {k: str(v) for k, v in folders.items()} | {
            "REJUDGE_TEST_FORBIDDEN_ROOTS": str(other.root / "disk"),
            "REJUDGE_TEST_GUARD_LOG": str(self.guard_log),
        }

    def start(self, module_argv: list[str]) -> None:
        with self.log_path.open("w") as log:
            self.process = subprocess.Popen([sys.executable, "-m", "tests.multihost.guard", *module_argv], cwd=REPO,
                                            env=self.env, stdout=log, stderr=subprocess.STDOUT)

    def log(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)

    def files_on_disk(self) -> dict[str, list[str]]:
        """Every file under each of this host's folders (setting -> relative paths)."""
        found = {}
        for setting, folder in self.folders().items():
            if folder.exists():
                files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
                if files:
                    found[setting] = files
        return found

    def guard_refusals(self) -> list[str]:
        return self.guard_log.read_text().splitlines()


def wait_for_web(web: Host, url: str, *, timeout: float, others: list[Host]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if web.process.poll() is not None:
            pytest.fail(f"the web process exited with {web.process.returncode}\n{web.log()}")
        try:
            if requests.get(url + "/healthz", timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.3)
    pytest.fail(f"the web process did not answer /healthz within {timeout:.0f}s\n" + logs(web, *others))


def logs(*hosts: Host) -> str:
    return "\n".join(f"--- {host.name} log (tail)\n{host.log()}" for host in hosts)
