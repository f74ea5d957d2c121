"""gunicorn serves with threaded workers that keep a connection open between requests (issue 40):
a sync worker closed it after every response, so each of a judged pair's two requests paid for a
new connection. GUNICORN_THREADS=1 gives the sync worker back."""
from __future__ import annotations

import http.client
import os
import runpy
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.deploy.files import REPO


def _settings(monkeypatch, tmp_path, **env) -> dict:
    for name in ("GUNICORN_THREADS", "GUNICORN_KEEPALIVE", "GUNICORN_CONTROL_SOCKET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path / "prometheus"))  # the file sets it otherwise
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(REPO / "config" / "gunicorn.conf.py"))


def test_workers_are_threaded_with_keep_alive_unless_one_thread_is_asked_for(monkeypatch, tmp_path):
    default = _settings(monkeypatch, tmp_path)
    assert (default["worker_class"], default["threads"], default["keepalive"]) == ("gthread", 4, 5)
    sync = _settings(monkeypatch, tmp_path, GUNICORN_THREADS="1", GUNICORN_KEEPALIVE="2")
    assert (sync["worker_class"], sync["threads"], sync["keepalive"]) == ("sync", 1, 2)
    with pytest.raises(ValueError, match="GUNICORN_THREADS must be at least 1"):
        _settings(monkeypatch, tmp_path, GUNICORN_THREADS="0")
    # docker-compose.yml passes the variables through empty when they are not given: the defaults
    # (the image's web container failed to start on int("") before).
    empty = _settings(monkeypatch, tmp_path, GUNICORN_THREADS="", GUNICORN_KEEPALIVE="")
    assert (empty["worker_class"], empty["threads"], empty["keepalive"]) == ("gthread", 4, 5)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(tmp_path, threads: str):
    port = _free_port()
    log = tmp_path / f"gunicorn-{threads}.log"
    env = {k: v for k, v in os.environ.items() if k not in {"GUNICORN_CONTROL_SOCKET", "GUNICORN_KEEPALIVE"}} | {
        "REJUDGE_VAR_DIR": str(tmp_path), "GUNICORN_BIND": f"127.0.0.1:{port}", "GUNICORN_WORKERS": "1",
        "GUNICORN_THREADS": threads, "GUNICORN_CONTROL_SOCKET": "off",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / f"prometheus-{threads}"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "SECRET_KEY": "gunicorn-test-key", "REJUDGE_HTTPS": "0",
    }
    with log.open("w") as out:
        server = subprocess.Popen([str(Path(sys.executable).with_name("gunicorn")), "config.wsgi:application", "-c",
                                   "config/gunicorn.conf.py"], cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while True:
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            pytest.fail(f"gunicorn did not answer; it said:\n{log.read_text()[-3000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server, port
        except OSError:
            time.sleep(0.2)


def _two_requests_on_one_connection(port: int) -> tuple[list[int], list[str | None], bool]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    statuses, connection_headers, same = [], [], True
    try:
        for i in range(2):
            conn.request("GET", "/healthz")
            if i == 0:
                first = conn.sock
            else:
                same = conn.sock is first  # http.client opens a new socket when the server closed the last
            response = conn.getresponse()
            response.read()
            statuses.append(response.status)
            connection_headers.append(response.getheader("Connection"))
    finally:
        conn.close()
    return statuses, connection_headers, same


@pytest.mark.parametrize("threads, kept", [("4", True), ("1", False)])
def test_a_client_s_second_request_reuses_its_connection_only_with_threaded_workers(tmp_path, threads, kept):
    server, port = _serve(tmp_path, threads)
    try:
        statuses, connection_headers, same = _two_requests_on_one_connection(port)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    assert len(statuses) == 2 and all(status in (200, 503) for status in statuses), statuses  # answered (db or not)
    assert same is kept, connection_headers
    assert (connection_headers[0] or "").lower() == ("keep-alive" if kept else "close")
