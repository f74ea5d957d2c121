"""An attacker's pass over issue 12's quality gates, against the running platform (gunicorn,
PostgreSQL, a Celery worker, DEBUG=0). Each test replays one way found there to walk around a
gate, then checks that it is now closed and that nothing was written."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation.models import Label, Lease, PooledPair, PoolMembership
from annotation.services.pools.build import known_pairs_add
from annotation.services.accounts.raters import memberships_grant, training_reset
from tests.factories import make_pool_with_runs, make_rater, make_user

pytestmark = pytest.mark.django_db


def client_for(user) -> APIClient:
    c = APIClient()
    c.force_authenticate(user)
    return c


def next_assignment(client, pool, exclude=()) -> dict | None:
    return client.post(f"/api/v1/pools/{pool.pk}/next/", {"exclude": list(exclude)}, format="json").json()["assignment"]


def answer(client, lease_id: str, value: str, client_id: str):
    return client.post("/api/v1/labels/", {"client_id": client_id, "lease_id": lease_id, "value": value}, format="json")


def pass_training(client, pool) -> None:
    known = dict(PooledPair.objects.filter(pool=pool, role="training").values_list("caption__text", "known_answer"))
    for step in range(len(known)):
        a = next_assignment(client, pool)
        assert a["mode"] == "training"
        assert answer(client, a["lease_id"], known[a["caption"]["text"]], f"t{step}").status_code == 201


def test_a_rater_sent_back_to_training_can_no_longer_answer_the_pool_pairs_they_held():
    """Before: after an admin's "retake training", the two pool pairs the rater's page held still
    came back from next/ and took their answers (an `ambiguous` reached the adjudication queue)
    while training was pending again."""
    pool, _ = make_pool_with_runs(training_pass_mark=1.0)
    known_pairs_add(pool=pool, items=[{"caption": "q1", "clip": "v1", "answer": "relevant", "role": "training"}])
    rater = make_rater()
    memberships_grant(pool=pool, users=[rater])
    c = client_for(rater)
    pass_training(c, pool)
    held = next_assignment(c, pool)
    preloaded = next_assignment(c, pool, exclude=[held["lease_id"]])
    assert (held["mode"], preloaded["mode"]) == ("production", "production")

    training_reset(pool=pool, user=rater)

    # The pairs go back to the queue for others, and the page is sent to training again.
    assert set(Lease.objects.filter(token__in=[held["lease_id"], preloaded["lease_id"]]).values_list("state", flat=True)) \
        == {"released"}
    assert not PooledPair.objects.filter(pool=pool, active_leases__gt=0).exists()
    assert next_assignment(c, pool)["mode"] == "training"
    for n, lease in enumerate((held, preloaded)):
        refused = answer(c, lease["lease_id"], "ambiguous", f"late{n}")
        assert refused.status_code in (403, 409), refused.json()
    assert not Label.objects.filter(pair__role="pool").exists()
    assert not PooledPair.objects.filter(pool=pool, state="adjudication").exists()


def test_a_rater_whose_training_is_not_passed_cannot_answer_a_pool_lease_they_still_hold():
    """The rule itself, in the service: a pool or gold answer needs passed training (when the pool
    has training), even on a lease the rater holds (e.g. one taken just before a reset)."""
    from annotation.services.queue.labels import LabelRefused, label_submit
    from tests.factories import lease_pair_for

    pool, _ = make_pool_with_runs()
    known_pairs_add(pool=pool, items=[{"caption": "q1", "clip": "v1", "answer": "relevant", "role": "training"}])
    rater = make_rater()
    memberships_grant(pool=pool, users=[rater])
    pair = PooledPair.objects.filter(pool=pool, role="pool").first()
    for training in ("pending", "failed"):
        PoolMembership.objects.filter(pool=pool, rater=rater).update(training=training)
        lease = lease_pair_for(rater, pair)
        with pytest.raises(LabelRefused) as refused:
            label_submit(rater=rater, client_id=f"c-{training}", lease=lease.token, value="broken")
        assert refused.value.code == "training"
        Lease.objects.filter(pk=lease.pk).update(state="released")
    assert not Label.objects.exists()
    pair.refresh_from_db()
    assert pair.broken_reports == 0


def test_retake_training_for_someone_who_is_not_a_member_is_a_json_404():
    """Before: an HTML 500 (PoolMembership.DoesNotExist) for any user id that exists but is not
    in the pool, the admin themselves included."""
    pool, _ = make_pool_with_runs()
    admin, outsider = make_user("admin"), make_rater()
    c = client_for(admin)
    for user in (admin, outsider):
        response = c.post(f"/api/v1/pools/{pool.pk}/members/{user.pk}/reset-training/")
        assert response.status_code == 404 and response["Content-Type"] == "application/json"
    assert not PoolMembership.objects.exists()
