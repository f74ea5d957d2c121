"""Fixtures shared by the whole suite.

Real services: PostgreSQL, Redis, a Celery worker and Chromium are used for real where a test
needs them. When REJUDGE_REQUIRE_SERVICES=1 (as .ci/run sets it) a missing service fails the
test; otherwise (a laptop on SQLite) such tests are skipped with the reason.
"""
from __future__ import annotations

import collections
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
REQUIRE_SERVICES = os.environ.get("REJUDGE_REQUIRE_SERVICES") == "1"
TEST_BROKER_URL = os.environ.get("REJUDGE_TEST_BROKER_URL", "redis://127.0.0.1:6379/15")
# The test servers (machine judges, clip media) listen on 127.0.0.1 at ports chosen at random,
# which the outbound policy (annotation/services/outbound.py) refuses by default. The worker
# processes tests start read these from the environment; this process, from the fixture below.
# A range never opens PostgreSQL's or Redis's port (outbound.SERVICE_PORTS).
TEST_OUTBOUND = {"ALLOW_NETWORKS": "127.0.0.1/32", "ALLOW_PORTS": "1024-65535"}
os.environ.setdefault("REJUDGE_OUTBOUND_ALLOW", TEST_OUTBOUND["ALLOW_NETWORKS"])
os.environ.setdefault("REJUDGE_OUTBOUND_PORTS", TEST_OUTBOUND["ALLOW_PORTS"])


def missing_service(reason: str) -> None:
    """Fail when the services are required (CI), skip otherwise."""
    if REQUIRE_SERVICES:
        pytest.fail(f"required service missing: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(autouse=True)
def _fresh_cache():
    """The local-memory cache lives as long as the process; no test may see another's entries."""
    from django.core.cache import cache

    cache.clear()
    yield


@pytest.fixture(autouse=True)
def _no_minimum_watch(settings):
    """Most tests answer a pair the moment they lease it; the minimum-watch floor has its own
    tests (tests/api/test_minimum_watch.py, tests/browser/test_judging_gates.py), which turn it on."""
    settings.REJUDGE = {**settings.REJUDGE, "MIN_WATCH_SECONDS": 0}


@pytest.fixture(autouse=True)
def _outbound_to_the_test_servers(settings):
    """See TEST_OUTBOUND; the tests of the policy itself set their own."""
    settings.REJUDGE_OUTBOUND = {**settings.REJUDGE_OUTBOUND, **TEST_OUTBOUND}


@pytest.fixture(autouse=True)
def _jobs_in_process_unless_the_test_uses_the_worker(request):
    """Once a session has started the Celery worker, the app stays pointed at it (restarting the
    worker per test costs seconds). A test that did not ask for the worker would then send its jobs
    to a process whose storage folders are not the test's (files go by name through the storage
    areas), and pass or fail by test order: it runs its jobs in-process, as it does when run alone."""
    if "celery_worker_process" in request.fixturenames:
        yield
        return
    from config.celery import app

    saved = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        yield
    finally:
        app.conf.task_always_eager = saved


@pytest.fixture(autouse=True)
def _isolated_files(settings, tmp_path, request):
    # PBKDF2 is slow on purpose; tests create many accounts.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    if "celery_worker_process" in request.fixturenames:
        # Files go by name through the storage areas: the test and the worker must share the folders
        # (the worker process, started once, has them under its own REJUDGE_VAR_DIR).
        tmp_path = request.getfixturevalue("celery_worker_process")["var"]
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    settings.EXPORT_ROOT = tmp_path / "exports"
    settings.JUDGMENTS_ROOT = tmp_path / "judgments"
    settings.RUNS_ROOT = tmp_path / "runs"
    for folder in (settings.MEDIA_ROOT, settings.UPLOAD_ROOT, settings.EXPORT_ROOT):
        folder.mkdir(parents=True, exist_ok=True)


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture
def require_postgres():
    from django.db import connection

    if connection.vendor != "postgresql":
        missing_service(f"PostgreSQL (this run uses {connection.vendor}; set DATABASE_URL=postgres://...)")


def _redis_reachable(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=2).ping())
    except Exception:  # noqa: BLE001
        return False


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker, tmp_path_factory):
    """A real `celery worker` subprocess on its own queue, reading the test database.

    Tests using it must be transactional (django_db(transaction=True)) so that what they write is
    committed and visible to the worker's own connection.
    """
    from django.db import connection

    if not _redis_reachable(TEST_BROKER_URL):
        missing_service(f"Redis at {TEST_BROKER_URL}")
    if connection.vendor != "postgresql":
        missing_service("PostgreSQL (a worker process cannot share the in-memory SQLite test database)")
    from config.celery import app

    # The queue comes from settings (the test script gives each session its own name), because
    # Celery caches its routing at first use; the worker listens on exactly that queue.
    queue = app.conf.task_default_queue
    var = tmp_path_factory.mktemp("worker-var")
    db = connection.settings_dict
    database_url = f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    env = os.environ | {"DATABASE_URL": database_url, "CELERY_BROKER_URL": TEST_BROKER_URL, "REDIS_URL": TEST_BROKER_URL,
                        "CELERY_TASK_DEFAULT_QUEUE": queue, "CELERY_TASK_ALWAYS_EAGER": "0",
                        "CACHE_KEY_PREFIX": f"{queue}-{uuid.uuid4().hex[:6]}", "REJUDGE_VAR_DIR": str(var)}
    env |= {name: str(var / folder) for name, folder in (("MEDIA_ROOT", "media"), ("UPLOAD_ROOT", "uploads"),
                                                         ("EXPORT_ROOT", "exports"), ("JUDGMENTS_ROOT", "judgments"),
                                                         ("RUNS_ROOT", "runs"))}
    log_path = tmp_path_factory.mktemp("worker") / "worker.log"
    log = log_path.open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", queue, "--pool=solo", "-l", "INFO",
         "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    saved = {k: app.conf[k] for k in ("task_always_eager", "broker_url")}
    app.conf.update(task_always_eager=False, broker_url=TEST_BROKER_URL)
    app._after_fork()  # drop connection pools created for the old broker URL
    try:
        yield {"process": process, "queue": queue, "log": log_path, "var": var}
    finally:
        app.conf.update(**saved)
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def wait_for_job(job_id: int, timeout: float = 60.0, log_path: Path | None = None):
    """Polls the job row until the worker has finished it."""
    from annotation.models import Job

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = Job.objects.get(pk=job_id)
        if job.is_finished:
            return job
        time.sleep(0.2)
    tail = log_path.read_text()[-3000:] if log_path and log_path.exists() else ""
    pytest.fail(f"job {job_id} did not finish within {timeout:.0f}s; worker log tail:\n{tail}")


DATABASE_FIXTURES = {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback", "live_server"}


def pytest_collection_modifyitems(config, items):
    """REJUDGE_ONLY_DATABASE_TESTS=1 (CI's second pass, on SQLite) keeps the tests that reach the
    database: the others (pure analysis, file readers, static checks) do the same on any database and
    already ran in the first pass. pytest-django refuses database access to a test without the mark
    or a database fixture, so none that touches it is left out."""
    if os.environ.get("REJUDGE_ONLY_DATABASE_TESTS") != "1":
        return
    keep, drop = [], []
    for item in items:
        reaches_db = item.get_closest_marker("django_db") is not None or DATABASE_FIXTURES & set(item.fixturenames)
        (keep if reaches_db else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


# --- The API fuzz run's coverage in the closing summary ------------------------------------------

BIG = "big-integer cases"  # tests/api/test_fuzz.py counts them under this key


def _fuzz_calls() -> dict[str, int]:
    """This process's fuzz request counts per caller (tests/api/test_fuzz.py) and its count of
    big-integer cases, when it collected the fuzz run."""
    import sys

    test_fuzz = sys.modules.get("tests.api.test_fuzz")  # only when this process collected it
    if test_fuzz is None:
        return {}
    return {key: n for key, n in test_fuzz.CALLS.items() if key in (*test_fuzz.FUZZ_CALLERS, BIG)}


# Under pytest-xdist the fuzz run happens in a worker process: each worker hands its counts to the
# controlling process (xdist's workeroutput), which prints their sum.
_WORKERS_FUZZ_CALLS: collections.Counter = collections.Counter()


def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["fuzz_calls"] = _fuzz_calls()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    _WORKERS_FUZZ_CALLS.update(getattr(node, "workeroutput", {}).get("fuzz_calls", {}))


def pytest_terminal_summary(terminalreporter):
    """How much the API fuzz run covered (tests/api/test_fuzz.py), so a CI log shows it."""
    from django.db import connection

    counts = collections.Counter(_fuzz_calls()) + _WORKERS_FUZZ_CALLS
    big = counts.pop(BIG, 0)
    if sum(counts.values()):
        by_role = ", ".join(f"{role} {n}" for role, n in sorted(counts.items()))
        # A request is counted once it has passed the not-a-server-error check.
        terminalreporter.write_line(f"API fuzz on {connection.vendor}: {sum(counts.values())} requests without a 5xx "
                                    f"({by_role}; "
                                    f"{big} cases with integers beyond 64 bits)")
