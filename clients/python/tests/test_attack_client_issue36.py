"""An attacker's pass over the researcher's client (issue 36, finding 7) by someone who did not
write it (helper H8): the variations a hostile or compromised server tries after the tricks of
test_client_trust.py, served over real HTTP by conftest's threaded server on 127.0.0.1.

Broke and fixed here (each test failed before its fix):
- an answer compressed although `identity` was asked for was inflated in memory, a chunk at a
  time with no bound (two gzip layers: a 1 KB body became 64 MB at once);
- a redirect whose Location httpx cannot read (`data:,x`) left the client as httpx.InvalidURL,
  no RejudgeError (the command line printed a traceback);
- a version of 300 digits made a folder name the file system refuses (OSError, no RejudgeError).
"""
from __future__ import annotations

import gzip
import io
import stat
import tracemalloc
import zipfile

import pytest

from rejudge_client import APIError, Client, RejudgeError, VerificationError
from rejudge_client.errors import ReleaseFormatError
from rejudge_client.verify import extract_archive

from conftest import build_archive

TOKEN = "h8-attack-token"


def _zip(entries: list[tuple[str, bytes]], *, symlink: str | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in entries:
            info = zipfile.ZipInfo(name)
            if name == symlink:
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, data)
    return buf.getvalue()


# --- names and versions ---------------------------------------------------------------------------

@pytest.mark.parametrize("field, value", [
    ("name", ".."), ("name", "../x"), ("name", "/abs"), ("name", "C:evil"), ("name", "c:"), ("name", "demo\x00x"),
    ("name", "ｄemo"), ("name", "demo\n"), ("name", "Demo"), ("name", ""), ("name", "a" * 81), ("name", 7),
    ("name", "demo/"), ("name", "demo\\x"), ("name", "con"),  # 'con' is a valid slug: kept inside dest (below)
    ("version", "1"), ("version", True), ("version", 1.0), ("version", 0), ("version", -1), ("version", 10 ** 300),
    ("id", "1/../2"), ("id", 2 ** 64),
])
def test_names_versions_and_ids_are_checked_before_any_path(server, tmp_path, field, value):
    if (field, value) == ("name", "con"):
        pytest.skip("a valid slug on POSIX (a reserved device name on Windows only)")
    archive, files = build_archive("demo", 1)
    server.add_release(1, "demo", 1, archive, files)
    server.routes["/api/v1/releases/1/"][2][field] = value
    server.routes["/api/v1/releases/1/"][2].pop("slug")
    dest = tmp_path / "dest"
    with pytest.raises(RejudgeError):
        Client(server.url, token=TOKEN).download(1, dest)
    assert not dest.exists() or not any(dest.iterdir())
    assert sorted(p.name for p in tmp_path.iterdir()) in (["dest"], [])


# --- what is already in --dest ------------------------------------------------------------------

def test_a_symlink_planted_in_dest_is_never_written_through(server, tmp_path):
    archive, files = build_archive("demo", 1)
    server.add_release(1, "demo", 1, archive, files)
    dest, outside = tmp_path / "dest", tmp_path / "outside"
    dest.mkdir()
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("keep me")
    (dest / ".demo-v1.zip.part").symlink_to(victim)
    with pytest.raises(VerificationError, match="would not be a file directly inside"):
        Client(server.url, token=TOKEN).download(1, dest)
    assert victim.read_text() == "keep me"

    (dest / ".demo-v1.zip.part").unlink()
    (dest / "demo-v1").symlink_to(outside, target_is_directory=True)
    with pytest.raises(VerificationError, match="would not be a file directly inside"):
        Client(server.url, token=TOKEN).download(1, dest)
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]


# --- the archive's entries --------------------------------------------------------------------------

@pytest.mark.parametrize("entries, symlink", [
    ([("demo-v1/release.json", b"{}"), ("demo-v1/../evil.txt", b"x")], None),
    ([("demo-v1/release.json", b"{}"), ("../evil.txt", b"x")], None),
    ([("demo-v1/release.json", b"{}"), ("/tmp/evil.txt", b"x")], None),
    ([("demo-v1/release.json", b"{}"), ("C:/evil.txt", b"x")], None),
    ([("demo-v1/release.json", b"{}"), ("demo-v1\\..\\evil.txt", b"x")], None),
    ([("demo-v1/release.json", b"{}"), ("demo-v1/./qrels.txt", b"x")], None),
    ([("demo-v1/release.json", b"{}"), ("demo-v1/qrels.txt", b"a"), ("demo-v1/qrels.txt", b"b")], None),
    ([("demo-v1/release.json", b"{}"), ("demo-v1/link", b"/etc/passwd")], "demo-v1/link"),
    ([("demo-v1/release.json", b"{}"), ("other-v1/qrels.txt", b"x")], None),
    ([("demo-v1/release.json", b"{}"), ("evil.txt", b"x")], None),
    ([("demo-v1/release.json", b"{}"), ("demo-v1/a\x00b", b"x")], None),
])
def test_zip_entries_that_could_leave_the_folder_are_refused_before_writing(tmp_path, entries, symlink):
    archive = tmp_path / "a.zip"
    archive.write_bytes(_zip(entries, symlink=symlink))
    into = tmp_path / "into"
    into.mkdir()
    with pytest.raises((ReleaseFormatError, VerificationError)):
        extract_archive(archive, into, "demo-v1")
    assert list(into.iterdir()) == [] and not (tmp_path / "evil.txt").exists()


# --- origins, schemes and redirects ------------------------------------------------------------------

@pytest.mark.parametrize("archive_url", [
    "http://127.0.0.1:{other}/api/v1/releases/1/archive/", "//127.0.0.1:{other}/api/v1/releases/1/archive/",
    "https://127.0.0.1:{port}/api/v1/releases/1/archive/", "http://localhost:{port}/api/v1/releases/1/archive/",
    "http://127.0.0.1:{port}@127.0.0.1:{other}/api/v1/releases/1/archive/",
    "http://127.0.0.1.:{port}/api/v1/releases/1/archive/", "http://[::ffff:127.0.0.1]:{port}/x",
])
def test_an_archive_url_on_any_other_origin_is_refused_and_gets_no_token(server, other_server, tmp_path, archive_url):
    archive, files = build_archive("demo", 1)
    port, other = server.url.rsplit(":", 1)[1], other_server.url.rsplit(":", 1)[1]
    server.add_release(1, "demo", 1, archive, files, archive_url=archive_url.format(port=port, other=other))
    other_server.bodies["/api/v1/releases/1/archive/"] = archive
    with pytest.raises(APIError, match="not the server you configured"):
        Client(server.url, token=TOKEN).download(1, tmp_path)
    assert other_server.requests == []


def test_a_downgrade_from_the_configured_https_is_another_origin():
    client = Client("https://rejudge.example.org", token=TOKEN)
    for url in ("http://rejudge.example.org/api/v1/releases/1/archive/",
                "https://rejudge.example.org:8443/api/v1/releases/1/archive/",
                "https://rejudge.example.org.evil.test/api/v1/releases/1/archive/"):
        with pytest.raises(APIError, match="not the server you configured"):
            client._own(url, "archive_url")
    assert client._own("https://REJUDGE.example.org:443/x", "archive_url")


@pytest.mark.parametrize("location", ["file:///etc/passwd", "gopher://127.0.0.1:70/", "data:,x",
                                      "javascript:alert(1)", "ftp://127.0.0.1/x"])
def test_a_redirect_to_another_scheme_is_a_clear_refusal(server, tmp_path, location):
    archive, files = build_archive("demo", 1)
    server.add_release(1, "demo", 1, archive, files)
    del server.bodies["/api/v1/releases/1/archive/"]
    server.routes["/api/v1/releases/1/archive/"] = (302, {"Location": location}, b"")
    with pytest.raises(APIError):
        Client(server.url, token=TOKEN).download(1, tmp_path / "dest")
    assert not any((tmp_path / "dest").iterdir())


# --- what a body can do to memory ---------------------------------------------------------------

def _bomb(megabytes: int) -> bytes:
    return gzip.compress(gzip.compress(b"\0" * (megabytes << 20), 9), 9)


def test_a_compressed_json_answer_is_never_inflated_in_memory(server):
    """Two gzip layers (1 KB on the wire, 64 MB inflated) on the release list, which asks for
    nothing compressed: refused without holding the inflated bytes."""
    bomb = _bomb(64)
    assert len(bomb) < 100_000
    server.routes["/api/v1/releases/"] = (200, {"Content-Type": "application/json", "Content-Encoding": "gzip, gzip"},
                                          bomb)
    tracemalloc.start()
    try:
        with pytest.raises(APIError):
            Client(server.url, token=TOKEN).releases()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"{peak} bytes held at once"
    assert server.requests[0]["headers"].get("Accept-Encoding") == "identity"


def test_a_compressed_archive_is_refused_and_never_inflated(server, tmp_path):
    archive, files = build_archive("demo", 1)
    record = server.add_release(1, "demo", 1, archive, files)
    bomb = _bomb(64)
    del server.bodies["/api/v1/releases/1/archive/"]
    server.routes["/api/v1/releases/1/archive/"] = (200, {"Content-Type": "application/zip",
                                                          "Content-Encoding": "gzip, gzip"}, bomb)
    assert record["bytes"] < 100_000
    tracemalloc.start()
    try:
        with pytest.raises(RejudgeError):
            Client(server.url, token=TOKEN).download(1, tmp_path / "dest")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"{peak} bytes held at once"
    assert not any((tmp_path / "dest").iterdir())


def test_an_error_answer_s_body_is_read_only_up_to_its_cap(server):
    huge = b'{"detail": "' + b"x" * (8 << 20) + b'"}'
    server.routes["/api/v1/releases/"] = (500, {"Content-Type": "application/json"}, huge)
    with pytest.raises(APIError) as refused:
        Client(server.url, token=TOKEN).releases()
    assert len(str(refused.value)) < 1000

