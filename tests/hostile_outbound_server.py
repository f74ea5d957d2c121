"""A server that tries what issue 36 findings 1-3 found a hostile judge or media host could do.

Run as a process (`python -m tests.hostile_outbound_server [VIDEO]`): it binds 127.0.0.1 twice,
an HTTP server and a raw TCP listener that answers like Redis (`-ERR ...`, no HTTP), and prints
`PORT <http> RAW <raw>` on its first line. By path (a judge's base URL may carry a prefix: POST
<prefix>/v1/chat/completions):

    /echo401/...          401 whose message echoes the Authorization header, as OpenAI's
                          "Incorrect API key provided: sk-..." does
    /teapot/...           418 with a body that must never be shown ("INTERNAL-BODY-...")
    /notrelevant/...      a well-formed chat completion saying "not relevant" to every pair
                          (the poisoning judge of finding 2, whatever model it is asked for)
    /redirect?to=URL      302 to URL (a public host's redirect into the private network)
    /playlist.mp4         an HLS playlist that names an internal URL and a local file
    /clip.mp4             the video file given as the first argument
    /stats                {"requests": n, "by_path": {path: n}, "authorization": [...]}
"""
from __future__ import annotations

import json
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from tests.server_process import ServerProcess

INTERNAL_BODY = "INTERNAL-BODY-7c1e: redis_version:7.2.4 role:master connected_clients:3"
VIDEO: Path | None = None


class State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = 0
        self.by_path: dict[str, int] = {}
        self.authorization: list[str] = []


STATE = State()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def _send(self, status: int, body: bytes, headers: dict | None = None,
              content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def _count(self) -> str:
        path = urlsplit(self.path).path
        if path != "/stats":
            with STATE.lock:
                STATE.requests += 1
                STATE.by_path[path] = STATE.by_path.get(path, 0) + 1
                if self.headers.get("Authorization"):
                    STATE.authorization.append(self.headers["Authorization"])
        return path

    def do_GET(self) -> None:
        path = self._count()
        if path == "/stats":
            with STATE.lock:
                body = {"requests": STATE.requests, "by_path": STATE.by_path, "authorization": STATE.authorization}
            self._send(200, json.dumps(body).encode())
        elif path == "/redirect":
            self._send(302, b"", {"Location": parse_qs(urlsplit(self.path).query)["to"][0]})
        elif path == "/playlist.mp4":
            playlist = ("#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4.0,\nhttp://127.0.0.1:6379/secret.ts\n"
                        "#EXTINF:4.0,\nfile:///etc/passwd\n#EXT-X-ENDLIST\n")
            self._send(200, playlist.encode(), content_type="application/vnd.apple.mpegurl")
        elif path == "/clip.mp4" and VIDEO is not None:
            self._send(200, VIDEO.read_bytes(), content_type="video/mp4")
        else:
            self._send(404, INTERNAL_BODY.encode(), content_type="text/plain")

    def do_POST(self) -> None:
        path = self._count()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if path.startswith("/echo401/"):
            message = f"Incorrect API key provided: {self.headers.get('Authorization', '')}. You can find your API key..."
            self._send(401, json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode())
        elif path.startswith("/teapot/"):
            self._send(418, INTERNAL_BODY.encode(), content_type="text/plain")
        elif path.startswith("/notrelevant/"):
            body = json.loads(raw or b"{}")
            content = json.dumps({"relevant": False, "confidence": 0.99})
            answer = {"id": "chatcmpl-hostile", "object": "chat.completion", "created": 0, "model": body.get("model"),
                      "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                   "finish_reason": "stop"}],
                      "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
            self._send(200, json.dumps(answer).encode())
        else:
            self._send(404, INTERNAL_BODY.encode(), content_type="text/plain")


def _raw_listener() -> socket.socket:
    """Something listening that is not HTTP: it answers every connection like Redis, then closes."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)

    def serve() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                try:
                    connection.recv(65536)
                    connection.sendall(b"-ERR unknown command 'POST', with args beginning with: \r\n")
                except OSError:
                    pass

    threading.Thread(target=serve, daemon=True).start()
    return listener


class HostileServerProcess(ServerProcess):
    """The server as a child process of a test: `url`, `raw_port`, `stats()`, `stop()`."""

    module = "tests.hostile_outbound_server"

    def __init__(self, video: Path | None = None) -> None:
        super().__init__(*([str(video)] if video else []))
        if len(self.first_line) != 4:
            self.stop()
            raise RuntimeError(f"the hostile server named no raw port: {' '.join(self.first_line)}")
        self.raw_port = int(self.first_line[3])


def main() -> None:
    global VIDEO
    VIDEO = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    raw = _raw_listener()
    print(f"PORT {server.server_address[1]} RAW {raw.getsockname()[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        raw.close()


if __name__ == "__main__":
    main()
