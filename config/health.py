"""GET /healthz: is this web process up and can it reach its database? For the container health
check and load balancers.

A middleware placed first, not a view: the probe comes from inside the container or from a load
balancer, by address and over plain http, so it must answer before the host check (ALLOWED_HOSTS)
and the redirect to https would turn it away. It says nothing but ok / unavailable, so anyone may
ask; the answer is never cached.
"""
from __future__ import annotations

import logging

from django.db import connection
from django.http import JsonResponse

HEALTH_PATH = "/healthz"
logger = logging.getLogger(__name__)


def database_reachable() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            return cursor.fetchone() == (1,)
    except Exception:  # noqa: BLE001 - any failure to reach the database is "unhealthy"
        logger.warning("health check: the database is unreachable", exc_info=True)
        return False


class HealthCheckMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        if request.path_info.rstrip("/") != HEALTH_PATH or request.method not in ("GET", "HEAD"):
            return self.get_response(request)
        healthy = database_reachable()
        response = JsonResponse({"status": "ok" if healthy else "unavailable",
                                 "database": "ok" if healthy else "unreachable"}, status=200 if healthy else 503)
        response["Cache-Control"] = "no-store"
        return response
