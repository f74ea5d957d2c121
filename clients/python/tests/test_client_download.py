import hashlib
import io
import os
import zipfile

import pytest
from conftest import QRELS, build_archive

from rejudge_client import Client, RejudgeError, ReleaseFormatError, VerificationError, verify


def _leftovers(dest):
    return sorted(p.name for p in dest.iterdir())


def test_download_streams_verifies_and_extracts(server, tmp_path):
    archive, files = build_archive("demo", 2)
    with zipfile.ZipFile(io.BytesIO(archive)) as zf:  # the platform lists the two manifests as well
        manifests = [{"path": p, "bytes": len(zf.read(f"demo-v2/{p}")),
                      "sha256": hashlib.sha256(zf.read(f"demo-v2/{p}")).hexdigest()}
                     for p in ("release.json", "SHA256SUMS")]
    server.add_release(5, "demo", 2, archive, files + manifests)

    folder = Client(server.url).download("demo@v2", tmp_path)

    assert folder == tmp_path / "demo-v2"
    assert (folder / "qrels.txt").read_text() == QRELS
    assert _leftovers(tmp_path) == ["demo-v2"]  # no .part, no extraction folder
    assert "Authorization" not in server.requests[-1]["headers"]  # anonymous read
    assert len(verify(folder)) == len(files) + 2  # + release.json and SHA256SUMS
    # a second call finds the folder, re-verifies it and downloads nothing
    before = len(server.requests)
    assert Client(server.url).download(5, tmp_path) == folder
    assert not any("archive" in r["path"] for r in server.requests[before:])


def test_archive_redirected_to_object_storage_without_the_token(server, other_server, tmp_path):
    archive, files = build_archive("demo", 1)
    other_server.bodies["/bucket/demo-v1.zip"] = archive
    server.add_release(1, "demo", 1, archive, files)
    del server.bodies["/api/v1/releases/1/archive/"]
    server.routes["/api/v1/releases/1/archive/"] = (302, {"Location": f"{other_server.url}/bucket/demo-v1.zip"}, b"")
    server.token = "s3cret"

    folder = Client(server.url, token="s3cret").download(1, tmp_path, keep_archive=True)

    assert (folder / "release.json").is_file()
    assert hashlib.sha256((tmp_path / "demo-v1.zip").read_bytes()).hexdigest() == hashlib.sha256(archive).hexdigest()
    assert [r["path"] for r in other_server.requests] == ["/bucket/demo-v1.zip"]
    assert "Authorization" not in other_server.requests[0]["headers"]


def test_archive_checksum_mismatch_leaves_nothing(server, tmp_path):
    archive, files = build_archive("demo", 2)
    server.add_release(5, "demo", 2, archive, files, sha256="0" * 64)

    with pytest.raises(VerificationError, match=r"archive of demo@v2: .* the server announced .* SHA-256 0{64}"):
        Client(server.url).download(5, tmp_path)
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("kwargs, message", [
    # same size, other bytes: extracted, then caught by its checksum
    ({"tamper": {"qrels.txt": QRELS.replace("c1 1", "c1 0").encode()}},
     r"qrels.txt: SHA-256 is [0-9a-f]{64}, SHA256SUMS says"),
    # another size: refused before it is written
    ({"tamper": {"qrels.txt": b"q1 0 c1 0\n"}}, r"qrels.txt: the archive's entry is 10 bytes, release.json says 50"),
    ({"extra": {"notes.txt": b"x"}}, r"notes.txt: present but not listed in release.json \(nor by the server\)"),
    ({"drop_from_meta": "labels.csv"}, r"labels.csv: present but not listed in release.json"),
])
def test_a_file_that_does_not_match_is_named_and_no_folder_is_left(server, tmp_path, kwargs, message):
    archive, files = build_archive("demo", 2, **kwargs)
    server.add_release(5, "demo", 2, archive, files)

    with pytest.raises(VerificationError, match=message):
        Client(server.url).download(5, tmp_path)
    assert _leftovers(tmp_path) == []


def test_release_json_must_agree_with_the_server_file_list(server, tmp_path):
    archive, files = build_archive("demo", 2)
    server_files = [dict(f, sha256="f" * 64) if f["path"] == "fire.json" else f for f in files]
    server.add_release(5, "demo", 2, archive, server_files)

    with pytest.raises(VerificationError, match=r"fire.json: SHA-256 is [0-9a-f]{64}, the server says f{64}"):
        Client(server.url).download(5, tmp_path)
    assert _leftovers(tmp_path) == []


def test_unsafe_or_misnamed_archives_are_refused(server, tmp_path):
    archive, files = build_archive("demo", 2, extra={"../evil.txt": b"x"})
    server.add_release(5, "demo", 2, archive, files)
    with pytest.raises(ReleaseFormatError, match=r"entry 'demo-v2/\.\./evil.txt' is not a plain relative path"):
        Client(server.url).download(5, tmp_path)
    archive, files = build_archive("demo", 2, top="other-v9")
    server.add_release(6, "demo", 2, archive, files)
    with pytest.raises(ReleaseFormatError, match=r"top folder is 'other-v9', expected 'demo-v2'"):
        Client(server.url).download(6, tmp_path)
    assert _leftovers(tmp_path) == []
    assert not (tmp_path.parent / "evil.txt").exists()


def test_an_interrupted_download_resumes_where_it_stopped(server, tmp_path):
    archive, files = build_archive("demo", 2)
    server.add_release(5, "demo", 2, archive, files)
    server.cut_after = 100

    with pytest.raises(RejudgeError, match=r"stopped at 100 of \d+ bytes .*run the download again to resume"):
        Client(server.url).download(5, tmp_path)
    assert (tmp_path / ".demo-v2.zip.part").stat().st_size == 100
    assert not (tmp_path / "demo-v2").exists()

    folder = Client(server.url).download(5, tmp_path)

    archive_requests = [r for r in server.requests if r["path"].endswith("/archive/")]
    assert archive_requests[-1]["headers"]["Range"] == "bytes=100-"
    assert verify(folder) and _leftovers(tmp_path) == ["demo-v2"]


def test_a_server_ignoring_ranges_restarts_the_file_cleanly(server, tmp_path):
    archive, files = build_archive("demo", 2)
    server.add_release(5, "demo", 2, archive, files)
    (tmp_path / ".demo-v2.zip.part").write_bytes(b"stale bytes of another attempt")
    server.ignore_range = True

    folder = Client(server.url).download(5, tmp_path)

    assert server.requests[-1]["headers"]["Range"] == "bytes=30-"
    assert (folder / "qrels.txt").read_text() == QRELS and _leftovers(tmp_path) == ["demo-v2"]


def test_a_stale_part_file_that_fails_the_checksum_is_removed(server, tmp_path):
    archive, files = build_archive("demo", 2)
    server.add_release(5, "demo", 2, archive, files)
    (tmp_path / ".demo-v2.zip.part").write_bytes(b"X" * 50)  # not the archive's first 50 bytes

    with pytest.raises(VerificationError, match="a new download starts from scratch"):
        Client(server.url).download(5, tmp_path)
    assert _leftovers(tmp_path) == []
    assert Client(server.url).download(5, tmp_path).is_dir()


def test_a_tampered_folder_already_there_is_reported(server, tmp_path):
    archive, files = build_archive("demo", 2)
    server.add_release(5, "demo", 2, archive, files)
    folder = Client(server.url).download(5, tmp_path)
    with open(folder / "labels.csv", "a") as fh:
        fh.write("3,q2,c4,rater 3,1,majority\n")
    os.remove(folder / "CITATION.cff")

    with pytest.raises(VerificationError, match=r"(?s)CITATION.cff: listed in SHA256SUMS but missing.*"
                                                r"labels.csv: SHA-256 is"):
        Client(server.url).download(5, tmp_path)
