"""Fixtures for the client's tests: a release archive built here as rejudge-release/1 describes it,
and a small threaded HTTP server on 127.0.0.1 that serves the releases API (real HTTP, nothing of
httpx is mocked)."""
from __future__ import annotations

import hashlib
import io
import json
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

QRELS = "q1 0 c1 1\nq1 0 c2 0\nq1 0 c3 1\nq2 0 c4 1\nq3 0 c5 1\n"
LABELS = ("pair_id,query_id,clip_id,rater,label,aggregation\n"
          "1,q1,0042,rater 1,1,majority\n2,q1,c2,rater 2,0,majority\n")
LEADERBOARD_CSV = ("run,original_C@1,corrected_C@1,original_rank,corrected_rank\n"
                   "good,0.5,0.75,1,1\nweak,0.25,0.5,2,2\n")
CHANGES = {"previous": "demo@v1", "added": 1, "changed": [{"query_id": "q1", "clip_id": "c2", "from": 1, "to": 0,
                                                          "reason": "adjudication"}]}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def release_files(name="demo", version=2) -> dict:
    return {
        "qrels.txt": QRELS.encode(),
        "labels.csv": LABELS.encode(),
        "fire.json": json.dumps({"q1": {"c1": 1}}).encode(),
        "agreement.json": json.dumps({"krippendorff_alpha": 0.8}).encode(),
        "leaderboard.json": json.dumps({"runs": ["good", "weak"]}).encode(),
        "leaderboard.csv": LEADERBOARD_CSV.encode(),
        "leaderboard.svg": b"<svg xmlns='http://www.w3.org/2000/svg'/>",
        "changes.json": json.dumps(CHANGES).encode(),
        "README.md": f"# {name} v{version}\n".encode(),
        "croissant.json": b"{}",
        "CITATION.cff": b"cff-version: 1.2.0\n",
    }


def build_archive(name="demo", version=2, *, files=None, tamper=None, extra=None, drop_from_meta=None,
                  top=None) -> tuple:
    """The zip's bytes and the release.json ``files`` list. ``tamper`` replaces a file's bytes
    after the manifests are written; ``extra`` adds unlisted files; ``drop_from_meta`` leaves a
    file out of release.json."""
    files = dict(files or release_files(name, version))
    entries = [{"path": p, "bytes": len(b), "sha256": sha(b)} for p, b in sorted(files.items())]
    meta = {"format": "rejudge-release/1", "name": name, "version": version, "slug": f"{name}@v{version}",
            "files": [e for e in entries if e["path"] != drop_from_meta]}
    files["release.json"] = json.dumps(meta, indent=2).encode()
    sums = "".join(f"{sha(b)}  {p}\n" for p, b in sorted(files.items()))
    files["SHA256SUMS"] = sums.encode()
    files.update(tamper or {})
    files.update(extra or {})
    top = top or f"{name}-v{version}"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in files.items():
            zf.writestr(f"{top}/{path}" if top != "." else path, data)
    return buf.getvalue(), meta["files"]


def api_record(rid, name, version, archive: bytes, files, base="") -> dict:
    return {"id": rid, "name": name, "version": version, "slug": f"{name}@v{version}", "title": f"{name} corrected",
            "dataset": "demo", "created_at": "2026-11-26T12:00:00Z", "sha256": sha(archive), "bytes": len(archive),
            "archive_url": f"{base}/api/v1/releases/{rid}/archive/", "files": files}


class Server:
    """Routes: path -> (status, headers, body) or a callable(handler) -> (status, headers, body).
    Archives (``bodies``) honour Range requests unless ``ignore_range``; ``cut_after`` closes the
    connection after that many body bytes, once."""

    def __init__(self):
        self.routes = {}
        self.bodies = {}
        self.requests = []
        self.ignore_range = False
        self.cut_after = None
        self.token = None  # when set, every route but the bodies' needs it
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                outer.requests.append({"path": self.path, "headers": dict(self.headers)})
                path = self.path.split("?")[0]
                if path in outer.bodies:
                    return outer._serve_body(self, outer.bodies[path])
                if outer.token and self.headers.get("Authorization") != f"Token {outer.token}":
                    return outer._send(self, 401, {}, json.dumps({"detail": "Authentication credentials were "
                                                                  "not provided."}).encode())
                route = outer.routes.get(path)
                if route is None:
                    return outer._send(self, 404, {}, b'{"detail": "Not found."}')
                status, headers, body = route(self) if callable(route) else route
                if not isinstance(body, bytes):
                    body = json.dumps(body).encode()
                    headers = {"Content-Type": "application/json", **headers}
                outer._send(self, status, headers, body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @staticmethod
    def _send(handler, status, headers, body):
        handler.send_response(status)
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def _serve_body(self, handler, body: bytes):
        start = 0
        wanted = handler.headers.get("Range")
        if wanted and not self.ignore_range:
            start = int(wanted.split("=")[1].split("-")[0])
            if start >= len(body):
                return self._send(handler, 416, {"Content-Range": f"bytes */{len(body)}"}, b"")
            handler.send_response(206)
            handler.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            handler.send_response(200)
        handler.send_header("Content-Type", "application/zip")
        handler.send_header("Content-Length", str(len(body) - start))
        handler.end_headers()
        chunk = body[start:]
        if self.cut_after is not None:
            cut, self.cut_after = self.cut_after, None
            handler.wfile.write(chunk[:cut])
            handler.wfile.flush()
            handler.close_connection = True
            handler.connection.shutdown(2)
            return
        handler.wfile.write(chunk)

    def add_release(self, rid, name, version, archive, files, *, list_too=True, **overrides):
        record = {**api_record(rid, name, version, archive, files, self.url), **overrides}
        self.routes[f"/api/v1/releases/{rid}/"] = (200, {}, record)
        self.bodies[f"/api/v1/releases/{rid}/archive/"] = archive
        if list_too:
            listing = self.routes.setdefault("/api/v1/releases/", (200, {}, {"count": 0, "next": None,
                                                                             "previous": None, "results": []}))
            listing[2]["results"].append({k: v for k, v in record.items() if k != "files"})
            listing[2]["count"] += 1
        return record

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    srv = Server()
    yield srv
    srv.close()


@pytest.fixture
def other_server():
    srv = Server()
    yield srv
    srv.close()
