"""The rater's "my recent answers" and "change my answer" over HTTP: opaque ids only, refusals are
JSON with a code, and a gold answer's change answers with exactly what a pool answer's does."""
from __future__ import annotations

import random

import pytest
from rest_framework.test import APIClient

from annotation.models import Label, LabelChange, PooledPair
from annotation.services.queue.labels import label_submit
from annotation.services.pools.build import known_pairs_add
from annotation.services.queue.leases import item_id_for, lease_next
from annotation.services.accounts.raters import memberships_grant
from annotation.services.reports.create import report_create
from tests.factories import make_pool_with_runs, make_rater

pytestmark = pytest.mark.django_db


def client_for(user):
    c = APIClient()
    c.force_authenticate(user)
    return c


def answer(rater, pool, value, **kwargs):
    lease = lease_next(pool=pool, rater=rater, **kwargs).lease
    label_submit(rater=rater, client_id=f"c-{lease.pk}", lease=lease.token, value=value)
    return lease.pair_id


@pytest.fixture
def world():
    pool, _ = make_pool_with_runs(gold_rate=1.0)
    rater = make_rater()
    memberships_grant(pool=pool, users=[rater])
    known_pairs_add(pool=pool, items=[{"caption": "q2", "clip": "v1", "answer": "not_relevant", "role": "gold"}])
    gold = answer(rater, pool, "relevant", rng=random.Random(0))
    plain = answer(rater, pool, "relevant", rng=random.Random(0))
    assert PooledPair.objects.get(pk=gold).role == "gold" and PooledPair.objects.get(pk=plain).role == "pool"
    return pool, rater, gold, plain


def test_recent_answers_list_opaque_items_with_captions(world):
    pool, rater, gold, plain = world
    body = client_for(rater).get("/api/v1/my/recent-answers/", {"pool": pool.pk}).json()
    assert [a["item_id"] for a in body] == [item_id_for("pair", plain), item_id_for("pair", gold)]
    assert set(body[0]) == {"item_id", "caption", "clip", "value", "comment", "answered_at", "changed_at", "can_change",
                            "why_not"}
    # The clip, so that undo after a reload shows what the answer was about; nothing that names the pair.
    assert set(body[0]["clip"]) == {"url", "start", "end"} and body[0]["clip"]["url"]
    assert all(a["can_change"] and a["why_not"] is None and a["value"] == "relevant" for a in body)
    assert not any(str(plain) == a["item_id"] or "pair" in a or "id" in a for a in body)


def test_recent_answers_need_a_pool_the_rater_is_in(world):
    pool, rater, *_ = world
    assert client_for(rater).get("/api/v1/my/recent-answers/").status_code == 400
    assert client_for(make_rater()).get("/api/v1/my/recent-answers/", {"pool": pool.pk}).status_code == 404


def test_changing_a_gold_answer_answers_exactly_like_a_pool_answer(world):
    pool, rater, gold, plain = world
    c = client_for(rater)
    replies = [c.post(f"/api/v1/my/answers/{item_id_for('pair', pk)}/change/", {"value": "not_relevant", "comment": "x"},
                      format="json") for pk in (gold, plain)]
    assert [r.status_code for r in replies] == [200, 200]
    shapes = [{k: v for k, v in r.json().items() if k not in ("item_id", "changed_at")} for r in replies]
    assert shapes[0] == shapes[1] == {"value": "not_relevant", "comment": "x"}
    assert set(replies[0].json()) == set(replies[1].json())
    assert Label.objects.filter(rater=rater).count() == 2 and LabelChange.objects.count() == 2


def test_refusals_are_json_with_a_code(world):
    pool, rater, gold, plain = world
    c = client_for(rater)
    url = f"/api/v1/my/answers/{item_id_for('pair', plain)}/change/"
    bad = c.post(url, {"value": "maybe"}, format="json")
    assert bad.status_code == 400 and "value" in bad.json()
    other = client_for(make_rater()).post(url, {"value": "not_relevant"}, format="json")
    assert other.status_code == 404 and other.json()["code"] == "not_found"
    report_create(pool=pool, kind="agreement")
    frozen = c.post(url, {"value": "not_relevant"}, format="json")
    assert frozen.status_code == 409 and frozen.json()["code"] == "used_by_report"
    # The gold answer is frozen the same way, with the same reply.
    gold_frozen = c.post(f"/api/v1/my/answers/{item_id_for('pair', gold)}/change/", {"value": "not_relevant"}, format="json")
    assert (gold_frozen.status_code, gold_frozen.json()) == (409, frozen.json())
    assert not LabelChange.objects.exists()


@pytest.mark.parametrize("value, comment", [("ambiguous", "two dogs or one?"), ("broken", None), ("relevant", None)])
def test_every_answer_kind_can_replace_a_vote_and_be_taken_back(world, value, comment):
    pool, rater, gold, plain = world
    c = client_for(rater)
    url = f"/api/v1/my/answers/{item_id_for('pair', plain)}/change/"
    first = c.post(url, {"value": "not_relevant"}, format="json")
    body = {"value": value, **({"comment": comment} if comment else {})}
    reply = c.post(url, body, format="json")
    assert reply.status_code == 200, reply.json()
    assert reply.json()["value"] == value and (comment is None or reply.json()["comment"] == comment)
    back = c.post(url, {"value": "relevant" if value != "relevant" else "not_relevant"}, format="json")
    assert first.status_code == back.status_code == 200
    assert LabelChange.objects.filter(label__pair_id=plain).count() == 3
    listed = c.get("/api/v1/my/recent-answers/", {"pool": pool.pk}).json()
    assert listed[0]["can_change"] and listed[0]["why_not"] is None
