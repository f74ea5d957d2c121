"""What a token call on the queue skips (issue 40), and that skipping it changes no answer: DRF's
session check without a session, and the content negotiation of a request that asks for JSON or
anything. DRF's own negotiation (rest_framework.negotiation) is the oracle for the latter."""
from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.test import APIClient, APIRequestFactory

from annotation.services.accounts.users import api_token_for
from api.authentication import SessionAuthentication
from api.negotiation import StaffBrowsableContentNegotiation
from tests.factories import make_pool_with_runs, make_rater, make_user

pytestmark = [pytest.mark.django_db]

ACCEPTS = [None, "*/*", "application/json", "application/json; indent=4", "text/html", "",
           "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "application/xml", "*/*;q=0.5",
           "application/json, text/plain, */*", "image/png"]


def _choice(negotiation, request, renderers):
    try:
        renderer, media_type = negotiation.select_renderer(request, renderers)
    except NotAcceptable:
        return "406"
    return type(renderer), media_type


@pytest.mark.parametrize("query", ["", "?format=json", "?format=api"])
@pytest.mark.parametrize("accept", ACCEPTS)
def test_staff_get_the_renderer_drf_s_negotiation_chooses_for_any_accept_header(accept, query):
    # For staff the browsable API is allowed, so the site's negotiation must choose exactly as DRF's.
    headers = {} if accept is None else {"HTTP_ACCEPT": accept}
    django_request = APIRequestFactory().get(f"/api/v1/pools/{query}", **headers)
    django_request.user = make_user("admin")
    request = Request(django_request)
    renderers = [cls() for cls in api_settings.DEFAULT_RENDERER_CLASSES]
    assert _choice(StaffBrowsableContentNegotiation(), request, renderers) == \
        _choice(DefaultContentNegotiation(), request, renderers)


@pytest.mark.parametrize("accept", [None, "*/*", "application/json"])
def test_a_call_asking_for_json_or_anything_is_answered_without_parsing_its_header(accept, monkeypatch):
    def parse(*args):
        raise AssertionError("the Accept header was parsed")

    monkeypatch.setattr(DefaultContentNegotiation, "_get_parsed_accept_list", parse)
    headers = {} if accept is None else {"HTTP_ACCEPT": accept}
    request = Request(APIRequestFactory().get("/api/v1/my/pools/", **headers))
    renderers = [cls() for cls in api_settings.DEFAULT_RENDERER_CLASSES]
    renderer, media_type = StaffBrowsableContentNegotiation().select_renderer(request, renderers)
    assert (type(renderer), media_type) == (type(renderers[0]), "application/json")
    # a format asked for in the query goes through DRF's negotiation
    with pytest.raises(AssertionError, match="parsed"):
        StaffBrowsableContentNegotiation().select_renderer(
            Request(APIRequestFactory().get("/api/v1/my/pools/?format=json", **headers)), renderers)


def test_a_token_call_does_not_load_the_session_s_user(monkeypatch):
    from django.contrib import auth

    loaded = []
    real = auth.get_user
    monkeypatch.setattr(auth, "get_user", lambda request: loaded.append(request.path) or real(request))
    rater = make_rater()
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Token {api_token_for(user=rater)}")
    assert c.get("/api/v1/my/pools/").status_code == 200
    assert loaded == []
    # a browser with a session: its user comes from the session, as before
    browser = Client()
    browser.force_login(rater)
    assert browser.get("/api/v1/my/pools/").status_code == 200
    assert loaded == ["/api/v1/my/pools/"]


def test_a_session_s_write_without_its_csrf_token_is_still_refused():
    pool, _ = make_pool_with_runs(captions=2, clips=3, depth=1)
    rater = make_rater()
    from annotation.services.accounts.raters import memberships_grant

    memberships_grant(pool=pool, users=[rater])
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(rater)
    refused = browser.post(f"/api/v1/pools/{pool.pk}/next/", {}, content_type="application/json")
    assert refused.status_code == 403 and "CSRF" in refused.json()["detail"]
    # with a token instead, no CSRF token is needed (a script, not a browser)
    c = APIClient(enforce_csrf_checks=True)
    c.credentials(HTTP_AUTHORIZATION=f"Token {api_token_for(user=rater)}")
    assert c.post(f"/api/v1/pools/{pool.pk}/next/", {}, format="json").status_code == 200


def test_a_user_set_on_the_request_by_other_means_is_still_authenticated_by_session():
    # No session at all, but the request's user set directly (a RequestFactory test, another
    # middleware): DRF's session authentication takes it, and so does the site's.
    user = make_user("admin")
    django_request = APIRequestFactory().get("/api/v1/pools/")
    django_request.user = user
    assert SessionAuthentication().authenticate(Request(django_request)) == (user, None)
