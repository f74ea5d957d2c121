"""Shared by the benchmarks: point Django at a PostgreSQL database of its own and migrate it.

Every bench takes `--database-url` (else $DATABASE_URL); without either it gets a database of this
run's own, `<name>_<pid>` (bench_database_url), created here and dropped when the run ends, so two
people benching on one machine never share or clobber one. Servers listen on a free port
(free_port) unless `--port` names one. Data files default to the repository's fixtures, or come
from the command line: never from a folder outside the repository.
"""
from __future__ import annotations

import atexit
import os
import secrets
import socket
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Benchmarks run with DEBUG off over plain http, like the tests: a throwaway key, no HTTPS redirect.
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
os.environ.setdefault("REJUDGE_HTTPS", "0")
# A closed-loop load test is no human rater: the per-user API rate limit would stop it.
os.environ.setdefault("REJUDGE_THROTTLE_USER", "off")
SERVER = "postgres://postgres@127.0.0.1:5432"
#: A database name of this run's own, for a bench that never connects (it only has to be unique).
DEFAULT_URL = f"{SERVER}/rejudge_bench_{os.getpid()}"
_OWN: set[str] = set()  # databases this process named itself: dropped at exit if it made them


def bench_database_url(given: str | None = None, name: str = "rejudge_bench", keep: bool = False) -> str:
    """`given` (a bench's --database-url), else $DATABASE_URL, else `<name>_<pid>` on the local
    PostgreSQL: unique per run, dropped at exit by django_for_bench when it creates it. `keep`
    (a bench's --reuse): `<name>` itself, kept for the next run to reuse."""
    url = given or os.environ.get("DATABASE_URL")
    if url:
        return url
    if keep:
        return f"{SERVER}/{name}"
    url = f"{SERVER}/{name}_{os.getpid()}"
    _OWN.add(url)
    return url


def free_port() -> int:
    """A TCP port nobody listens on now, for a server a bench starts (unless --port names one)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def django_for_bench(database_url: str | None = None, name: str = "rejudge_bench") -> None:
    url = bench_database_url(database_url, name)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    sys.path.insert(0, str(REPO))
    if url.startswith("postgres") and _create_database_if_missing(url) and url in _OWN:
        atexit.register(_drop_database, url)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _server(url: str):
    import dj_database_url
    import psycopg2

    cfg = dj_database_url.parse(url)
    conn = psycopg2.connect(dbname="postgres", user=cfg["USER"], password=cfg["PASSWORD"] or None,
                            host=cfg["HOST"], port=cfg["PORT"] or 5432)
    conn.autocommit = True
    return conn, cfg["NAME"]


def _create_database_if_missing(url: str) -> bool:
    """True when it created the database."""
    conn, name = _server(url)
    with conn.cursor() as cur:
        cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        created = not cur.fetchone()
        if created:
            cur.execute(f'CREATE DATABASE "{name}"')
    conn.close()
    return created


def _drop_database(url: str) -> None:
    from django.db import connections

    connections.close_all()
    conn, name = _server(url)
    with conn.cursor() as cur:
        cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # a worker a bench started may linger
    conn.close()


def peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peak_rss_since_reset_mb() -> float | None:
    """This process's peak RSS since the last `peak_rss_reset` (Linux VmHWM), None elsewhere."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def peak_rss_reset() -> None:
    """Sets VmHWM back to the current RSS (Linux: writing 5 to /proc/self/clear_refs), so the next
    `peak_rss_since_reset_mb` is the peak of one stage alone; a no-op where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")
    except OSError:
        pass


# --- bulk loading with PostgreSQL's COPY (benchmarks that need millions of rows fast) ---------

def _tsv(value) -> str:
    if value is None:
        return r"\N"
    if isinstance(value, bool):
        return "t" if value else "f"
    return str(value).replace("\\", "\\\\").replace("\t", " ").replace("\n", " ")


def copy_rows(model, columns: list[str], rows, chunk: int = 200_000) -> int:
    """COPY rows into the model's table; every other column (but an id not named) gets its field
    default. Returns the number of rows."""
    import io

    from django.db import connection

    extra = [f for f in model._meta.concrete_fields if not f.primary_key and f.column not in columns]
    tail = "".join("\t" + _tsv(f.get_default()) for f in extra)
    names = ", ".join(connection.ops.quote_name(c) for c in columns + [f.column for f in extra])
    sql = f"COPY {model._meta.db_table} ({names}) FROM STDIN"
    count, buffer = 0, io.StringIO()
    with connection.cursor() as cursor:
        for row in rows:
            buffer.write("\t".join(_tsv(v) for v in row) + tail + "\n")
            count += 1
            if count % chunk == 0:
                buffer.seek(0)
                cursor.cursor.copy_expert(sql, buffer)
                buffer = io.StringIO()
        buffer.seek(0)
        cursor.cursor.copy_expert(sql, buffer)
    return count


def next_id(model) -> int:
    from django.db.models import Max

    return (model.objects.aggregate(m=Max("id"))["m"] or 0) + 1


def reset_sequence(model) -> None:
    """After COPY with explicit ids: the table's id sequence continues after the highest one."""
    from django.db import connection

    table = model._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT MAX(id) FROM {table}))")
