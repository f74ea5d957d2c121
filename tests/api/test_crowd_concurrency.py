"""40 crowd workers arriving by the study link at once (PostgreSQL, threads, each with its own
browser-like client and database connection), judging until their quota: no duplicate accounts
(five of their links are also opened at the same moment in another browser, which makes nothing
and signs nobody in), no pair handed out beyond what it needs, every quota exact, every
acknowledged label stored once. And 40 arrivals at once for 10 places make exactly 10 workers."""
from __future__ import annotations

import threading
import time
import uuid

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client

from annotation.models import Caption, Clip, CrowdWorker, Dataset, Label, Lease, Pool, PooledPair
from annotation.services.crowd.studies import study_save
from annotation.services.pools.build import known_pairs_add
from tests.annotation.services.crowd.crowd_world import ticket_of

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

WORKERS, QUOTA, POOL_PAIRS, GOLD = 40, 8, 400, 10


def build_study():
    dataset = Dataset.objects.create(name=f"crowd-conc-{uuid.uuid4().hex[:6]}")
    clips = Clip.objects.bulk_create([Clip(dataset=dataset, external_id=f"v{i}", video_id=f"v{i}") for i in range(60)])
    captions = Caption.objects.bulk_create([Caption(dataset=dataset, external_id=f"q{i}", text=f"caption {i}")
                                            for i in range(40)])
    pool = Pool.objects.create(dataset=dataset, name="crowd", gold_rate=0.1, redundancy=0, lease_seconds=300)
    PooledPair.objects.bulk_create([PooledPair(pool=pool, caption=captions[n // 10], clip=clips[n % 10], queue_order=n)
                                    for n in range(POOL_PAIRS)])
    known_pairs_add(pool=pool, items=[{"caption": f"q{n}", "clip": f"v{50 + n}", "answer": "relevant", "role": "gold",
                                       "explanation": ""} for n in range(GOLD)])
    return study_save(pool=pool, platform="prolific", title="Crowd", completion_code="DONE42", quota_pairs=QUOTA,
                      consent_text="I agree.", training_required=False)


def link(study, pid, session):
    return f"/study/{study.token}/?PROLIFIC_PID={pid}&STUDY_ID=s&SESSION_ID={session}"


def arrive(client, study, pid, session):
    """The link's page, then its "I agree" (which gives the consent)."""
    page = client.get(link(study, pid, session))
    response = client.post(f"/study/{study.token}/enter/", {"ticket": ticket_of(page), "action": "agree"})
    if response.status_code != 302:
        raise AssertionError(f"arrival -> {response.status_code}")


@pytest.fixture(autouse=True)
def _many_arrivals_from_one_address(settings):
    """Every simulated worker comes from 127.0.0.1: the per-address arrival limit is raised."""
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {
        **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "crowd_arrivals": "10000/hour"}}


def work(study, pid, acknowledged, errors, start, deadline):
    client = Client()
    try:
        start.wait()
        arrive(client, study, pid, "a")
        client.post(f"/study/{study.token}/start/")
        pool_id = study.pool_id
        while time.monotonic() < deadline:
            body = client.post(f"/api/v1/pools/{pool_id}/next/", {}, content_type="application/json").json()
            if body["assignment"] is None:
                if body["reason"] != "quota_reached":
                    errors.append(f"{pid}: unexpected reason {body['reason']}")
                progress = client.get(f"/api/v1/study/{study.token}/progress/").json()
                if not progress["done"] or progress["completion"]["completion_code"] != "DONE42":
                    errors.append(f"{pid}: not done at the quota: {progress}")
                return
            sent = {"client_id": uuid.uuid4().hex, "lease_id": body["assignment"]["lease_id"], "value": "relevant",
                    "seconds": 2.5}
            reply = client.post("/api/v1/labels/", sent, content_type="application/json")
            if reply.status_code != 201:
                errors.append(f"{pid}: label -> {reply.status_code} {reply.content[:200]}")
                return
            acknowledged.append((pid, sent["client_id"]))
        errors.append(f"{pid} ran out of time")
    except Exception as exc:  # noqa: BLE001 - reported to the main thread
        errors.append(f"{pid}: {exc!r}")
    finally:
        connection.close()


def arrive_again(study, pid, errors, start):
    """The same link in another browser at the same moment: a page (entry or resume form), no
    account, nobody signed in."""
    try:
        start.wait()
        other = Client()
        response = other.get(link(study, pid, "b"))
        if response.status_code != 200 or "_auth_user_id" in other.session:
            errors.append(f"{pid} (second browser): {response.status_code}, signed in: {'_auth_user_id' in other.session}")
    except Exception as exc:  # noqa: BLE001
        errors.append(f"{pid} (second browser): {exc!r}")
    finally:
        connection.close()


def test_forty_crowd_workers_arrive_and_judge_to_their_quota(require_postgres):
    study = build_study()
    users_before = get_user_model().objects.count()
    pids = [f"{n:024x}" for n in range(1, WORKERS + 1)]
    acknowledged, errors = [], []
    start = threading.Barrier(WORKERS + 5)
    deadline = time.monotonic() + 300
    threads = [threading.Thread(target=work, args=(study, pid, acknowledged, errors, start, deadline)) for pid in pids]
    threads += [threading.Thread(target=arrive_again, args=(study, pid, errors, start)) for pid in pids[:5]]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[:5]

    # One account per worker id, however many arrivals.
    assert CrowdWorker.objects.filter(study=study).count() == WORKERS
    assert get_user_model().objects.count() - users_before == WORKERS
    assert set(CrowdWorker.objects.filter(study=study).values_list("arrivals", flat=True)) == {1}
    # Every quota exact, every worker done.
    per_worker = {w.worker_id: Label.objects.filter(rater=w.user).count() for w in CrowdWorker.objects.filter(study=study)}
    assert set(per_worker.values()) == {QUOTA}, per_worker
    assert CrowdWorker.objects.filter(study=study, stage="done").count() == WORKERS
    # No pair beyond what it needs; nothing left held.
    pool_labels = Label.objects.filter(pair__pool_id=study.pool_id, pair__role="pool")
    for pair in PooledPair.objects.filter(pool_id=study.pool_id, role="pool"):
        assert pair.vote_count <= pair.required_labels and pair.active_leases == 0
    assert pool_labels.filter(counted=True).count() == pool_labels.count()
    assert not Lease.objects.filter(pair__pool_id=study.pool_id, state="active").exists()
    # Every acknowledged label is stored exactly once.
    stored = set(Label.objects.filter(pair__pool_id=study.pool_id).values_list("rater__crowd_worker__worker_id", "client_id"))
    assert stored == set(acknowledged) and len(acknowledged) == WORKERS * QUOTA


PLACES, ARRIVALS = 10, 40


def test_forty_arrivals_at_once_for_ten_places_make_ten_workers(require_postgres):
    study = build_study()
    study.places = PLACES
    study.save(update_fields=["places"])
    pages, outcomes, errors = {}, [], []
    for n in range(ARRIVALS):  # every browser has the entry page open (a GET makes nothing)...
        client = Client()
        pages[n] = (client, ticket_of(client.get(link(study, f"{n + 1:024x}", "a"))))
    start = threading.Barrier(ARRIVALS)

    def agree(n):
        client, ticket = pages[n]
        try:
            start.wait()  # ...and they all press "I agree" at once
            outcomes.append(client.post(f"/study/{study.token}/enter/", {"ticket": ticket, "action": "agree"}).status_code)
        except Exception as exc:  # noqa: BLE001 - reported to the main thread
            errors.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=agree, args=(n,)) for n in range(ARRIVALS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[:3]
    assert sorted(outcomes) == [302] * PLACES + [409] * (ARRIVALS - PLACES)
    assert CrowdWorker.objects.filter(study=study).count() == PLACES
