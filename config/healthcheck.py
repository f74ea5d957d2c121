"""The containers' health checks (Dockerfile HEALTHCHECK, docker-compose.yml `healthcheck:`).

    python -m config.healthcheck web [URL]        GET /healthz answers 200 (the web process and its database)
    python -m config.healthcheck worker [NODE]    the Celery worker NODE (default celery@<this host>) answers a ping
    python -m config.healthcheck beat [FILE]      beat's schedule file was written recently (its loop turns)

Exit status 0 healthy, 1 not, with one line saying why on stderr. The web check needs neither
Django nor the database settings: it only asks the running server.
"""
from __future__ import annotations

import glob
import os
import socket
import sys
import time
import urllib.error
import urllib.request

WEB_URL = "http://127.0.0.1:8000/healthz"
BEAT_SCHEDULE = "/tmp/rejudge-beat-schedule"
# Beat writes its schedule at least every sync interval (Celery's default, 3 minutes) while our
# minute-long periodic tasks keep it ticking: 10 minutes without a write means its loop is stuck.
BEAT_STALE_SECONDS = 600


def check_web(url: str = WEB_URL, timeout: float = 5.0) -> tuple[bool, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - a fixed local URL
            return response.status == 200, f"{url}: {response.status}"
    except urllib.error.HTTPError as error:
        return False, f"{url}: {error.code} {error.read(200).decode(errors='replace')}"
    except OSError as error:
        return False, f"{url}: {error}"


def check_worker(node: str | None = None, timeout: float = 5.0) -> tuple[bool, str]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from config.celery import app

    node = node or f"celery@{socket.gethostname()}"
    replies = app.control.ping(destination=[node], timeout=timeout)
    answered = any(node in reply and reply[node].get("ok") == "pong" for reply in replies)
    return answered, f"{node}: {'pong' if answered else 'no answer within %.0fs' % timeout}"


def check_beat(schedule: str = BEAT_SCHEDULE, stale_seconds: float = BEAT_STALE_SECONDS,
               now: float | None = None) -> tuple[bool, str]:
    # shelve may add a suffix (.db, .dat) depending on which dbm module Python has.
    files = glob.glob(glob.escape(schedule) + "*")
    if not files:
        return False, f"{schedule}: no schedule file yet"
    age = (time.time() if now is None else now) - max(os.path.getmtime(f) for f in files)
    return age <= stale_seconds, f"{schedule}: written {age:.0f}s ago (limit {stale_seconds:.0f}s)"


CHECKS = {"web": check_web, "worker": check_worker, "beat": check_beat}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in CHECKS:
        print(f"usage: python -m config.healthcheck {{{'|'.join(CHECKS)}}} [target]", file=sys.stderr)
        return 2
    healthy, why = CHECKS[argv[0]](*argv[1:2])
    print(why, file=sys.stderr)
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
