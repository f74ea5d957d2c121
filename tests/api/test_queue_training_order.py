"""Issue 22, finding 10: training is answered strictly in its order. With training pair A held,
`next` with `{"exclude": [A]}` handed out training pair B, and an answer on B before A was taken.
Now `next` says `training_pending` until A is answered (the page asks again then), and an answer
on a later training pair while an earlier one is unanswered is refused."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Label, Lease, PooledPair
from annotation.services.accounts.raters import memberships_grant
from annotation.services.pools.build import known_pairs_add
from tests.api.test_attack_gates import answer, client_for, next_assignment
from tests.factories import make_pool_with_runs, make_rater

pytestmark = pytest.mark.django_db


def pool_with_three_training_pairs():
    pool, _ = make_pool_with_runs(training_pass_mark=0.5)
    known_pairs_add(pool=pool, items=[
        {"caption": f"q{n}", "clip": f"v{n}", "answer": "relevant", "role": "training", "explanation": "shown"}
        for n in (1, 2, 3)])
    rater = make_rater()
    memberships_grant(pool=pool, users=[rater])
    return pool, rater


def ask(client, pool, exclude=()):
    return client.post(f"/api/v1/pools/{pool.pk}/next/", {"exclude": list(exclude)}, format="json").json()


def test_exclude_cannot_skip_a_training_pair():
    pool, rater = pool_with_three_training_pairs()
    c = client_for(rater)
    first = next_assignment(c, pool)
    assert first["mode"] == "training"
    skipping = ask(c, pool, exclude=[first["lease_id"]])
    assert skipping == {"assignment": None, "reason": "training_pending", "idle_release_seconds": skipping["idle_release_seconds"]}
    # Asking without the exclusion gives the held pair back, as for any held pair.
    assert next_assignment(c, pool)["lease_id"] == first["lease_id"]
    assert Lease.objects.filter(rater=rater, state="active").count() == 1

    assert answer(c, first["lease_id"], "relevant", "t1").status_code == 201
    second = ask(c, pool, exclude=[first["lease_id"]])["assignment"]
    assert second["mode"] == "training" and second["item_id"] != first["item_id"]


def test_training_pairs_come_in_their_order_even_when_one_is_given_back():
    pool, rater = pool_with_three_training_pairs()
    c = client_for(rater)
    order = list(PooledPair.objects.filter(pool=pool, role="training").order_by("queue_order", "pk")
                 .values_list("caption__text", flat=True))
    first = next_assignment(c, pool)
    assert first["caption"]["text"] == order[0]
    assert c.post(f"/api/v1/leases/{first['lease_id']}/release/").status_code == 204
    again = next_assignment(c, pool)
    assert again["caption"]["text"] == order[0]  # a given-back training pair is still the next one
    seen = []
    for step in range(3):
        a = again if step == 0 else next_assignment(c, pool)
        seen.append(a["caption"]["text"])
        assert answer(c, a["lease_id"], "relevant", f"t{step}").status_code == 201
    assert seen == order


def test_an_answer_on_a_later_training_pair_before_an_earlier_one_is_refused():
    """A lease on a later training pair (one handed out before this rule, or when an earlier
    lease ran out and came back on another device) cannot be answered first."""
    pool, rater = pool_with_three_training_pairs()
    c = client_for(rater)
    first = next_assignment(c, pool)
    later = PooledPair.objects.filter(pool=pool, role="training").order_by("queue_order", "pk")[1]
    lease = Lease.objects.create(pair=later, rater=rater, expires_at=timezone.now() + timedelta(minutes=5))
    lease.created_at = timezone.now() - timedelta(minutes=1)
    lease.save(update_fields=["created_at"])
    refused = answer(c, lease.token, "relevant", "early")
    assert refused.status_code == 409 and refused.json()["code"] == "training_order", refused.json()
    assert "feedback" not in refused.json()
    assert not Label.objects.filter(rater=rater).exists()
    assert answer(c, first["lease_id"], "relevant", "t1").status_code == 201
    assert answer(c, lease.token, "relevant", "t2").status_code == 201
