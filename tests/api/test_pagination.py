"""Every paginated API list has a maximum page size, so `?limit=1000000` cannot ask the server
to load and serialize a whole table in one response."""
from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from annotation.models import Dataset
from api.pagination import MAX_PAGE_SIZE, PAGE_SIZE, RejudgePagination
from tests.factories import make_rater

pytestmark = pytest.mark.django_db


def _api_views(patterns=None, prefix=""):
    for entry in patterns if patterns is not None else get_resolver().url_patterns:
        if isinstance(entry, URLResolver):
            yield from _api_views(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern) and hasattr(entry.callback, "cls"):
            yield prefix + str(entry.pattern), entry.callback.cls


def test_every_paginated_list_uses_the_capped_pagination():
    paginated = {route: view.pagination_class for route, view in _api_views()
                 if getattr(view, "pagination_class", None) is not None and hasattr(view, "paginate_queryset")
                 and "get" in view.http_method_names and hasattr(view, "list")}
    assert len(paginated) >= 10  # datasets, runs, jobs, pools, my labels, reports, exports...
    assert {route: cls for route, cls in paginated.items() if not issubclass(cls, RejudgePagination)} == {}
    assert RejudgePagination.max_limit == MAX_PAGE_SIZE and PAGE_SIZE < MAX_PAGE_SIZE


def test_a_huge_limit_is_capped(as_role):
    Dataset.objects.bulk_create([Dataset(name=f"ds{i:05d}") for i in range(MAX_PAGE_SIZE + 5)])
    client = as_role("researcher")
    body = client.get("/api/v1/datasets/?limit=1000000").json()
    assert body["count"] == MAX_PAGE_SIZE + 5
    assert len(body["results"]) == MAX_PAGE_SIZE
    assert body["results"][0]["name"] == "ds00000"
    assert parse_qs(urlparse(body["next"]).query) == {"limit": [str(MAX_PAGE_SIZE)], "offset": [str(MAX_PAGE_SIZE)]}
    rest = client.get(body["next"]).json()
    assert [d["name"] for d in rest["results"]] == [f"ds{i:05d}" for i in range(MAX_PAGE_SIZE, MAX_PAGE_SIZE + 5)]


def test_default_and_small_pages(as_role):
    Dataset.objects.bulk_create([Dataset(name=f"ds{i:05d}") for i in range(PAGE_SIZE + 1)])
    client = as_role("admin")
    assert len(client.get("/api/v1/datasets/").json()["results"]) == PAGE_SIZE
    assert len(client.get("/api/v1/datasets/?limit=3").json()["results"]) == 3
    # Nonsense limits fall back to the default page instead of an error or an unbounded page.
    for bad in ("0", "-5", "abc"):
        assert len(client.get(f"/api/v1/datasets/?limit={bad}").json()["results"]) == PAGE_SIZE


def test_the_schema_states_the_cap(api, as_role):
    schema = as_role("admin").get("/api/v1/schema/?format=json").json()
    limit = next(p for p in schema["paths"]["/api/v1/datasets/"]["get"]["parameters"] if p["name"] == "limit")
    assert str(MAX_PAGE_SIZE) in limit["description"] and limit["schema"].get("maximum") == MAX_PAGE_SIZE


def test_the_raters_list_is_paginated(as_role):
    """GET raters/ grew with every crowd worker (138 rows and more, issue 22 finding 4): it pages
    like every other list, in user-name order."""
    for _ in range(PAGE_SIZE + 2):
        make_rater()
    client = as_role("admin")
    body = client.get("/api/v1/raters/").json()
    assert body["count"] >= PAGE_SIZE + 2 and len(body["results"]) == PAGE_SIZE
    names = [row["username"] for row in body["results"]]
    assert names == sorted(names) and set(body["results"][0]) == {"id", "username", "email", "paused", "pseudonym",
                                                                  "is_active"}
    rest = client.get(body["next"]).json()["results"]
    assert len(rest) == body["count"] - PAGE_SIZE and rest[0]["username"] > names[-1]
