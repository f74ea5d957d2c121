"""Issue 17 item 3: the health checks the containers run (config/healthcheck.py) and GET /healthz,
run for real: against a live server, a database that cannot be reached, a real Celery worker and
a real beat."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from config.healthcheck import check_beat, check_web, check_worker, main
from tests.conftest import REPO


@pytest.mark.django_db
def test_healthz_answers_with_the_database_reachable(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok", "database": "ok"}
    assert response["Cache-Control"] == "no-store"
    assert client.head("/healthz").status_code == 200


@pytest.mark.django_db
def test_healthz_answers_a_probe_by_address_over_plain_http(client, settings):
    """The container's own check asks http://127.0.0.1:8000/healthz; a load balancer asks by the
    container's address: neither is an allowed host, neither comes over https."""
    settings.ALLOWED_HOSTS = ["rejudge.example.org"]
    settings.SECURE_SSL_REDIRECT = True
    assert client.get("/healthz", HTTP_HOST="10.0.0.7:8000").status_code == 200
    # The same request anywhere else meets the host check: /healthz is the only exception.
    assert client.get("/login/", HTTP_HOST="10.0.0.7:8000").status_code == 400
    assert client.get("/login/", HTTP_HOST="rejudge.example.org").status_code == 301


def test_healthz_says_503_when_the_database_cannot_be_reached(tmp_path):
    script = ("import django; django.setup(); from django.test import Client; r = Client().get('/healthz'); "
              "print(r.status_code, r.content.decode())")
    env = os.environ | {"DJANGO_SETTINGS_MODULE": "config.settings", "SECRET_KEY": "health-test-key", "DEBUG": "0",
                        "DATABASE_URL": "postgres://nobody@127.0.0.1:9/nothing", "REJUDGE_HTTPS": "0",
                        "STATIC_ROOT": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    status, body = done.stdout.strip().split(" ", 1)
    assert status == "503" and json.loads(body) == {"status": "unavailable", "database": "unreachable"}, done.stderr


@pytest.mark.django_db(transaction=True)
def test_the_web_check_passes_against_a_running_server_and_fails_without_one(live_server):
    assert check_web(f"{live_server.url}/healthz")[0]
    assert main(["web", f"{live_server.url}/healthz"]) == 0
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]  # bound, never listening: the connection is refused
        healthy, why = check_web(f"http://127.0.0.1:{closed}/healthz", timeout=2)
    assert not healthy and "refused" in why.lower()
    # A server that answers, but not 200: unhealthy too.
    assert not check_web(f"{live_server.url}/no-such-page/")[0]


def test_the_beat_check_reads_how_old_the_schedule_file_is(tmp_path):
    schedule = tmp_path / "schedule"
    assert check_beat(str(schedule)) == (False, f"{schedule}: no schedule file yet")
    # shelve may store it under a suffix (dbm.dumb: .dat/.dir/.bak): any of them counts.
    (tmp_path / "schedule.dat").write_bytes(b"x")
    now = time.time()
    os.utime(tmp_path / "schedule.dat", (now - 30, now - 30))
    assert check_beat(str(schedule), stale_seconds=600, now=now)[0]
    os.utime(tmp_path / "schedule.dat", (now - 601, now - 601))
    assert not check_beat(str(schedule), stale_seconds=600, now=now)[0]


def test_an_unknown_check_is_a_usage_error():
    assert main([]) == 2 and main(["database"]) == 2


@pytest.mark.postgres
@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_the_worker_and_beat_checks_against_real_processes(settings, tmp_path):
    from tests.worker_processes import job_workers_for

    with job_workers_for(settings, tmp_path / "procs") as workers:
        workers.start_worker("worker1")
        node = f"worker1-{workers.queue}@{socket.gethostname()}"
        workers.wait_until(lambda: check_worker(node, timeout=2)[0], timeout=90, what=f"{node} to answer a ping")
        assert not check_worker(f"celery@no-such-host-{workers.queue}", timeout=2)[0]
        workers.start_beat()
        schedule = str(workers.folder / "beat-schedule")
        workers.wait_until(lambda: check_beat(schedule)[0], timeout=60, what="beat to write its schedule")
        workers.stop("worker1")
        assert not check_worker(node, timeout=2)[0]
