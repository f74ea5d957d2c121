"""Runs a Python module as a "host" that cannot reach another host's disk.

    python -m tests.multihost.guard <module> [args...]     e.g. gunicorn ..., celery -A config worker ...

On one test machine the web process and the worker could read each other's folders through an
absolute path found in the database, which on two real hosts would fail. An audit hook (PEP 578)
refuses every open, listing, rename, removal, copy or mkdir of a path under one of the folders in
REJUDGE_TEST_FORBIDDEN_ROOTS (os.pathsep-separated): the call raises PermissionError, as a missing
mount would, and the attempt is appended to REJUDGE_TEST_GUARD_LOG so that the test sees it even
when the code swallowed the error.
"""
from __future__ import annotations

import os
import runpy
import sys

# Events whose arguments name files (see the audit events table of the Python docs).
PATH_EVENTS = frozenset({"open", "os.listdir", "os.scandir", "os.rename", "os.remove", "os.rmdir", "os.mkdir",
                         "os.chdir", "os.chmod", "os.truncate", "os.utime", "os.link", "os.symlink", "shutil.copyfile",
                         "shutil.copymode", "shutil.copystat", "shutil.copytree", "shutil.move", "shutil.rmtree",
                         "glob.glob"})


def forbidden_roots(value: str) -> tuple[str, ...]:
    roots = set()
    for raw in value.split(os.pathsep):
        if raw.strip():
            # Both spellings: a path may reach us through a symlinked /tmp or not.
            roots.add(os.path.abspath(raw))
            roots.add(os.path.realpath(raw))
    return tuple(sorted(roots))


def _as_path(value) -> str | None:
    if isinstance(value, int) or value is None:
        return None  # a file descriptor: its path was checked when it was opened
    try:
        return os.path.abspath(os.fsdecode(os.fspath(value)))
    except TypeError:
        return None


def offending_path(event: str, args: tuple, roots: tuple[str, ...]) -> str | None:
    """The path in `args` of audit `event` that lies under one of `roots`, if any."""
    if event not in PATH_EVENTS:
        return None
    for value in args:
        path = _as_path(value)
        if path and any(path == root or path.startswith(root + os.sep) for root in roots):
            return path
    return None


def install(roots: tuple[str, ...], log_path: str) -> None:
    # Opened before the hook exists, written with os.write: the hook never audits its own log.
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def hook(event: str, args: tuple) -> None:
        path = offending_path(event, args, roots)
        if path is not None:
            os.write(log_fd, f"pid {os.getpid()} {event} {path}\n".encode())
            raise PermissionError(f"multi-host guard: {event} {path} is another host's folder")

    sys.addaudithook(hook)


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: python -m tests.multihost.guard <module> [args...]")
    install(forbidden_roots(os.environ.get("REJUDGE_TEST_FORBIDDEN_ROOTS", "")), os.environ["REJUDGE_TEST_GUARD_LOG"])
    module, sys.argv = sys.argv[1], [sys.argv[1], *sys.argv[2:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
