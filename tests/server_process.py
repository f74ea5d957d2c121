"""Test servers run as child processes of a test (the fake and hostile judges, the hostile outbound
server): the child prints `PORT <n> ...` as its first line once it listens; the parent reads it,
asks `/stats`, and stops the child, killing it when a handler is stuck (a drip, a hang)."""
from __future__ import annotations

import json
import subprocess
import sys
from http.server import ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


class ServerProcess:
    """`python -m <module> <args>` as a child: `port`, `url`, `first_line` (the words of its PORT
    line), `stats()`, `stop()`."""

    module = ""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", self.module, *args], cwd=REPO, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True)
        line = self.process.stdout.readline()
        self.first_line = line.split()
        if len(self.first_line) < 2 or self.first_line[0] != "PORT":
            self.process.kill()
            raise RuntimeError(f"{self.module} did not start: {line}{self.process.stdout.read()}")
        self.port = int(self.first_line[1])
        self.url = f"http://127.0.0.1:{self.port}"

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        import urllib.request

        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def stats(self) -> dict:
        return self.call("GET", "/stats")

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.alive:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:  # a handler stuck mid-drip or in a hang: end it
                self.process.kill()
                self.process.wait(timeout=20)
        self.process.stdout.close()


def serve(handler, *, port: int = 0, on_stop=None) -> None:
    """The child's side: listen on 127.0.0.1, print `PORT <n>`, serve until terminated."""
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        if on_stop is not None:
            on_stop()
