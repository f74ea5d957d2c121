"""A release server that lies: the tricks a hostile or broken platform could play on the
researcher's client, served over real HTTP from a separate process.

Run as a process (`python hostile_release_server.py`): it binds two ports on 127.0.0.1, the
"platform" the client is pointed at and a "foreign" origin (another port is another origin), and
prints `PORTS <platform> <foreign>` on its first line. Each trick lives under its own prefix, so
one process serves them all: point the client at `http://127.0.0.1:<platform>/<trick>`.

    honest            a well-formed release 1 (demo@v1), the reference the others bend
    traversal         release 1 is named '/../../../../outside/esc'; its archive is a short body
    bad-version       version '1/../../x'
    bad-files         the API's file list names '../../evil.txt'
    bomb              qrels.txt's zip entry is 400 MB of zeros (a ~400 KB archive); release.json
                      and the API say 50 bytes
    bomb-declared     the same entry, and release.json and the API declare 400 MB too (honest
                      about the size: only the client's total cap stops it)
    bomb-hidden       the zip's headers say qrels.txt is 50 bytes, its compressed stream holds
                      400 MB of zeros
    foreign-archive   archive_url is an absolute URL on the foreign origin
    foreign-next      the list's `next` is on the foreign origin
    redirect          the archive answers 302 to the foreign origin (as object storage would)
    truncated         the archive's first answer stops halfway (Content-Length says all);
                      later ones honour Range
    overlong          the archive is 1 MB longer than the `bytes` the API announces
    bad-range         a Range request gets 206 with a Content-Range for another start

Every request is logged on the origin that got it; GET /_log on either port answers
[{"origin": "platform"|"foreign", "path", "authorization", "range"}] and POST /_reset empties it.
"""
from __future__ import annotations

import hashlib
import io
import json
import sys
import threading
import zipfile
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NAME, VERSION, RID = "demo", 1, 1
QRELS = b"q1 0 c1 1\nq1 0 c2 0\nq1 0 c3 1\nq2 0 c4 1\nq3 0 c5 1\n"  # 50 bytes
BOMB_BYTES = 400 * 1000 * 1000
TRICKS = ("honest", "traversal", "bad-version", "bad-files", "bomb", "bomb-declared", "bomb-hidden",
          "foreign-archive", "foreign-next", "redirect", "truncated", "overlong", "bad-range")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _zeros_entry(zf: zipfile.ZipFile, path: str, size: int) -> None:
    info = zipfile.ZipInfo(path, date_time=(2026, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    block = bytes(1 << 20)
    with zf.open(info, "w", force_zip64=True) as out:
        left = size
        while left:
            out.write(block[:min(left, len(block))])
            left -= min(left, len(block))


def build(top: str, *, bomb: str | None = None) -> tuple[bytes, list]:
    """(zip bytes, the API's file list) of a small release. `bomb`: 'entry' makes qrels.txt's entry
    400 MB of zeros while the manifests say 50 bytes; 'declared' also declares 400 MB in them;
    'hidden' writes the 400 MB stream but the zip's central directory says 50 bytes (with the CRC
    of 50 zeros), as the manifests do."""
    files = {"qrels.txt": QRELS, "README.md": b"# demo\n"}
    entries = [{"path": p, "bytes": len(b), "sha256": sha(b)} for p, b in sorted(files.items())]
    if bomb == "declared":
        zeros = hashlib.sha256()
        block = bytes(1 << 20)
        for _ in range(BOMB_BYTES // len(block)):
            zeros.update(block)
        entries = [dict(e, bytes=BOMB_BYTES, sha256=zeros.hexdigest()) if e["path"] == "qrels.txt" else e
                   for e in entries]
    meta = json.dumps({"format": "rejudge-release/1", "name": NAME, "version": VERSION, "files": entries}).encode()
    sums = "".join(f"{e['sha256']}  {e['path']}\n" for e in entries) + f"{sha(meta)}  release.json\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{top}/release.json", meta)
        zf.writestr(f"{top}/SHA256SUMS", sums)
        zf.writestr(f"{top}/README.md", files["README.md"])
        if bomb:
            _zeros_entry(zf, f"{top}/qrels.txt", BOMB_BYTES)
            if bomb == "hidden":  # the central directory is written from these at close
                info = zf.getinfo(f"{top}/qrels.txt")
                info.file_size, info.CRC = len(QRELS), zlib.crc32(bytes(len(QRELS)))
        else:
            zf.writestr(f"{top}/qrels.txt", QRELS)
    return buf.getvalue(), entries + [{"path": "release.json", "bytes": len(meta), "sha256": sha(meta)},
                                      {"path": "SHA256SUMS", "bytes": len(sums), "sha256": sha(sums.encode())}]


class State:
    def __init__(self, platform_url: str, foreign_url: str):
        self.platform, self.foreign = platform_url, foreign_url
        self.log: list = []
        self.lock = threading.Lock()
        self.cut_done: set = set()
        self._archives: dict = {}

        # Built before the ports are announced (a bomb takes a second or two to compress), so no
        # request waits on a build.
        top = f"{NAME}-v{VERSION}"
        for trick in TRICKS:
            bomb = {"bomb": "entry", "bomb-declared": "declared", "bomb-hidden": "hidden"}.get(trick)
            self._archives[trick] = build(top, bomb=bomb)
        archive, files = self._archives["overlong"]  # a body 1 MB longer than the size and checksum announced
        self._archives["overlong-body"] = (archive + bytes(1 << 20), files)

    def archive(self, trick: str) -> tuple[bytes, list]:
        """(zip bytes, the API's file list) of the trick's release."""
        return self._archives[trick]

    def record(self, trick: str, handler) -> dict:
        archive, files = self.archive(trick)
        record = {"id": RID, "name": NAME, "version": VERSION, "slug": f"{NAME}@v{VERSION}", "title": "demo",
                  "sha256": sha(archive), "bytes": len(archive), "files": files,
                  "archive_url": f"{self.platform}/{trick}/api/v1/releases/{RID}/archive/"}
        if trick == "traversal":
            record |= {"name": "/../../../../outside/esc", "slug": "/../../../../outside/esc@v1"}
        elif trick == "bad-version":
            record |= {"version": "1/../../x", "slug": "demo@v1/../../x"}
        elif trick == "bad-files":
            record["files"] = files + [{"path": "../../evil.txt", "bytes": 1, "sha256": "0" * 64}]
        elif trick == "foreign-archive":
            record["archive_url"] = f"{self.foreign}/bucket/{trick}.zip"
        return record


def make_handler(state: State, origin: str):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, status: int, body: bytes, headers: dict | None = None, *, length: int | None = None,
                  cut: int | None = None):
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body) if length is None else length))
            self.end_headers()
            if cut is not None:
                self.wfile.write(body[:cut])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
            self.wfile.write(body)

        def _json(self, data, status: int = 200):
            self._send(status, json.dumps(data).encode(), {"Content-Type": "application/json"})

        def do_POST(self):
            if self.path == "/_reset":
                with state.lock:
                    state.log.clear()
                    state.cut_done.clear()
                return self._json({"ok": True})
            self._json({"detail": "no"}, 405)

        def do_GET(self):
            if self.path == "/_log":
                with state.lock:
                    return self._json(list(state.log))
            with state.lock:
                state.log.append({"origin": origin, "path": self.path,
                                  "authorization": self.headers.get("Authorization"),
                                  "range": self.headers.get("Range")})
            if origin == "foreign":
                return self._foreign()
            trick, _, rest = self.path.lstrip("/").partition("/")
            if trick not in TRICKS:
                return self._json({"detail": "Not found."}, 404)
            rest = "/" + rest
            record = state.record(trick, self)
            brief = {k: v for k, v in record.items() if k != "files"}
            if rest == "/api/v1/releases/":
                following = f"{state.foreign}/{trick}/api/v1/releases/?page=2" if trick == "foreign-next" else None
                return self._json({"count": 1, "next": following, "previous": None, "results": [brief]})
            if rest == f"/api/v1/releases/{RID}/":
                return self._json(record)
            if rest == f"/api/v1/releases/{RID}/archive/":
                return self._archive(trick)
            return self._json({"detail": "Not found."}, 404)

        def _foreign(self):
            path = self.path.split("?")[0]
            if path.startswith("/bucket/"):
                trick = path.removeprefix("/bucket/").removesuffix(".zip")
                if trick in TRICKS:
                    return self._send(200, state.archive(trick)[0], {"Content-Type": "application/zip"})
            # Whatever the client follows here: a page that would add a release.
            return self._json({"count": 1, "next": None, "previous": None, "results": []})

        def _archive(self, trick: str):
            archive = state.archive(trick)[0]
            if trick == "redirect":
                return self._send(302, b"", {"Location": f"{state.foreign}/bucket/{trick}.zip"})
            if trick == "overlong":
                archive = state._archives["overlong-body"][0]
            wanted = self.headers.get("Range")
            if trick == "truncated":
                with state.lock:
                    first = trick not in state.cut_done
                    state.cut_done.add(trick)
                if first:
                    return self._send(200, archive, {"Content-Type": "application/zip"}, cut=len(archive) // 2)
            if wanted and trick in ("truncated", "bad-range"):
                start = int(wanted.split("=")[1].split("-")[0])
                shown = start + 7 if trick == "bad-range" else start
                return self._send(206, archive[start:], {"Content-Range": f"bytes {shown}-{len(archive) - 1}/"
                                                         f"{len(archive)}", "Content-Type": "application/zip"})
            if trick == "traversal":
                # A short body: Content-Length says all of it, half arrives.
                return self._send(200, archive, {"Content-Type": "application/zip"}, cut=len(archive) // 2)
            return self._send(200, archive, {"Content-Type": "application/zip"})

    return Handler


def main() -> None:
    platform = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    foreign = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    state = State(f"http://127.0.0.1:{platform.server_address[1]}", f"http://127.0.0.1:{foreign.server_address[1]}")
    platform.RequestHandlerClass = make_handler(state, "platform")
    foreign.RequestHandlerClass = make_handler(state, "foreign")
    for server in (platform, foreign):
        server.daemon_threads = True
    threading.Thread(target=foreign.serve_forever, daemon=True).start()
    print(f"PORTS {platform.server_address[1]} {foreign.server_address[1]}", flush=True)
    try:
        platform.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
