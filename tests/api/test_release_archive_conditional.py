"""The release archive endpoint honours Range and compares ETags as RFC 9110 says (issue 36,
finding 7): `Range: bytes=N-`, `N-M`, `-S` answer 206 with Content-Range, a range past the end 416,
If-Range keeps a range only for our strong ETag; If-None-Match is a weak comparison over a list of
tags, `*` included. From a local folder and from object storage (moto: streamed through the web
process, or redirected to a signed URL the store answers ranges for). The client's documented
resume resumes: a download cut by a proxy mid-archive is resumed with Range and answered 206."""
from __future__ import annotations

import hashlib
import socket
import threading

import pytest
import requests
from rejudge_client import Client, RejudgeError, verify
from rest_framework.test import APIClient

from annotation.services.accounts.users import api_token_for
from annotation.services.releases.create import release_create
from tests.annotation.services.reports.test_report_metrics import example_pool
from tests.factories import make_user
from tests.objectstore import object_store  # noqa: F401 (the session fixture)

pytestmark = pytest.mark.django_db


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


@pytest.fixture
def release(tmp_path):
    return release_create(pools=[example_pool(tmp_path)], name="example-fire", allow_unresolved=True)


@pytest.fixture
def reader():
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_for(user=make_user('researcher'))}")
    return client


def _archive(reader, release, **headers):
    return reader.get(f"/api/v1/releases/{release.pk}/archive/", **headers)


def _check_ranges(reader, release, data: bytes) -> None:
    n = len(data)
    etag = f'"{release.sha256}"'
    whole = _archive(reader, release)
    assert whole.status_code == 200 and whole["Accept-Ranges"] == "bytes" and _body(whole) == data

    for header, first, last in [("bytes=100-", 100, n - 1), ("bytes=10-19", 10, 19), ("bytes=-50", n - 50, n - 1),
                                (f"bytes=0-{n + 1000}", 0, n - 1), ("bytes = 5 - 9", 5, 9)]:
        part = _archive(reader, release, HTTP_RANGE=header)
        assert part.status_code == 206, header
        assert part["Content-Range"] == f"bytes {first}-{last}/{n}", header
        assert int(part["Content-Length"]) == last - first + 1 and part["ETag"] == etag
        assert _body(part) == data[first:last + 1], header

    for header in (f"bytes={n}-", f"bytes={n + 5}-{n + 9}", "bytes=-0"):
        refused = _archive(reader, release, HTTP_RANGE=header)
        assert refused.status_code == 416, header
        assert refused["Content-Range"] == f"bytes */{n}"

    # Ignored (the whole archive, 200): several ranges, a reversed one, another unit, nonsense.
    for header in ("bytes=0-1,5-6", "bytes=9-5", "items=0-5", "bytes=abc"):
        ignored = _archive(reader, release, HTTP_RANGE=header)
        assert ignored.status_code == 200 and _body(ignored) == data, header

    # If-Range: our strong tag keeps the range; another tag, our tag made weak, or a date do not.
    assert _archive(reader, release, HTTP_RANGE="bytes=100-", HTTP_IF_RANGE=etag).status_code == 206
    for validator in ('"0123"', f"W/{etag}", "Wed, 21 Oct 2015 07:28:00 GMT"):
        full = _archive(reader, release, HTTP_RANGE="bytes=100-", HTTP_IF_RANGE=validator)
        assert full.status_code == 200 and _body(full) == data, validator


def test_ranges_from_a_local_folder(release, reader):
    data = _body(_archive(reader, release))
    assert hashlib.sha256(data).hexdigest() == release.sha256 and len(data) > 1000
    _check_ranges(reader, release, data)


@pytest.mark.parametrize("header", ['W/"{sha}"', '"{sha}"', '"other", "{sha}"', 'W/"other", W/"{sha}"', "*"],
                         ids=["weak", "strong", "list", "weak-list", "star"])
def test_if_none_match_weak_listed_and_star_answer_304(release, reader, header):
    answer = _archive(reader, release, HTTP_IF_NONE_MATCH=header.format(sha=release.sha256))
    assert answer.status_code == 304
    assert answer["ETag"] == f'"{release.sha256}"' and not answer.content


def test_dates_are_compared_against_the_release_date(release, reader):
    from django.utils.http import http_date

    made = int(release.created_at.timestamp())
    whole = _archive(reader, release)
    assert whole["Last-Modified"] == http_date(made)
    # If-Unmodified-Since after the release passes (without a known date Django would answer any with 412).
    assert _archive(reader, release, HTTP_IF_UNMODIFIED_SINCE=http_date(made + 3600)).status_code == 200
    assert _archive(reader, release, HTTP_IF_UNMODIFIED_SINCE=http_date(made - 3600)).status_code == 412
    assert _archive(reader, release, HTTP_IF_MODIFIED_SINCE=http_date(made)).status_code == 304
    assert _archive(reader, release, HTTP_IF_MODIFIED_SINCE=http_date(made - 3600)).status_code == 200


def test_if_none_match_with_other_tags_answers_the_archive(release, reader):
    answer = _archive(reader, release, HTTP_IF_NONE_MATCH='"other", W/"also-other"')
    assert answer.status_code == 200 and hashlib.sha256(_body(answer)).hexdigest() == release.sha256
    # If-None-Match wins over Range (RFC 9110 13.2.2): a cached copy needs no part of it.
    assert _archive(reader, release, HTTP_IF_NONE_MATCH=f'"{release.sha256}"',
                    HTTP_RANGE="bytes=0-9").status_code == 304


@pytest.mark.objectstore
def test_ranges_from_object_storage_streamed_and_redirected(tmp_path, settings, reader, object_store):  # noqa: F811
    settings.STORAGES = settings.STORAGES | object_store.storages(object_store.new_bucket(),
                                                                  areas=settings.STORAGE_AREAS)
    release = release_create(pools=[example_pool(tmp_path)], name="example-fire", allow_unresolved=True)
    settings.REJUDGE_STORAGE_DOWNLOADS = "stream"
    data = _body(_archive(reader, release))
    assert hashlib.sha256(data).hexdigest() == release.sha256
    _check_ranges(reader, release, data)

    # Redirected: the store answers the range itself; the client's Range rides along the redirect.
    settings.REJUDGE_STORAGE_DOWNLOADS = "redirect"
    redirected = _archive(reader, release, HTTP_RANGE="bytes=100-")
    assert redirected.status_code == 302
    part = requests.get(redirected["Location"], headers={"Range": "bytes=100-"}, timeout=60)
    assert part.status_code == 206 and part.headers["Content-Range"] == f"bytes 100-{len(data) - 1}/{len(data)}"
    assert part.content == data[100:]
    assert _archive(reader, release, HTTP_IF_NONE_MATCH=f'W/"{release.sha256}"').status_code == 304


class CuttingProxy:
    """A TCP proxy on 127.0.0.1 in front of the live server that cuts the first archive answer
    after `keep` bytes of its body, and records each request's Range and each answer's status."""

    def __init__(self, upstream: str, keep: int):
        host, port = upstream.removeprefix("http://").split(":")
        self.upstream = (host, int(port))
        self.keep = keep
        self.cut = False
        self.exchanges: list = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(conn,), daemon=True).start()

    def _relay(self, conn):
        with conn, socket.create_connection(self.upstream) as up:
            request = b""
            while b"\r\n\r\n" not in request:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                request += chunk
            # One request per connection, closed by the server after its answer, so this thread
            # (and the live server's, with its database connection) ends with the exchange.
            line, _, rest = request.partition(b"\r\n")
            up.sendall(line + b"\r\nConnection: close\r\n" + rest)
            head = request.split(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
            ranges = [h.split(":", 1)[1].strip() for h in head[1:] if h.lower().startswith("range:")]
            exchange = {"path": head[0].split(" ")[1], "range": ranges[0] if ranges else None, "status": None}
            self.exchanges.append(exchange)
            cut_this = "/archive/" in exchange["path"] and not self.cut
            self.cut = self.cut or cut_this
            answer = b""
            while True:
                chunk = up.recv(65536)
                if not chunk:
                    break
                answer += chunk
                if exchange["status"] is None and b"\r\n" in answer:
                    exchange["status"] = int(answer.split(b" ", 2)[1])
                if cut_this:  # held back until the headers and `keep` bytes of the body are in
                    if b"\r\n\r\n" in answer and len(answer) >= answer.index(b"\r\n\r\n") + 4 + self.keep:
                        conn.sendall(answer[:answer.index(b"\r\n\r\n") + 4 + self.keep])
                        conn.shutdown(socket.SHUT_RDWR)
                        return
                    continue
                conn.sendall(chunk)
                answer = answer[:64]  # enough for the status line

    def close(self):
        self.sock.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("storage", ["local", pytest.param("bucket", marks=pytest.mark.objectstore)])
def test_the_client_resumes_a_cut_download_with_range_and_gets_206(live_server, tmp_path, settings, request,
                                                                     storage):
    if storage == "bucket":  # streamed through the web process, so the proxy sees the archive's bytes
        store = request.getfixturevalue("object_store")
        settings.STORAGES = settings.STORAGES | store.storages(store.new_bucket(), areas=settings.STORAGE_AREAS)
        settings.REJUDGE_STORAGE_DOWNLOADS = "stream"
    release = release_create(pools=[example_pool(tmp_path)], name="example-fire", allow_unresolved=True)
    token = api_token_for(user=make_user("researcher"))
    proxy = CuttingProxy(live_server.url, keep=1000)
    try:
        import httpx

        # One connection per request, so the proxy sees each request on its own connection.
        http = httpx.Client(headers={"Accept": "application/json"}, timeout=60,
                            limits=httpx.Limits(max_keepalive_connections=0))
        client = Client(proxy.url, token=token, http=http)
        with pytest.raises(RejudgeError, match=rf"stopped at 1000 of {release.bytes} bytes"):
            client.download("example-fire@v1", tmp_path / "downloads")
        assert (tmp_path / "downloads" / ".example-fire-v1.zip.part").stat().st_size == 1000

        folder = client.download("example-fire@v1", tmp_path / "downloads", keep_archive=True)
    finally:
        proxy.close()
    archive = [e for e in proxy.exchanges if "/archive/" in e["path"]]
    assert [(e["range"], e["status"]) for e in archive] == [(None, 200), ("bytes=1000-", 206)]
    kept = tmp_path / "downloads" / "example-fire-v1.zip"
    assert hashlib.sha256(kept.read_bytes()).hexdigest() == release.sha256
    assert len(verify(folder)) == len(release.files)
