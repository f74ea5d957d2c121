"""The client trusts nothing a server tells it (issue 36, finding 7), against a hostile release
server run as its own process (hostile_release_server.py: one trick per URL prefix, a second port
as a foreign origin, a log of every request with its Authorization and Range headers)."""
from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from rejudge_client import APIError, Client, RejudgeError, VerificationError

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
SERVER_MODELS = REPO / "annotation" / "models" / "releases.py"
TOKEN = "s3cret-token"
# What a download may write to disk in the tests below that run it in a child process: far above
# an honest release's few KB, far below the 400 MB the bombs hold.
FILE_SIZE_LIMIT = 32 << 20


class Hostile:
    def __init__(self):
        self.process = subprocess.Popen([sys.executable, str(HERE / "hostile_release_server.py")],
                                        stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline().split()
        assert line[:1] == ["PORTS"], line
        self.platform = f"http://127.0.0.1:{line[1]}"
        self.foreign = f"http://127.0.0.1:{line[2]}"

    def url(self, trick: str) -> str:
        return f"{self.platform}/{trick}"

    def log(self) -> list:
        with urllib.request.urlopen(f"{self.platform}/_log", timeout=120) as resp:
            return json.loads(resp.read())

    def reset(self) -> None:
        urllib.request.urlopen(urllib.request.Request(f"{self.platform}/_reset", method="POST"), timeout=120).read()

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()


@pytest.fixture(scope="module")
def hostile():
    server = Hostile()
    yield server
    server.stop()


@pytest.fixture
def fresh(hostile):
    hostile.reset()
    return hostile


def _tree(folder: Path) -> list:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _download_in_child(url: str, dest: Path, *extra: str) -> subprocess.CompletedProcess:
    """`rejudge-client download 1` in a child process whose files may not pass FILE_SIZE_LIMIT
    (RLIMIT_FSIZE): a client that writes a bomb out is stopped by the kernel (SIGXFSZ), which
    the test sees as a non-1 exit status, instead of filling the disk."""
    script = (f"import resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, ({FILE_SIZE_LIMIT}, {FILE_SIZE_LIMIT}));"
              "from rejudge_client.cli import main; sys.exit(main(sys.argv[1:]))")
    env = {**os.environ, "REJUDGE_TOKEN": TOKEN}
    return subprocess.run([sys.executable, "-c", script, "download", "1", "--url", url, "--dest", str(dest), *extra],
                          capture_output=True, text=True, env=env, timeout=600)


def test_the_client_carries_the_servers_release_name_rule():
    """The client cannot import the server; its copy of the slug rule must be the server's."""
    from rejudge_client.names import RELEASE_NAME_PATTERN

    if not SERVER_MODELS.is_file():
        pytest.skip("the client is tested outside the Rejudge repository")
    tree = ast.parse(SERVER_MODELS.read_text())
    server_rule = next(node.value.value for node in tree.body if isinstance(node, ast.AnnAssign | ast.Assign)
                       and "RELEASE_NAME_PATTERN" in ast.unparse(node.targets[0] if isinstance(node, ast.Assign)
                                                                 else node.target))
    assert RELEASE_NAME_PATTERN == server_rule
    for name, ok in [("msrvtt-fire", True), ("a1", True), ("-a", False), ("a--b", False), ("A", False),
                     ("../x", False), ("/../../../../outside/esc", False), ("a/b", False), ("a\nb", False)]:
        assert bool(re.fullmatch(RELEASE_NAME_PATTERN, name)) is ok, name


def test_the_honest_release_downloads_with_the_token_on_the_platform_only(fresh, tmp_path):
    folder = Client(fresh.url("honest"), token=TOKEN).download(1, tmp_path)
    assert (folder / "qrels.txt").read_bytes().startswith(b"q1 0 c1 1")
    assert _tree(tmp_path) == ["demo-v1", "demo-v1/README.md", "demo-v1/SHA256SUMS", "demo-v1/qrels.txt",
                               "demo-v1/release.json"]
    assert {r["authorization"] for r in fresh.log()} == {f"Token {TOKEN}"}


def test_a_traversal_name_writes_and_deletes_nothing_outside_dest(fresh, tmp_path):
    dest = tmp_path / "a" / "b" / "c" / "dest"
    dest.mkdir(parents=True)
    (tmp_path / "outside").mkdir()  # the folder the name climbs to exists: nothing may land in it
    (tmp_path / "outside" / "esc-v1.zip.part").write_bytes(b"a file of the user's")
    before = _tree(tmp_path)

    with pytest.raises(APIError, match=r"field 'name' is '/\.\./\.\./\.\./\.\./outside/esc', not a release name"):
        Client(fresh.url("traversal"), token=TOKEN).download(1, dest)

    assert _tree(tmp_path) == before
    assert (tmp_path / "outside" / "esc-v1.zip.part").read_bytes() == b"a file of the user's"
    assert not any("archive" in r["path"] for r in fresh.log())  # refused before any download


@pytest.mark.parametrize("trick, message", [
    ("bad-version", r"field 'version' is '1/\.\./\.\./x', not a positive integer"),
    ("bad-files", r"field 'files\[\d+\]\.path' is '\.\./\.\./evil\.txt', not a plain relative path"),
])
def test_versions_and_file_paths_are_checked_before_any_path_is_made(fresh, tmp_path, trick, message):
    with pytest.raises(APIError, match=message):
        Client(fresh.url(trick), token=TOKEN).download(1, tmp_path)
    assert _tree(tmp_path) == []
    assert not (tmp_path.parent.parent / "evil.txt").exists()


def test_a_zip_entry_larger_than_declared_is_never_written(fresh, tmp_path):
    """A ~390 KB archive whose qrels.txt entry unpacks to 400 MB, which release.json and the API
    say is 50 bytes: refused before a byte of it is written."""
    done = _download_in_child(fresh.url("bomb"), tmp_path)
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    assert "qrels.txt: the archive's entry is 400000000 bytes, release.json says 50; not extracted" in done.stderr
    assert _tree(tmp_path) == []


def test_declared_sizes_beyond_the_total_cap_are_refused(fresh, tmp_path):
    """The same entry declared honestly as 400 MB everywhere: only the client's cap stands between
    it and the disk."""
    done = _download_in_child(fresh.url("bomb-declared"), tmp_path, "--max-bytes", str(16 << 20))
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    assert re.search(r"its files declare 4000\d+ bytes in all, more than the limit of 16777216", done.stderr)
    assert _tree(tmp_path) == []


def test_a_stream_longer_than_its_headers_stops_at_the_declared_size(fresh, tmp_path):
    """The zip's own headers say 50 bytes (as the manifests do) over a 400 MB stream: extraction
    stops at 50 bytes, and the file then fails its checksum."""
    done = _download_in_child(fresh.url("bomb-hidden"), tmp_path)
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    assert "qrels.txt: SHA-256 is" in done.stderr
    assert _tree(tmp_path) == []


def test_an_archive_url_on_another_origin_is_refused_and_gets_no_token(fresh, tmp_path):
    with pytest.raises(APIError, match=rf"archive_url points to {re.escape(fresh.foreign)}/bucket/foreign-archive"
                                       rf"\.zip, which is not the server you configured"):
        Client(fresh.url("foreign-archive"), token=TOKEN).download(1, tmp_path)
    assert [r for r in fresh.log() if r["origin"] == "foreign"] == []
    assert _tree(tmp_path) == []


def test_a_next_page_on_another_origin_is_refused_and_gets_no_token(fresh):
    with pytest.raises(APIError, match=r"the next page points to .*, which is not the server you configured"):
        Client(fresh.url("foreign-next"), token=TOKEN).releases()
    assert [r for r in fresh.log() if r["origin"] == "foreign"] == []


def test_a_redirect_to_object_storage_is_followed_without_the_token(fresh, tmp_path):
    folder = Client(fresh.url("redirect"), token=TOKEN).download(1, tmp_path)
    assert (folder / "release.json").is_file()
    foreign = [r for r in fresh.log() if r["origin"] == "foreign"]
    assert [r["path"] for r in foreign] == ["/bucket/redirect.zip"] and foreign[0]["authorization"] is None
    assert all(r["authorization"] == f"Token {TOKEN}" for r in fresh.log() if r["origin"] == "platform")


def test_a_truncated_body_stops_inside_dest_and_the_next_call_resumes_with_range(fresh, tmp_path):
    client = Client(fresh.url("truncated"), token=TOKEN)
    size = client.release(1).bytes
    with pytest.raises(RejudgeError, match=rf"stopped at {size // 2} of {size} bytes .*run the download again"):
        client.download(1, tmp_path)
    assert _tree(tmp_path) == [".demo-v1.zip.part"]

    folder = client.download(1, tmp_path)

    archive_requests = [r for r in fresh.log() if r["path"].endswith("/archive/")]
    assert [r["range"] for r in archive_requests] == [None, f"bytes={size // 2}-"]
    assert (folder / "qrels.txt").is_file() and _tree(tmp_path)[0] == "demo-v1"


def test_a_body_longer_than_announced_stops_at_the_announced_size(fresh, tmp_path):
    with pytest.raises(VerificationError, match=r"the server sent more than the \d+ bytes it announced"):
        Client(fresh.url("overlong"), token=TOKEN).download(1, tmp_path)
    assert _tree(tmp_path) == []


def test_a_206_for_another_start_restarts_the_file(fresh, tmp_path):
    client = Client(fresh.url("bad-range"), token=TOKEN)
    with urllib.request.urlopen(f"{fresh.url('honest')}/api/v1/releases/1/archive/", timeout=30) as resp:
        archive = resp.read()
    (tmp_path / ".demo-v1.zip.part").write_bytes(archive[:100])
    fresh.reset()

    folder = client.download(1, tmp_path)

    ranges = [r["range"] for r in fresh.log() if r["path"].endswith("/archive/")]
    assert ranges == ["bytes=100-", None]  # the lying 206 is dropped, the whole archive fetched again
    assert (folder / "qrels.txt").is_file()
