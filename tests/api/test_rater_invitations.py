"""Raters who can log in (issue 39, finding 3): a rater made without a password gets a one-use,
expiring invitation link to set their own (single create and every row of a CSV import), an admin
can reset a password from the raters page's API, and the link's page sets it and signs them in."""
from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.models import RaterInvitation
from annotation.services.accounts.invitations import invitation_create
from annotation.services.accounts.raters import raters_import_csv
from tests.factories import make_rater, make_user

pytestmark = pytest.mark.django_db
NEW_PASSWORD = "a-rater's own 42"


def api_as(user) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def token_of(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[1]


def can_log_in(username: str, password: str) -> bool:
    return Client().post("/login/", {"username": username, "password": password}).status_code == 302


def set_password(url: str, password: str = NEW_PASSWORD, again: str | None = None, client: Client | None = None):
    client = client or Client()
    path = "/" + url.split("/", 3)[3]
    return client, client.post(path, {"password": password, "password_again": password if again is None else again})


# --- the findings, as they were --------------------------------------------------------------


def test_a_rater_created_without_a_password_gets_a_link_and_can_then_log_in():
    admin = make_user("admin")
    created = api_as(admin).post("/api/v1/raters/", {"username": "nopw"}, format="json")
    assert created.status_code == 201
    url = created.json()["invitation_url"]
    assert url.startswith("http://testserver/invite/") and created.json()["invitation_expires_in_days"] == 7
    assert not can_log_in("nopw", NEW_PASSWORD)
    client, response = set_password(url)
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").wsgi_request.user.username == "nopw"  # signed in by the link
    assert can_log_in("nopw", NEW_PASSWORD)


def test_a_rater_created_with_a_password_gets_no_link():
    created = api_as(make_user("admin")).post("/api/v1/raters/", {"username": "withpw", "password": "pw-12345678"},
                                              format="json")
    assert created.json()["invitation_url"] is None and not RaterInvitation.objects.exists()
    assert can_log_in("withpw", "pw-12345678")


def test_a_csv_import_gives_every_row_without_a_password_a_link_and_no_generated_password():
    upload = SimpleUploadedFile("raters.csv", b"username,email,password\nann,,\nbob,b@example.org,\ncid,,pw-cid-1234\n",
                                content_type="text/csv")
    response = api_as(make_user("admin")).post("/api/v1/raters/import/", {"file": upload}, format="multipart")
    assert response.status_code == 201
    body = response.json()
    assert [r["username"] for r in body["created"]] == ["ann", "bob", "cid"]
    assert [i["username"] for i in body["invitations"]] == ["ann", "bob"]
    User = get_user_model()
    # No password was made that nobody was shown: the accounts wait for their links.
    assert not User.objects.get(username="ann").has_usable_password()
    assert not User.objects.get(username="bob").has_usable_password()
    assert can_log_in("cid", "pw-cid-1234")
    for invitation in body["invitations"]:
        set_password(invitation["url"], f"{invitation['username']}-pw-1234")
        assert can_log_in(invitation["username"], f"{invitation['username']}-pw-1234")


def test_the_service_import_for_callers_without_links_makes_no_usable_password_either():
    [user] = raters_import_csv(content=b"username\nquiet\n")
    assert not user.has_usable_password() and RaterInvitation.objects.filter(user=user).count() == 1


# --- the link ------------------------------------------------------------------------------


def test_only_the_tokens_sha256_is_stored():
    rater = make_rater()
    issued = invitation_create(user=rater)
    row = RaterInvitation.objects.get(user=rater)
    assert row.token_sha256 == hashlib.sha256(issued.token.encode()).hexdigest()
    assert issued.token not in str(list(RaterInvitation.objects.values_list()))


def test_the_page_shows_a_form_for_a_working_link_and_works_once():
    rater = make_rater(username="once")
    url = f"http://testserver/invite/{invitation_create(user=rater).token}/"
    page = Client().get(url)
    assert page.status_code == 200 and b'name="password"' in page.content and b"once" in page.content
    set_password(url)
    again = Client().get(url)
    assert again.status_code == 410 and b"already used" in again.content and b'name="password"' not in again.content
    _, second = set_password(url, "another-pw-999")
    assert second.status_code == 410 and can_log_in("once", NEW_PASSWORD) and not can_log_in("once", "another-pw-999")


def test_an_expired_link_says_so():
    rater = make_rater()
    issued = invitation_create(user=rater)
    RaterInvitation.objects.filter(pk=issued.invitation.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = Client().get(f"/invite/{issued.token}/")
    assert response.status_code == 410 and b"expired" in response.content


def test_an_unknown_link_says_so():
    response = Client().get("/invite/not-a-token/")
    assert response.status_code == 410 and b"not valid" in response.content


def test_passwords_go_through_djangos_validators_and_must_match():
    rater = make_rater(username="strict")
    url = f"http://testserver/invite/{invitation_create(user=rater).token}/"
    _, short = set_password(url, "short")
    assert short.status_code == 400 and b"too short" in short.content
    _, differ = set_password(url, NEW_PASSWORD, again=NEW_PASSWORD + "x")
    assert differ.status_code == 400 and b"differ" in differ.content
    assert RaterInvitation.objects.get(user=rater).used_at is None  # still usable after a refusal
    _, ok = set_password(url)
    assert ok.status_code == 302


def test_an_admins_reset_makes_a_new_link_and_revokes_the_old_one():
    admin, rater = make_user("admin"), make_rater(username="forgetful")
    old = invitation_create(user=rater).token
    response = api_as(admin).post(f"/api/v1/raters/{rater.pk}/password-reset/")
    assert response.status_code == 201 and response.json()["username"] == "forgetful"
    new_url = response.json()["invitation_url"]
    replaced = Client().get(f"/invite/{old}/")
    assert replaced.status_code == 410 and b"replaced" in replaced.content
    assert can_log_in("forgetful", "pw-123456")  # the current password works until a new one is set
    set_password(new_url)
    assert can_log_in("forgetful", NEW_PASSWORD) and not can_log_in("forgetful", "pw-123456")
    assert RaterInvitation.objects.get(token_sha256=hashlib.sha256(token_of(new_url).encode()).hexdigest()).created_by == admin


def test_a_reset_is_for_raters_only():
    admin = make_user("admin")
    assert api_as(admin).post(f"/api/v1/raters/{make_user('researcher').pk}/password-reset/").status_code == 404


def test_a_disabled_rater_gets_no_link():
    rater = make_rater()
    rater.is_active = False
    rater.save(update_fields=["is_active"])
    refused = api_as(make_user("admin")).post(f"/api/v1/raters/{rater.pk}/password-reset/")
    assert refused.status_code == 400 and "not an active rater" in str(refused.json())
    assert not RaterInvitation.objects.exists()


def test_a_link_of_a_disabled_account_says_so():
    rater = make_rater()
    token = invitation_create(user=rater).token
    rater.is_active = False
    rater.save(update_fields=["is_active"])
    response = Client().get(f"/invite/{token}/")
    assert response.status_code == 410 and b"disabled" in response.content


@pytest.mark.parametrize("role", [None, "rater", "researcher"])
def test_others_may_not_create_links(role):
    rater = make_rater()
    caller = make_user(role) if role else None
    assert api_as(caller).post(f"/api/v1/raters/{rater.pk}/password-reset/").status_code in (401, 403)
    assert api_as(caller).post("/api/v1/raters/", {"username": "sneaky"}, format="json").status_code in (401, 403)
    assert not RaterInvitation.objects.exists()


def test_links_are_built_on_the_public_url_when_one_is_set(settings):
    settings.REJUDGE_PUBLIC_URL = "https://rejudge.example.org"
    created = api_as(make_user("admin")).post("/api/v1/raters/", {"username": "far"}, format="json")
    assert created.json()["invitation_url"].startswith("https://rejudge.example.org/invite/")


def _low_rates(settings, **low):
    settings.REST_FRAMEWORK = settings.REST_FRAMEWORK | {
        "DEFAULT_THROTTLE_RATES": settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] | low}


def test_the_link_page_is_throttled_per_address(settings):
    _low_rates(settings, invitation_uses="3/hour")
    statuses = [Client().get("/invite/guess-%d/" % i).status_code for i in range(4)]
    assert statuses == [410, 410, 410, 429]
    refused = Client().get("/invite/guess-9/")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0 and b"Too many tries" in refused.content


def test_making_links_is_throttled_per_admin(settings):
    _low_rates(settings, invitations_issued="2/hour")
    admin, rater = make_user("admin"), make_rater()
    client = api_as(admin)
    assert [client.post(f"/api/v1/raters/{rater.pk}/password-reset/").status_code for _ in range(3)] == [201, 201, 429]
    assert client.get("/api/v1/raters/").status_code == 200  # reading the list is not counted
