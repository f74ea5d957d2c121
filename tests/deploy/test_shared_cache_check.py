"""rejudge.E001 (config/checks.py): with DEBUG off and more than one web process, the throttles'
counts (the crowd arrival throttle, DRF's rate limits) must live in a cache every process shares,
or each process counts on its own (issue 36, finding 8: 37 crowd accounts in one burst under two
gunicorn workers against a limit of 20/hour, and nothing warned).

The check is run in-process under overridden settings, and as an operator runs it (`manage.py
check` in a fresh interpreter, settings read from the environment): the production compose file's
environment passes (it sets REDIS_URL), the demo's (DEBUG on, one runserver process) passes, a
production environment without Redis under gunicorn's default worker count fails naming the reason.
"""
from __future__ import annotations

import runpy
import secrets

import pytest
from django.core.checks import run_checks

from config.processes import DEFAULT_WEB_WORKERS
from tests.conftest import REPO
from tests.test_production_settings import clean_env, compose_environment, run_manage

LOCMEM = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
REDIS = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:6379/15"}}


def _errors(settings, monkeypatch, *, debug: bool, caches: dict, **env: str) -> list:
    for variable in ("GUNICORN_WORKERS", "WEB_CONCURRENCY"):
        monkeypatch.delenv(variable, raising=False)
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    settings.DEBUG = debug
    settings.CACHES = caches
    return [e for e in run_checks(tags=["rejudge"]) if e.id == "rejudge.E001"]


@pytest.mark.parametrize("debug, caches, env, fails", [
    (False, LOCMEM, {}, True),                              # gunicorn's default: 3 workers
    (False, LOCMEM, {"GUNICORN_WORKERS": "2"}, True),
    (False, LOCMEM, {"WEB_CONCURRENCY": "4"}, True),        # the variable many hosts set
    (False, {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}, {}, True),
    (False, LOCMEM, {"GUNICORN_WORKERS": "1"}, False),      # one process: its own count is the count
    (False, REDIS, {"GUNICORN_WORKERS": "8"}, False),       # shared: every process counts in Redis
    (True, LOCMEM, {"GUNICORN_WORKERS": "2"}, False),       # the demo / development
], ids=["default-workers", "two-workers", "web-concurrency", "dummy-cache", "one-worker", "redis", "debug"])
def test_per_process_cache_under_several_web_processes_fails_the_check(settings, monkeypatch, debug, caches, env,
                                                                       fails):
    errors = _errors(settings, monkeypatch, debug=debug, caches=caches, **env)
    assert bool(errors) is fails
    if fails:
        message = errors[0].msg + " " + errors[0].hint
        assert "crowd arrival throttle" in message and "count per process" in message and "REDIS_URL" in message


def test_a_bad_worker_count_is_named(settings, monkeypatch):
    errors = _errors(settings, monkeypatch, debug=False, caches=LOCMEM, GUNICORN_WORKERS="many")
    assert [e.msg for e in errors] == ["GUNICORN_WORKERS must be a whole number of web processes, got 'many'"]


def test_gunicorn_runs_the_worker_count_the_check_reads(monkeypatch, tmp_path):
    monkeypatch.delenv("GUNICORN_WORKERS", raising=False)
    monkeypatch.setenv("REJUDGE_VAR_DIR", str(tmp_path))
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path / "prometheus"))
    monkeypatch.delenv("WEB_CONCURRENCY", raising=False)
    assert runpy.run_path(str(REPO / "config" / "gunicorn.conf.py"))["workers"] == DEFAULT_WEB_WORKERS
    monkeypatch.setenv("WEB_CONCURRENCY", "5")
    assert runpy.run_path(str(REPO / "config" / "gunicorn.conf.py"))["workers"] == 5


def test_manage_check_fails_in_production_without_redis_and_passes_under_compose_and_the_demo(tmp_path):
    key = secrets.token_urlsafe(50)
    production = clean_env(tmp_path, SECRET_KEY=key, DEBUG="0", REJUDGE_HTTPS="0")
    done = run_manage(production, "check")
    assert done.returncode != 0
    assert "rejudge.E001" in done.stderr and f"{DEFAULT_WEB_WORKERS} web processes" in done.stderr

    compose = clean_env(tmp_path) | compose_environment(secret_key=key)
    assert compose["REDIS_URL"].startswith("redis://") and compose["DEBUG"] == "0"
    done = run_manage(compose, "check")
    assert done.returncode == 0, done.stderr[-2000:]

    demo = clean_env(tmp_path, DEBUG="1")
    done = run_manage(demo, "check")
    assert done.returncode == 0, done.stderr[-2000:]
