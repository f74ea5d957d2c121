"""Rejudge's own system checks (`manage.py check`; `migrate` and `runserver` run them too, so the
compose stack's one-shot `migrate` stops a deploy that fails one before the web app starts).

rejudge.E001, the counts of the rate limits: DRF's throttles (REJUDGE_THROTTLE_*) and the crowd
arrival throttle (config/throttling.py CrowdArrivalThrottle: study links, one rater account per
arrival) count in the default cache. A per-process cache (LocMemCache, as settings give without
REDIS_URL) under several web processes gives each process its own count: measured, 37 crowd
accounts in one burst from one address under two gunicorn workers against a limit of 20/hour.
So with DEBUG off and more than one web process (config/processes.py web_workers), the default
cache must be one all processes share (Redis: set REDIS_URL). The demo (DEBUG on, runserver, one
process) is not concerned.
"""
from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, register

from config.processes import web_workers

#: Caches whose counts are not shared between processes (DummyCache counts nothing at all).
PER_PROCESS_CACHES = {"django.core.cache.backends.locmem.LocMemCache", "django.core.cache.backends.dummy.DummyCache"}


@register("rejudge")
def check_shared_cache_for_throttles(app_configs=None, **kwargs) -> list:
    if settings.DEBUG:
        return []
    try:
        workers = web_workers()
    except ValueError as exc:
        return [Error(str(exc), id="rejudge.E001")]
    backend = settings.CACHES.get("default", {}).get("BACKEND", "")
    if workers > 1 and backend in PER_PROCESS_CACHES:
        return [Error(
            f"The default cache is {backend.rsplit('.', 1)[-1]}, kept inside each process, and {workers} web "
            f"processes serve requests (GUNICORN_WORKERS / WEB_CONCURRENCY): the crowd arrival throttle and the API "
            f"rate limits would count per process, letting through {workers} times their limit.",
            hint="Set REDIS_URL (e.g. redis://redis:6379/0) so every process counts in one cache, or run one web "
                 "process (GUNICORN_WORKERS=1).",
            id="rejudge.E001")]
    return []
