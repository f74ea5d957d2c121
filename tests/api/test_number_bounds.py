"""Numbers a client sends are range-checked, and numbers stored before they were never break a page
(issue 22, findings 5 and 6).

Ids beyond what the database holds (64-bit signed on SQLite and PostgreSQL) answered 500 on SQLite
(OverflowError: Python int too large to convert to SQLite INTEGER) wherever they reached a query: in
a path, a query string or a body. They are a 404 in a path (no such object can exist) and a 400
naming the field in a query string or a body. This module runs on both databases (the CI's SQLite
pass runs it too)."""
from __future__ import annotations

import pytest
from django.test import Client
from drf_spectacular.generators import SchemaGenerator
from django.urls import get_resolver
from django.urls.converters import IntConverter
from django.urls.resolvers import URLPattern, URLResolver

from annotation.models import Label, PooledPair
from tests.api.api_world import build_world
from tests.factories import label_pair

pytestmark = pytest.mark.django_db

BIG = 10**20  # 21 digits, > 2**63
JUST_OVER = 2**63


@pytest.fixture
def world():
    return build_world()


def call(client_world, role, method, path, body=None):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=client_world.headers(role)["Authorization"])
    if method == "get":
        return client.get("/api/v1/" + path)
    return client.post("/api/v1/" + path, body or {}, format="json")


@pytest.mark.parametrize("big", [BIG, JUST_OVER, -JUST_OVER - 1])
@pytest.mark.parametrize(("role", "query", "param"), [
    ("rater", "my/labels/?pool={big}", "pool"),
    ("rater", "my/recent-answers/?pool={big}", "pool"),
    ("researcher", "reports/?pool={big}", "pool"),
    ("researcher", "reports/?dataset={big}", "dataset"),
    ("researcher", "pools/?dataset={big}", "dataset"),
    ("researcher", "exports/?dataset={big}", "dataset"),
    ("researcher", "ranking-studies/?dataset={big}", "dataset"),
    ("researcher", "pools/1/query-chart.svg?report={big}&run=1", "report"),  # read by a serializer
])
def test_huge_integer_query_parameters_are_a_400_naming_them(world, role, query, param, big):
    response = call(world, role, "get", query.format(big=big))
    assert response.status_code == 400, (response.status_code, response.content[:300])
    assert param in response.json()


@pytest.mark.parametrize(("role", "method", "path"), [
    ("rater", "post", "pools/{big}/next/"),
    ("researcher", "get", "datasets/{big}/runs/"),
    ("researcher", "get", "datasets/{big}/judgments/"),
    ("admin", "get", "pools/{big}/"),
    ("admin", "get", "pools/1/members/{big}/"),
])
def test_huge_ids_in_a_path_are_a_404(world, role, method, path):
    for big in (BIG, JUST_OVER):
        response = call(world, role, method, path.format(big=big))
        assert response.status_code == 404, (path, response.status_code, response.content[:300])
    largest = call(world, role, method, path.format(big=2**63 - 1))  # in range: the view's own answer
    assert largest.status_code < 500, (path, largest.status_code)


def test_huge_ids_in_a_page_path_are_a_404(world):
    client = Client()
    client.force_login(world.users["rater"])
    assert client.get(f"/judge/{BIG}/").status_code == 404
    assert client.get(f"/judge/{world.ids['pool']}/").status_code == 200


def test_no_route_uses_the_unbounded_int_converter():
    """Every integer in a path goes through the bounded converter, new routes included."""
    unbounded = []

    def walk(patterns, prefix=""):
        for p in patterns:
            converters = p.pattern.converters
            if any(isinstance(c, IntConverter) for c in converters.values()):
                unbounded.append(prefix + str(p.pattern))
            if isinstance(p, URLResolver):
                walk(p.url_patterns, prefix + str(p.pattern))
            else:
                assert isinstance(p, URLPattern)

    walk(get_resolver().url_patterns)
    assert unbounded == []


@pytest.mark.parametrize(("path", "body", "field"), [
    ("pools/{pool}/members/", {"raters": [1, BIG]}, "raters"),
    ("pools/build/", {"dataset": "{dataset}", "name": "p", "runs": [BIG]}, "runs"),
    ("pools/build/", {"dataset": BIG, "name": "p", "runs": [1]}, "dataset"),
    ("judgment-sets/{judgment_set}/evaluate/", {"runs": [BIG]}, "runs"),
    ("judgment-sets/{judgment_set}/judging-simulation/", {"runs": [BIG]}, "runs"),
    ("datasets/{dataset}/proxy-analysis/", {"matrices": [BIG]}, "matrices"),
    ("ranking-studies/{study}/members/", {"raters": [BIG]}, "raters"),
])
def test_huge_ids_in_a_body_are_a_400_naming_the_field(world, path, body, field):
    ids = world.ids
    body = {k: (ids["dataset"] if v == "{dataset}" else v) for k, v in body.items()}
    response = call(world, "admin", "post", path.format(**ids), body)
    assert response.status_code == 400, (response.status_code, response.content[:300])
    assert field in response.json(), response.json()


# --- finding 5: a label's seconds ---------------------------------------------------------------

def _submit(world, seconds):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=world.headers("rater")["Authorization"])
    body = {"client_id": f"c-{seconds}", "lease_id": world.ids["lease"], "value": "relevant", "seconds": seconds}
    return client.post("/api/v1/labels/", body, format="json")


def test_a_label_with_absurd_seconds_is_a_400_naming_seconds(world):
    response = _submit(world, 1e308)
    assert response.status_code == 400 and "seconds" in response.json()
    assert not Label.objects.exists()
    assert _submit(world, 12.5).status_code == 201


def test_stored_odd_seconds_never_break_the_rater_quality_report(world):
    """Labels stored before the bound (or written by a script) with seconds of 1e308 (two of them
    average to infinity), infinity or NaN: the admin's quality table still answers, null there."""
    rater = world.users["rater"]
    pairs = PooledPair.objects.filter(pool_id=world.ids["pool"], role=PooledPair.Role.POOL).exclude(
        leases__rater=rater)[:2]
    for pair in pairs:
        label_pair(rater, pair, "relevant", seconds=3.0)
    for odd in (1e308, float("inf"), float("nan")):
        Label.objects.filter(rater=rater).update(seconds=odd)
        response = call(world, "admin", "get", f"pools/{world.ids['pool']}/rater-quality/")
        assert response.status_code == 200, (odd, response.content[:300])
        (row,) = response.json()["raters"]
        assert row["time"]["mean_seconds"] in (None, 1e308), row["time"]
        reports = call(world, "admin", "get", f"reports/?pool={world.ids['pool']}")
        assert reports.status_code == 200


# --- every number field states its range -------------------------------------------------------

def _unbounded_numbers(schema: dict) -> list[str]:
    components = schema["components"]["schemas"]
    found, seen = [], set()

    def walk(node: dict, where: str) -> None:
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            if name not in seen:
                seen.add(name)
                walk(components[name], name)
            return
        if node.get("type") == "number" and not node.get("readOnly") and not {"minimum", "maximum"} <= set(node):
            found.append(where)
        for key, child in node.get("properties", {}).items():
            walk(child, f"{where}.{key}")
        if "items" in node:
            walk(node["items"], f"{where}[]")
        for key in ("allOf", "oneOf", "anyOf"):
            for child in node.get(key, []):
                walk(child, where)

    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                walk(parameter.get("schema", {}), f"{method.upper()} {path} ?{parameter['name']}")
            for content in operation.get("requestBody", {}).get("content", {}).values():
                walk(content["schema"], f"{method.upper()} {path} body")
    return sorted(set(found))


def test_every_float_a_client_sends_has_a_minimum_and_a_maximum():
    """A float field without a maximum took 1e308 (a label's seconds): stored, then averaged to
    infinity. Integers are bounded for every field at once (the JSON parser, query_int, <id:>);
    floats have no such one range, so each field states its own, and this keeps new ones honest."""
    assert _unbounded_numbers(SchemaGenerator().get_schema(request=None, public=True)) == []
