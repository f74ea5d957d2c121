"""Malformed bodies get a JSON 4xx naming the field, never a 500 (issue 12, finding 4).

Each test sends the exact body from the finding, then checks that a well-formed body to the same
route still works, so a fix that refuses everything would fail here too."""
from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model

from annotation.models import Label, PooledPair
from annotation.services.accounts.raters import memberships_grant
from tests.factories import make_pool_with_runs, make_rater

pytestmark = pytest.mark.django_db

DEEP = "[" * 5000 + "]" * 5000


@pytest.fixture
def pool_and_rater():
    pool, _ = make_pool_with_runs()
    rater = make_rater()
    memberships_grant(pool=pool, users=[rater])
    return pool, rater


@pytest.fixture
def admin(as_role):
    return as_role("admin")


def rater_client(user):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(user)
    return client


def upload(client, url: str, content: bytes, name: str):
    handle = io.BytesIO(content)
    handle.name = name
    return client.post(url, {"file": handle}, format="multipart")


def assert_json_400(response):
    assert response.status_code == 400, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json")
    return response.json()


def refused_at(response) -> list[tuple[str, int | None, str | None]]:
    body = assert_json_400(response)
    return [(e["file"], e["line"], e["field"]) for e in body["errors"]]


# --- JSON bodies ------------------------------------------------------------------------------

@pytest.mark.parametrize("body", [DEEP, '{"exclude": ' + DEEP + "}", "[" * 100 + "]" * 100])
def test_deeply_nested_json_to_next_is_a_400(pool_and_rater, body):
    pool, rater = pool_and_rater
    client = rater_client(rater)
    response = client.post(f"/api/v1/pools/{pool.pk}/next/", body, content_type="application/json")
    assert "nested" in assert_json_400(response)["detail"]
    ok = client.post(f"/api/v1/pools/{pool.pk}/next/", {"exclude": []}, format="json")
    assert ok.status_code == 200 and ok.json()["assignment"] is not None


def test_deeply_nested_json_to_labels_is_a_400(pool_and_rater):
    pool, rater = pool_and_rater
    client = rater_client(rater)
    assert "nested" in assert_json_400(client.post("/api/v1/labels/", DEEP, content_type="application/json"))["detail"]
    assert not Label.objects.exists()
    assignment = client.post(f"/api/v1/pools/{pool.pk}/next/", {}, format="json").json()["assignment"]
    # A label names what it answers by the assignment's key (the lease token; pair_id before it).
    key = "pair_id" if "pair_id" in assignment else "lease_id"
    ok = client.post("/api/v1/labels/", {"client_id": "c1", key: assignment[key], "value": "relevant"}, format="json")
    assert ok.status_code == 201


def test_json_nested_within_the_limit_still_parses(pool_and_rater):
    """The depth limit refuses absurd nesting only: a normal body with nested lists passes parsing and
    is judged by the serializer, which names the field."""
    pool, rater = pool_and_rater
    response = rater_client(rater).post(f"/api/v1/pools/{pool.pk}/next/", '{"exclude": [[1]]}',
                                        content_type="application/json")
    assert "exclude" in assert_json_400(response)


def test_known_pairs_with_a_bare_list_body_is_a_400_naming_items(pool_and_rater, admin):
    pool, _ = pool_and_rater
    url = f"/api/v1/pools/{pool.pk}/known-pairs/"
    for body in ("[null,null]", "null", '"x"', '{"items": [null]}', '{"items": {"a": 1}}'):
        errors = assert_json_400(admin.post(url, body, content_type="application/json"))
        assert "items" in errors or "non_field_errors" in errors, (body, errors)
    assert not PooledPair.objects.filter(pool=pool, role="gold").exists()
    ok = admin.post(url, {"items": [{"caption": "q1", "clip": "v1", "answer": "relevant"}]}, format="json")
    assert ok.status_code == 201 and ok.json() == {"added": 1}


# --- CSV uploads: raters and known pairs ------------------------------------------------------

BIG = "x" * (128 * 1024 + 10)


def test_known_pairs_csv_with_a_field_over_128k_names_file_line_and_field(pool_and_rater, admin):
    pool, _ = pool_and_rater
    url = f"/api/v1/pools/{pool.pk}/known-pairs/"
    content = f"caption,clip,answer,role,explanation\nq1,v1,relevant,gold,ok\nq2,v2,relevant,training,{BIG}\n".encode()
    assert refused_at(upload(admin, url, content, "gold.csv")) == [("gold.csv", 3, "explanation")]
    quoted = f'caption,clip,answer\nq1,v1,relevant\n"{BIG}",v2,relevant\n'.encode()
    assert refused_at(upload(admin, url, quoted, "gold.csv")) == [("gold.csv", 3, "caption")]
    assert not PooledPair.objects.filter(pool=pool, role__in=["gold", "training"]).exists()


def test_known_pairs_csv_with_nul_names_the_field(pool_and_rater, admin):
    pool, _ = pool_and_rater
    content = b"caption,clip,answer,role,explanation\nq1,v1,relevant,training,a\x00b\n"
    response = upload(admin, f"/api/v1/pools/{pool.pk}/known-pairs/", content, "gold.csv")
    assert refused_at(response) == [("gold.csv", 2, "explanation")]


@pytest.mark.parametrize(("content", "line", "field"), [
    (f"username,email\nfine,f@example.org\nbig,{BIG}\n".encode(), 3, "email"),
    (f"username\nfine\n{BIG}\n".encode(), 3, "username"),
    (b"username,email\nfine,f@example.org\nn\x00ul,x@example.org\n", 3, "username"),
    (b"username,email,password\nfine,f@example.org,pw\x00pw-long\n", 2, "password"),
    (b"username,email\nfine,not-an-email\n", 2, "email"),
    (b"username,email\nfine,f@example.org\n<b>x</b>,x@example.org\n", 3, "username"),
    (("username\n" + "u" * 200 + "\n").encode(), 2, "username"),
])
def test_raters_csv_bad_values_name_file_line_and_field(admin, content, line, field):
    before = get_user_model().objects.count()
    assert refused_at(upload(admin, "/api/v1/raters/import/", content, "raters.csv")) == [("raters.csv", line, field)]
    assert get_user_model().objects.count() == before


def test_raters_csv_good_file_still_imports(admin):
    content = b"username,email\nr.one,one@example.org\nr-two@lab,\n"
    response = upload(admin, "/api/v1/raters/import/", content, "raters.csv")
    assert response.status_code == 201
    assert [r["username"] for r in response.json()["created"]] == ["r.one", "r-two@lab"]


@pytest.mark.parametrize(("body", "field"), [
    ({"username": "<b>x</b>"}, "username"),
    ({"username": "u" * 151}, "username"),
    ({"username": "ok", "email": "nope"}, "email"),
    ({"username": "a\x00b"}, "username"),
])
def test_create_rater_refuses_bad_values_naming_the_field(admin, body, field):
    before = get_user_model().objects.count()
    response = admin.post("/api/v1/raters/", body, format="json")
    assert field in assert_json_400(response)
    assert get_user_model().objects.count() == before


def test_create_rater_with_good_values(admin):
    response = admin.post("/api/v1/raters/", {"username": "jo.smith+1", "email": "jo@example.org"}, format="json")
    assert response.status_code == 201 and response.json()["username"] == "jo.smith+1"


# --- dataset upload: the media template -------------------------------------------------------

@pytest.mark.parametrize("template", [
    "{video_id.__class__}", "{video_id[0]}", "{0}", "{}", "{name}", "{video_id!r}.mp4", "{video_id", "x}",
    "../{video_id}.mp4", "/etc/{video_id}", "//evil.example/{video_id}.mp4", "javascript:alert({video_id})",
    "ftp://host/{video_id}.mp4", "%2e%2e/%2e%2e/api/v1/{video_id}/", "x/..%5c{video_id}.mp4",
])
def test_dataset_upload_refuses_a_bad_media_template_naming_the_field(admin, template):
    handle = io.BytesIO(b'{"kind": "clip", "id": "c1"}\n')
    handle.name = "m.jsonl"
    response = admin.post("/api/v1/datasets/import/", {"file": handle, "name": "d", "media_template": template},
                          format="multipart")
    assert "media_template" in assert_json_400(response)


def test_dataset_upload_accepts_good_media_templates(admin):
    for n, template in enumerate(("msrvtt/{video_id}.mp4", "https://cdn.example/{video_id}/{clip_id}.webm", "")):
        handle = io.BytesIO(b'{"kind": "clip", "id": "c1"}\n')
        handle.name = "m.jsonl"
        response = admin.post("/api/v1/datasets/import/", {"file": handle, "name": f"d{n}", "media_template": template},
                              format="multipart")
        assert response.status_code == 202, response.content


# --- found by probing what the schema did not list: query strings, NUL in paths, overflowing numbers

@pytest.mark.parametrize(("query", "param"), [
    ("pools/?dataset=\u00b2", "dataset"),  # '²' passes str.isdigit(), not int()
    ("pools/?dataset=" + "9" * 5000, "dataset"),  # int() refuses over 4,300 digits
    ("pools/{pool}/stats/?hours=99999999999", "hours"),  # past the last date Python can hold
    ("pools/{pool}/stats/?hours=\u00b2", "hours"),
    ("reports/?pool=\u00b2", "pool"),
    ("reports/?kind=a%00b", "kind"),  # PostgreSQL cannot compare text holding NUL
    ("exports/?dataset=\u00b2", "dataset"),
])
def test_bad_query_parameters_are_a_400_naming_them(pool_and_rater, admin, query, param):
    pool, _ = pool_and_rater
    response = admin.get("/api/v1/" + query.format(pool=pool.pk))
    assert param in assert_json_400(response)


def test_good_query_parameters_still_filter(pool_and_rater, admin):
    pool, _ = pool_and_rater
    assert [p["id"] for p in admin.get(f"/api/v1/pools/?dataset={pool.dataset_id}").json()["results"]] == [pool.pk]
    assert admin.get(f"/api/v1/pools/?dataset={pool.dataset_id + 1000}").json()["results"] == []
    assert admin.get("/api/v1/pools/?dataset=").json()["count"] == 1  # empty means no filter
    stats = admin.get(f"/api/v1/pools/{pool.pk}/stats/?hours=24")
    assert stats.status_code == 200 and stats.json()["per_hour"] == []


def test_nul_in_a_path_is_a_400_naming_the_path(pool_and_rater):
    _, rater = pool_and_rater
    for path in ("/api/v1/leases/a%00b/heartbeat/", "/api/v1/ranking-leases/a%00b/release/", "/media/a%00b.mp4"):
        response = rater_client(rater).post(path) if "leases" in path else rater_client(rater).get(path)
        assert assert_json_400(response) == {"path": ["must not contain a NUL character (%00)"]}
    assert rater_client(rater).post("/api/v1/leases/nosuchtoken/heartbeat/").status_code == 404


def test_json_numbers_beyond_a_float_are_a_400(pool_and_rater, admin):
    """1e309 parses as infinity: it was stored (a label's seconds) and then could not be rendered."""
    pool, rater = pool_and_rater
    client = rater_client(rater)
    assignment = client.post(f"/api/v1/pools/{pool.pk}/next/", {}, format="json").json()["assignment"]
    key = "pair_id" if "pair_id" in assignment else "lease_id"
    body = '{"client_id": "inf", "%s": %s, "value": "relevant", "seconds": 1e309}' % (
        key, f'"{assignment[key]}"' if key == "lease_id" else assignment[key])
    assert "out of range" in assert_json_400(client.post("/api/v1/labels/", body, content_type="application/json"))["detail"]
    assert not Label.objects.exists()
    report = '{"kind": "agreement", "params": {"confidence": -1e400}}'
    response = admin.post(f"/api/v1/pools/{pool.pk}/reports/", report, content_type="application/json")
    assert "out of range" in assert_json_400(response)["detail"]
    fine = client.post("/api/v1/labels/", body.replace("1e309", "2.5"), content_type="application/json")
    assert fine.status_code == 201


def test_seeds_are_bounded(pool_and_rater, admin):
    pool, _ = pool_and_rater
    body = {"dataset": pool.dataset_id, "name": "p2", "runs": list(pool.runs.values_list("pk", flat=True)),
            "seed": 2**63}
    assert "seed" in assert_json_400(admin.post("/api/v1/pools/build/", body, format="json"))
    assert admin.post("/api/v1/pools/build/", body | {"seed": 7}, format="json").status_code == 202


def test_the_same_known_pair_twice_is_refused_naming_where(pool_and_rater, admin):
    """Found by tests/annotation/formats/test_import_fuzz.py: it broke the pool's unique constraint (a 500)."""
    pool, _ = pool_and_rater
    url = f"/api/v1/pools/{pool.pk}/known-pairs/"
    content = b"caption,clip,answer\nq1,v1,relevant\nq2,v2,relevant\nq1,v1,not_relevant\n"
    assert refused_at(upload(admin, url, content, "gold.csv")) == [("gold.csv", 4, "clip")]
    items = [{"caption": "q1", "clip": "v1", "answer": "relevant"}, {"caption": "q1", "clip": "v1", "answer": "relevant"}]
    assert "item 2" in str(assert_json_400(admin.post(url, {"items": items}, format="json")))
    as_training = [items[0], items[1] | {"role": "training"}]  # the same pair may be gold and training
    assert admin.post(url, {"items": as_training}, format="json").json() == {"added": 2}
    assert not PooledPair.objects.filter(pool=pool, role="gold", caption__external_id="q2").exists()
