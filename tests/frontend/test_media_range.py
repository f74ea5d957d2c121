"""Clip files are served with HTTP Range support so the browser can seek."""
from __future__ import annotations

import pytest

from frontend.views.media import parse_range
from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def video(settings):
    path = settings.MEDIA_ROOT / "clips" / "a.mp4"
    path.parent.mkdir(parents=True)
    path.write_bytes(bytes(range(256)) * 40)  # 10,240 bytes
    return path


def signed_in(client):
    # An admin may fetch any file; who else may is tested in test_media_access.py.
    client.force_login(make_user("admin"))
    return client


def test_range_request_gets_206_with_the_bytes(client, video):
    response = signed_in(client).get("/media/clips/a.mp4", HTTP_RANGE="bytes=100-199")
    assert response.status_code == 206
    assert response["Content-Range"] == "bytes 100-199/10240"
    assert response["Content-Length"] == "100"
    assert b"".join(response.streaming_content) == video.read_bytes()[100:200]


def test_open_ended_and_suffix_ranges(client, video):
    c = signed_in(client)
    tail = c.get("/media/clips/a.mp4", HTTP_RANGE="bytes=10000-")
    assert tail.status_code == 206 and tail["Content-Range"] == "bytes 10000-10239/10240"
    suffix = c.get("/media/clips/a.mp4", HTTP_RANGE="bytes=-40")
    assert b"".join(suffix.streaming_content) == video.read_bytes()[-40:]


def test_whole_file_and_unsatisfiable_range(client, video):
    c = signed_in(client)
    whole = c.get("/media/clips/a.mp4")
    assert whole.status_code == 200 and whole["Accept-Ranges"] == "bytes"
    bad = c.get("/media/clips/a.mp4", HTTP_RANGE="bytes=20000-")
    assert bad.status_code == 416 and bad["Content-Range"] == "bytes */10240"


def test_media_needs_login_and_stays_inside_media_root(client, video):
    assert client.get("/media/clips/a.mp4").status_code == 302
    c = signed_in(client)
    assert c.get("/media/../settings.py").status_code == 404
    assert c.get("/media/clips/missing.mp4").status_code == 404


def test_parse_range():
    assert parse_range("bytes=0-0", 10) == (0, 0)
    assert parse_range("bytes=5-100", 10) == (5, 9)
    assert parse_range("bytes=-3", 10) == (7, 9)
    assert parse_range("bytes=10-", 10) is None
    assert parse_range("bytes=4-2", 10) is None
    assert parse_range("items=0-1", 10) is None
