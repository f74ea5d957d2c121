"""Crowd studies simulated by URL: a Prolific study and an MTurk HIT from arrival to completion,
return (resume), timeout (leases freed), a second tab, a second worker id from the same browser,
an MTurk preview that creates nothing, and parameters that are refused without being echoed."""
from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from annotation.models import CrowdWorker, Label, Lease, PooledPair
from annotation.services.crowd.quota import crowd_idle_release
from tests.annotation.services.crowd.crowd_world import crowd_pool, mturk_study, prolific_study, ticket_of

pytestmark = pytest.mark.django_db


def prolific_url(study, pid="5f1e2d3c4b5a69788796a5b4", session="sess1"):
    return f"/study/{study.token}/?PROLIFIC_PID={pid}&STUDY_ID=st1&SESSION_ID={session}"


def mturk_url(study, worker="A1B2C3D4E5", assignment="ASG1", host="https://workersandbox.mturk.com"):
    return f"/study/{study.token}/?workerId={worker}&assignmentId={assignment}&hitId=HIT1&turkSubmitTo={host}"


def progress(client, study):
    response = client.get(f"/api/v1/study/{study.token}/progress/")
    assert response.status_code == 200, response.content
    return response.json()


def enter(client, url, study):
    """Arrive (the link's page, then its "I agree"), read the guidelines: the worker is then on the
    judging page."""
    page = client.get(url)
    assert page.status_code == 200 and b'id="consent-agree"' in page.content, page.content[:300]
    response = client.post(f"/study/{study.token}/enter/", {"ticket": ticket_of(page), "action": "agree"})
    # An MTurk study's link also carries the worker token (for MTurk's iframe); the session works too.
    assert response.status_code == 302 and response["Location"].split("?wt=")[0] == f"/study/{study.token}/go/", response.content[:300]
    assert b'id="guidelines-start"' in client.get(f"/study/{study.token}/go/").content
    assert client.post(f"/study/{study.token}/start/").status_code == 302
    response = client.get(f"/study/{study.token}/go/")
    assert response["Location"] == f"/study/{study.token}/work/"


def judge(client, pool, n, value="relevant"):
    """Asks for pairs and answers them, as the judging page does; returns the reasons seen when
    there was no pair."""
    for _ in range(n):
        body = client.post(f"/api/v1/pools/{pool.pk}/next/", {}, content_type="application/json").json()
        if body["assignment"] is None:
            return body["reason"]
        reply = client.post("/api/v1/labels/", {"client_id": uuid.uuid4().hex, "lease_id": body["assignment"]["lease_id"],
                                                "value": value, "seconds": 3.0}, content_type="application/json")
        assert reply.status_code == 201, reply.content
    return None


def test_prolific_study_from_arrival_to_completion_code():
    pool = crowd_pool(gold=4, training=0, gold_rate=0.3)
    study = prolific_study(pool, quota_pairs=5)
    client = Client()
    enter(client, prolific_url(study), study)
    assert progress(client, study)["completion"] is None  # no code before the work is done
    assert judge(client, pool, 5) is None
    # The quota is met: no sixth pair, and the completion code is given.
    assert judge(client, pool, 1) == "quota_reached"
    state = progress(client, study)
    assert (state["judged"], state["done"], state["stage"]) == (5, True, "done")
    assert state["completion"]["completion_code"] == "C0DE123"
    page = client.get(f"/study/{study.token}/go/")
    assert b"C0DE123" in page.content and b"app.prolific.com/submissions/complete?cc=C0DE123" in page.content
    worker = CrowdWorker.objects.get(study=study)
    assert Label.objects.filter(rater=worker.user).exclude(pair__role="training").count() == 5
    assert not Lease.objects.filter(rater=worker.user, state="active").exists()
    assert not worker.user.has_usable_password()


def test_mturk_hit_preview_then_accept_then_form_to_submit():
    pool = crowd_pool(gold=2, training=2)
    study = mturk_study(pool, quota_pairs=3, training_required=True)
    users_before = get_user_model().objects.count()
    client = Client()
    preview = client.get(f"/study/{study.token}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=HIT1")
    assert preview.status_code == 200 and b"Say whether a caption fits a clip." in preview.content
    assert get_user_model().objects.count() == users_before and not CrowdWorker.objects.exists()
    enter(client, mturk_url(study), study)
    # Training first (the pool's own training queue), then judging; training is not in the quota.
    for pair in PooledPair.objects.filter(pool=pool, role="training").order_by("queue_order", "pk"):
        body = client.post(f"/api/v1/pools/{pool.pk}/next/", {}, content_type="application/json").json()
        assert body["assignment"]["mode"] == "training"
        client.post("/api/v1/labels/", {"client_id": uuid.uuid4().hex, "lease_id": body["assignment"]["lease_id"],
                                        "value": pair.known_answer}, content_type="application/json")
    assert progress(client, study)["training"] == "passed"
    assert judge(client, pool, 3) is None
    assert judge(client, pool, 1) == "quota_reached"
    state = progress(client, study)
    assert state["judged"] == 3 and state["completion"] == {
        "platform": "mturk", "submit_url": "https://workersandbox.mturk.com/mturk/externalSubmit",
        "fields": {"assignmentId": "ASG1", "quotaMet": "true"}}
    page = client.get(f"/study/{study.token}/go/")
    assert b'action="https://workersandbox.mturk.com/mturk/externalSubmit"' in page.content
    assert b'name="assignmentId" value="ASG1"' in page.content
    assert "https://workersandbox.mturk.com" in page["Content-Security-Policy"]
    # The same worker on another assignment of the study is refused: they have done their part.
    refused = client.get(mturk_url(study, assignment="ASG2"))
    assert refused.status_code == 409 and b"already completed" in refused.content


def test_returning_worker_resumes_where_they_were():
    pool = crowd_pool(gold=0, training=0)
    study = prolific_study(pool, quota_pairs=6)
    first = Client()
    enter(first, prolific_url(study, session="s1"), study)
    judge(first, pool, 2)
    held = first.post(f"/api/v1/pools/{pool.pk}/next/", {}, content_type="application/json").json()["assignment"]
    # Later, in a new browser, from Prolific again with a new SESSION_ID: with the resume code the
    # worker noted (issue 22: the id alone no longer resumes), the same account, the same stage,
    # the held pair comes back first.
    code = progress(first, study)["resume_code"]
    later = Client()
    page = later.get(prolific_url(study, session="s2"))
    assert page.status_code == 200 and b'id="resume-code-input"' in page.content
    response = later.post(f"/study/{study.token}/enter/", {"ticket": ticket_of(page), "action": "resume",
                                                          "resume_code": code.lower().replace("-", " ")})
    assert response.status_code == 302
    assert later.get(f"/study/{study.token}/go/")["Location"] == f"/study/{study.token}/work/"
    again = later.post(f"/api/v1/pools/{pool.pk}/next/", {}, content_type="application/json").json()["assignment"]
    assert again["lease_id"] == held["lease_id"]
    worker = CrowdWorker.objects.get(study=study)
    assert (worker.arrivals, worker.session_id, CrowdWorker.objects.count()) == (2, "s2", 1)
    assert progress(later, study)["judged"] == 2


def test_timeout_frees_the_workers_leases():
    pool = crowd_pool(gold=0, training=0)
    study = prolific_study(pool, quota_pairs=6, idle_timeout_seconds=60)
    client = Client()
    enter(client, prolific_url(study), study)
    for _ in range(2):
        client.post(f"/api/v1/pools/{pool.pk}/next/", {"exclude": []}, content_type="application/json")
    worker = CrowdWorker.objects.get(study=study)
    held = Lease.objects.filter(rater=worker.user, state="active")
    assert held.count() == 1  # the same held pair came back on the second ask
    pair = held.get().pair
    assert pair.active_leases == 1 and not pair.available
    assert crowd_idle_release(study=study, now=timezone.now() + timedelta(seconds=30)) == 0  # not idle yet
    assert crowd_idle_release(study=study, now=timezone.now() + timedelta(seconds=61)) == 1
    pair.refresh_from_db()
    assert pair.active_leases == 0 and pair.available
    assert Lease.objects.get(rater=worker.user).state == "released"


def test_leaving_frees_the_leases_at_once():
    pool = crowd_pool(gold=0, training=0)
    study = prolific_study(pool, quota_pairs=6)
    client = Client()
    enter(client, prolific_url(study), study)
    client.post(f"/api/v1/pools/{pool.pk}/next/", {}, content_type="application/json")
    assert client.post(f"/study/{study.token}/leave/").status_code == 200
    assert not Lease.objects.filter(state="active").exists()


def test_second_tab_gets_the_same_pair_back_not_a_new_account():
    pool = crowd_pool(gold=0, training=0)
    study = prolific_study(pool, quota_pairs=6)
    client = Client()
    enter(client, prolific_url(study), study)
    tab_one = client.post(f"/api/v1/pools/{pool.pk}/next/", {}, content_type="application/json").json()["assignment"]
    # The same link opened in a second tab (same browser session): the same worker, and the
    # server hands the held pair back (the page's one-tab lock then lets one tab judge).
    assert client.get(prolific_url(study)).status_code == 302
    tab_two = client.post(f"/api/v1/pools/{pool.pk}/next/", {}, content_type="application/json").json()["assignment"]
    assert tab_two["lease_id"] == tab_one["lease_id"]
    assert CrowdWorker.objects.count() == 1


@pytest.mark.parametrize("how", ["session", "cookie only"])
def test_a_second_worker_id_from_the_same_browser_is_refused(how):
    pool = crowd_pool(gold=0, training=0)
    study = prolific_study(pool)
    client = Client()
    enter(client, prolific_url(study, pid="aaaaaaaaaaaaaaaaaaaaaaaa"), study)
    if how == "cookie only":
        # A new session (signed out, or the session expired); the study's signed cookie stays.
        cookie = f"rj_study_{study.pk}"
        kept = client.cookies[cookie].value
        client = Client()
        client.cookies[cookie] = kept
    refused = client.get(prolific_url(study, pid="bbbbbbbbbbbbbbbbbbbbbbbb"))
    assert refused.status_code == 409, refused.status_code
    assert b"already taken part in this study under another worker id" in refused.content
    assert list(CrowdWorker.objects.values_list("worker_id", flat=True)) == ["aaaaaaaaaaaaaaaaaaaaaaaa"]
    # The same id from the same browser is welcome back.
    assert client.get(prolific_url(study, pid="aaaaaaaaaaaaaaaaaaaaaaaa", session="s9")).status_code == 302


def test_a_second_worker_id_on_the_same_account_is_refused():
    from annotation.services.crowd.arrivals import Arrival, ArrivalRefused, study_arrive

    pool = crowd_pool(gold=0, training=0)
    study = prolific_study(pool)
    worker = study_arrive(study=study, arrival=Arrival(worker_id="aaa", session_id="s", external_study_id="x"))
    with pytest.raises(ArrivalRefused) as refused:
        study_arrive(study=study, arrival=Arrival(worker_id="bbb", session_id="s", external_study_id="x"),
                     signed_in_user=worker.user)
    assert refused.value.code == "other_worker"


@pytest.mark.parametrize("query, named", [
    ("PROLIFIC_PID=%3Cscript%3Ealert(1)%3C/script%3E&STUDY_ID=a&SESSION_ID=b", b"PROLIFIC_PID"),
    ("PROLIFIC_PID=" + "a" * 65 + "&STUDY_ID=a&SESSION_ID=b", b"PROLIFIC_PID"),
    ("PROLIFIC_PID=abc&STUDY_ID=a", b"SESSION_ID"),
    ("PROLIFIC_PID=abc&STUDY_ID=a%20b&SESSION_ID=c", b"STUDY_ID"),
])
def test_bad_parameters_are_refused_naming_the_parameter_never_echoing_it(query, named):
    pool = crowd_pool(gold=0, training=0)
    study = prolific_study(pool)
    response = Client().get(f"/study/{study.token}/?{query}")
    assert response.status_code == 400
    assert named in response.content
    assert b"<script>alert" not in response.content and b"a" * 65 not in response.content
    assert not CrowdWorker.objects.exists()


def test_mturk_submit_host_must_be_mturk():
    pool = crowd_pool(gold=0, training=0)
    study = mturk_study(pool)
    response = Client().get(mturk_url(study, host="https://evil.example.com"))
    assert response.status_code == 400 and b"turkSubmitTo" in response.content
    assert not CrowdWorker.objects.exists()


def test_pages_of_a_study_are_for_its_workers_only():
    pool = crowd_pool(gold=0, training=0)
    study = prolific_study(pool)
    assert Client().get(f"/study/{study.token}/go/").status_code == 404
    assert Client().get("/study/no-such-token/?PROLIFIC_PID=a&STUDY_ID=b&SESSION_ID=c").status_code == 404
