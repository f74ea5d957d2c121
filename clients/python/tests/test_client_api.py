import pytest
from conftest import build_archive

from rejudge_client import APIError, Client


def test_releases_follows_the_pages_and_sends_the_token(server):
    a1, f1 = build_archive("demo", 1)
    a2, f2 = build_archive("demo", 2)
    r1 = server.add_release(1, "demo", 1, a1, f1, list_too=False)
    r2 = server.add_release(2, "demo", 2, a2, f2, list_too=False)
    brief = lambda r: {k: v for k, v in r.items() if k != "files"}  # noqa: E731

    def page(handler):
        if handler.path.endswith("?page=2"):  # a relative "next" link, as some servers give
            return 200, {}, {"count": 2, "next": None, "previous": "/api/v1/releases/", "results": [brief(r1)]}
        return 200, {}, {"count": 2, "next": "/api/v1/releases/?page=2", "previous": None, "results": [brief(r2)]}
    server.routes["/api/v1/releases/"] = page
    server.token = "s3cret"

    releases = Client(server.url, token="s3cret").releases()

    assert [r.slug for r in releases] == ["demo@v2", "demo@v1"]
    assert releases[0].bytes == len(a2) and releases[0].files is None
    assert all(req["headers"].get("Authorization") == "Token s3cret" for req in server.requests)
    assert [req["path"] for req in server.requests] == ["/api/v1/releases/", "/api/v1/releases/?page=2"]


def test_release_by_id_slug_and_name(server):
    a1, f1 = build_archive("demo", 1)
    a2, f2 = build_archive("demo", 2)
    server.add_release(7, "demo", 1, a1, f1)
    server.add_release(9, "demo", 2, a2, f2)
    client = Client(server.url + "/api/v1")  # the API root is accepted as the base too

    assert client.release(7).slug == "demo@v1"
    assert client.release("9").version == 2
    by_slug = client.release("demo@v1")
    assert (by_slug.id, by_slug.files) == (7, f1)  # the detail record, with its files
    assert client.release("demo").slug == "demo@v2"  # a bare name is its newest version
    with pytest.raises(APIError, match=r"no release 'other@v1' .*releases: demo@v1, demo@v2"):
        client.release("other@v1")


def test_refusals_name_the_url_the_status_and_what_to_do(server):
    server.token = "s3cret"
    with pytest.raises(APIError, match=r"releases/: 401 Unauthorized: Authentication credentials were not "
                                       r"provided\. \(pass an API token") as err:
        Client(server.url).releases()
    assert err.value.status == 401
    server.token = None
    with pytest.raises(APIError, match=r"releases/3/: 404 Not Found"):
        Client(server.url).release(3)
    server.routes["/api/v1/releases/"] = (200, {"Content-Type": "text/html"}, b"<html>login</html>")
    with pytest.raises(APIError, match="not JSON"):
        Client(server.url).releases()
