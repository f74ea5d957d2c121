"""Real Celery worker and beat processes that a test may SIGKILL and restart.

Unlike the session-wide `celery_worker_process` fixture, each `JobWorkers` belongs to one test: its
own queue, its own processes, and short heartbeat / stale-after / reaper settings passed by
environment, so a lost worker is noticed within seconds. The test process sends to that queue
too (`task_default_queue` is read on every send).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import REPO, TEST_BROKER_URL, _redis_reachable, missing_service

# Short enough for a test, long enough that a busy 2-core machine never misses 5 heartbeats in a row.
HEARTBEAT_SECONDS = 1
STALE_AFTER_SECONDS = 6


class JobWorkers:
    def __init__(self, *, env: dict, folder: Path, queue: str) -> None:
        self.env = env
        self.folder = folder
        self.queue = queue
        folder.mkdir(parents=True, exist_ok=True)
        self.processes: dict[str, subprocess.Popen] = {}
        self._logs: dict[str, object] = {}

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = (self.folder / f"{name}.log").open("w")
        self._logs[name] = log
        process = subprocess.Popen([sys.executable, "-m", "celery", "-A", "config", *argv], cwd=REPO, env=self.env,
                                   stdout=log, stderr=subprocess.STDOUT)
        self.processes[name] = process
        return process

    @property
    def upkeep_queue(self) -> str:
        return self.env["REJUDGE_MAINTENANCE_QUEUE"]

    def start_worker(self, name: str = "worker1", *, queue: str | None = None) -> subprocess.Popen:
        queue = queue or self.queue
        return self._spawn(name, ["worker", "-Q", queue, "--pool=solo", "-l", "INFO", "-n", f"{name}-{self.queue}@%h",
                                  "--without-gossip", "--without-mingle", "--without-heartbeat"])

    def start_beat(self) -> subprocess.Popen:
        return self._spawn("beat", ["beat", "-l", "INFO", "-s", str(self.folder / "beat-schedule"), "--max-interval", "1"])

    def kill(self, name: str) -> None:
        """SIGKILL: no clean-up, no acknowledgement, exactly as the kernel's OOM killer does it."""
        process = self.processes.pop(name)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)

    def stop(self, name: str) -> None:
        """A warm shutdown (SIGTERM), for a worker whose part is over."""
        process = self.processes.pop(name)
        process.terminate()
        process.wait(timeout=60)

    def log(self, name: str) -> str:
        path = self.folder / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def logs_tail(self, chars: int = 3000) -> str:
        return "\n".join(f"--- {path.name}\n{path.read_text(errors='replace')[-chars:]}"
                         for path in sorted(self.folder.glob("*.log")))

    def stop_all(self) -> None:
        for process in self.processes.values():
            process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        self.processes.clear()
        for log in self._logs.values():
            log.close()

    def wait_until(self, condition: Callable[[], object], *, timeout: float, what: str):
        """Polls `condition` until it returns something truthy; fails naming `what` (bounded
        waiting, never a claim about speed)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            time.sleep(0.2)
        pytest.fail(f"gave up waiting for {what} after {timeout:.0f}s\n{self.logs_tail()}")


def database_url() -> str:
    from django.db import connection

    db = connection.settings_dict
    return f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@contextmanager
def job_workers_for(settings, folder: Path, *, max_attempts: int = 2, upkeep_queue: bool = False):
    """Worker/beat processes (started by the test) on a queue of their own, sharing the test's
    database, cache (Redis) and upload/export folders. With `upkeep_queue`, beat sends the
    periodic tasks to a second queue (`workers.upkeep_queue`), for a worker of their own."""
    from django.db import connection

    if not _redis_reachable(TEST_BROKER_URL):
        missing_service(f"Redis at {TEST_BROKER_URL}")
    if connection.vendor != "postgresql":
        missing_service("PostgreSQL (worker processes cannot share the in-memory SQLite test database)")
    from config.celery import app

    # Named after the session's queue (scripts/test.sh: rejudge-test-<pid>), so the suite's end
    # removes what the broker kept of it.
    queue = f"{os.environ.get('CELERY_TASK_DEFAULT_QUEUE') or 'rejudge-test'}-recovery-{uuid.uuid4().hex[:10]}"
    env = os.environ | {
        "DATABASE_URL": database_url(), "CELERY_BROKER_URL": TEST_BROKER_URL, "REDIS_URL": TEST_BROKER_URL,
        "CELERY_TASK_DEFAULT_QUEUE": queue, "CELERY_TASK_ALWAYS_EAGER": "0", "CACHE_KEY_PREFIX": queue,
        "REJUDGE_VAR_DIR": str(folder / "var"), "UPLOAD_ROOT": str(settings.UPLOAD_ROOT),
        "EXPORT_ROOT": str(settings.EXPORT_ROOT), "MEDIA_ROOT": str(settings.MEDIA_ROOT),
        "JUDGMENTS_ROOT": str(settings.JUDGMENTS_ROOT), "RUNS_ROOT": str(settings.RUNS_ROOT),
        "REJUDGE_JOB_HEARTBEAT_SECONDS": str(HEARTBEAT_SECONDS), "REJUDGE_JOB_STALE_AFTER_SECONDS": str(STALE_AFTER_SECONDS),
        "REJUDGE_JOB_RECOVER_EVERY_SECONDS": "1", "REJUDGE_JOB_MAX_ATTEMPTS": str(max_attempts),
    }
    env["REJUDGE_MAINTENANCE_QUEUE"] = f"{queue}-upkeep" if upkeep_queue else queue
    env.setdefault("SECRET_KEY", f"worker-test-{uuid.uuid4().hex}")
    saved = {k: app.conf[k] for k in ("task_always_eager", "broker_url", "task_default_queue")}
    app.conf.update(task_always_eager=False, broker_url=TEST_BROKER_URL, task_default_queue=queue)
    app._after_fork()  # drop connection pools made for another broker URL
    workers = JobWorkers(env=env, folder=folder, queue=queue)
    try:
        yield workers
    finally:
        workers.stop_all()
        app.conf.update(**saved)
        app._after_fork()
        import redis

        # Messages left for queues nobody reads any more.
        redis.Redis.from_url(TEST_BROKER_URL).delete(queue, env["REJUDGE_MAINTENANCE_QUEUE"])


@contextmanager
def table_locked(table: str):
    """Holds `LOCK TABLE … IN SHARE MODE` on another connection: reads go on, writes to the table
    wait. A job that reaches its first write to it stops there, mid-job, until the lock ends."""
    import psycopg2
    from django.db import connection

    db = connection.settings_dict
    holder = psycopg2.connect(dbname=db["NAME"], user=db["USER"], password=db["PASSWORD"] or None,
                              host=db["HOST"] or "127.0.0.1", port=db["PORT"] or 5432)
    try:
        with holder.cursor() as cursor:
            cursor.execute(f'LOCK TABLE "{table}" IN SHARE MODE')
        yield
    finally:
        holder.rollback()
        holder.close()


def backends_waiting_for_a_lock() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()")
        return cursor.fetchone()[0]
