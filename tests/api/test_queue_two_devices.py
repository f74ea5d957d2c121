"""Issue 22, finding 14: one account judging on two devices at once. Each device's page sends its
own device id with `next`: a device gets back only the leases it holds itself, so the two devices
are shown different pairs and neither device's answers are refused as "already labelled"."""
from __future__ import annotations

import pytest

from annotation.models import Label, Lease
from annotation.services.accounts.raters import memberships_grant
from tests.api.test_attack_gates import answer, client_for
from tests.factories import make_pool_with_runs, make_rater

pytestmark = pytest.mark.django_db


def ask(client, pool, device, exclude=()):
    body = {"exclude": list(exclude)}
    if device is not None:
        body["device"] = device
    return client.post(f"/api/v1/pools/{pool.pk}/next/", body, format="json")


def test_two_devices_of_one_account_get_different_pairs_and_all_answers_are_taken():
    pool, _ = make_pool_with_runs(captions=6, clips=8, depth=3)
    rater = make_rater()
    memberships_grant(pool=pool, users=[rater])
    laptop, phone = client_for(rater), client_for(rater)
    shown = {"laptop": [], "phone": []}
    statuses = []
    for step in range(4):
        for name, client in (("laptop", laptop), ("phone", phone)):
            # Each page holds the pair on screen and preloads the next one.
            on_screen = ask(client, pool, name).json()["assignment"]
            preload = ask(client, pool, name, exclude=[on_screen["lease_id"]]).json()["assignment"]
            shown[name] += [on_screen["item_id"], preload["item_id"]]
            # The preloaded pair stays held: the next round's first ask gives it back to this device.
            statuses.append(answer(client, on_screen["lease_id"], "relevant", f"{name}-{step}").status_code)
    assert statuses == [201] * 8
    assert not set(shown["laptop"]) & set(shown["phone"])
    assert Label.objects.filter(rater=rater).count() == 8


def test_a_device_resumes_its_own_leases_and_never_the_other_devices():
    pool, _ = make_pool_with_runs(captions=6, clips=8, depth=3)
    rater = make_rater()
    memberships_grant(pool=pool, users=[rater])
    c = client_for(rater)
    laptop = ask(c, pool, "laptop").json()["assignment"]
    phone = ask(c, pool, "phone").json()["assignment"]
    assert phone["lease_id"] != laptop["lease_id"]
    assert ask(c, pool, "laptop").json()["assignment"]["lease_id"] == laptop["lease_id"]  # a reloaded page resumes
    assert ask(c, pool, "phone").json()["assignment"]["lease_id"] == phone["lease_id"]
    assert set(Lease.objects.filter(rater=rater, state="active").values_list("device", flat=True)) == {"laptop", "phone"}


def test_a_device_holds_two_pairs_and_an_account_a_bounded_number():
    pool, _ = make_pool_with_runs(captions=10, clips=12, depth=4)
    rater = make_rater()
    memberships_grant(pool=pool, users=[rater])
    c = client_for(rater)
    first = ask(c, pool, "a").json()["assignment"]
    second = ask(c, pool, "a", exclude=[first["lease_id"]]).json()["assignment"]
    third = ask(c, pool, "a", exclude=[first["lease_id"], second["lease_id"]]).json()
    assert third["assignment"] is None and third["reason"] == "holding_max"
    held = 2
    for device in "bcdefgh":
        body = ask(c, pool, device).json()
        if body["assignment"] is None:
            assert body["reason"] == "holding_max"
            break
        held += 1
    assert held == Lease.objects.filter(rater=rater, state="active").count() == 6


def test_a_page_that_sends_no_device_keeps_working_as_before():
    pool, _ = make_pool_with_runs()
    rater = make_rater()
    memberships_grant(pool=pool, users=[rater])
    c = client_for(rater)
    first = ask(c, pool, None).json()["assignment"]
    assert ask(c, pool, None).json()["assignment"]["lease_id"] == first["lease_id"]


@pytest.mark.parametrize("device", ["x" * 65, ["a"], {"a": 1}])
def test_a_bad_device_id_is_a_400_naming_the_field(device):
    pool, _ = make_pool_with_runs()
    rater = make_rater()
    memberships_grant(pool=pool, users=[rater])
    response = ask(client_for(rater), pool, device)
    assert response.status_code == 400 and "device" in response.json()
