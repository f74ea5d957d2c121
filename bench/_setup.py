"""Shared by the benchmarks: point Django at a PostgreSQL database of its own and migrate it."""
from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Benchmarks run with DEBUG off over plain http, like the tests: a throwaway key, no HTTPS redirect.
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
os.environ.setdefault("REJUDGE_HTTPS", "0")
# A closed-loop load test is no human rater: the per-user API rate limit would stop it.
os.environ.setdefault("REJUDGE_THROTTLE_USER", "off")
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/rejudge_bench"


def django_for_bench(database_url: str | None = None) -> None:
    url = database_url or os.environ.get("DATABASE_URL") or DEFAULT_URL
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    sys.path.insert(0, str(REPO))
    if url.startswith("postgres"):
        _create_database_if_missing(url)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _create_database_if_missing(url: str) -> None:
    import dj_database_url
    import psycopg2

    cfg = dj_database_url.parse(url)
    conn = psycopg2.connect(dbname="postgres", user=cfg["USER"], password=cfg["PASSWORD"] or None,
                            host=cfg["HOST"], port=cfg["PORT"] or 5432)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", [cfg["NAME"]])
        if not cur.fetchone():
            cur.execute(f'CREATE DATABASE "{cfg["NAME"]}"')
    conn.close()


def peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
