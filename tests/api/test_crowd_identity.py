"""Crowd identity, arrivals and places (issue 22, findings 2, 3, 4): a worker id is not an account,
a study link never signs anyone out by itself, a GET makes nothing, arrivals are throttled per
address, and a study has a cap on places."""
from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from annotation.models import CrowdWorker, Label
from tests.annotation.services.crowd.crowd_world import arrive_by_form, crowd_pool, mturk_study, prolific_study, ticket_of
from tests.factories import make_user

PASSWORD = "pw-123456"  # tests.factories' password

pytestmark = pytest.mark.django_db

VICTIM = "A1VICTIMWORKER"


def mturk_query(worker=VICTIM, assignment="ASGVICTIM"):
    return f"workerId={worker}&assignmentId={assignment}&hitId=HIT1&turkSubmitTo=https://workersandbox.mturk.com"


def prolific_query(pid="5f1e2d3c4b5a69788796a5b4", session="s1"):
    return f"PROLIFIC_PID={pid}&STUDY_ID=st1&SESSION_ID={session}"


def api_arrive(client, study, **fields):
    return client.post(f"/api/v1/study/{study.token}/arrive/", fields)


def judge_one(client, study):
    body = client.post(f"/api/v1/pools/{study.pool_id}/next/", {}, content_type="application/json").json()
    reply = client.post("/api/v1/labels/", {"client_id": uuid.uuid4().hex, "lease_id": body["assignment"]["lease_id"],
                                            "value": "relevant", "seconds": 3.0}, content_type="application/json")
    assert reply.status_code == 201, reply.content


def working_victim(study, query):
    """A worker who arrived by the link's form, read the guidelines and judged one pair."""
    victim = Client()
    assert arrive_by_form(victim, study, query).status_code == 302
    victim.post(f"/study/{study.token}/start/")
    judge_one(victim, study)
    return victim


def signed_in_as(client) -> int | None:
    user_id = client.session.get("_auth_user_id")
    return int(user_id) if user_id else None


# --- finding 2: a worker id is not an account ---------------------------------------------------

def test_someone_elses_worker_id_with_ones_own_assignment_gets_nothing_of_theirs():
    study = mturk_study(crowd_pool(gold=0, training=0), quota_pairs=2)
    victim = working_victim(study, mturk_query())
    attacker = Client()
    reply = api_arrive(attacker, study, workerId=VICTIM, assignmentId="ASGATTACKER", hitId="HIT1",
                       turkSubmitTo="https://workersandbox.mturk.com")
    assert reply.status_code == 409 and reply.json()["code"] == "resume_needed"
    assert set(reply.json()) == {"detail", "code"}  # no progress, no token, no code
    assert signed_in_as(attacker) is None
    worker = CrowdWorker.objects.get(worker_id=VICTIM)
    assert (worker.session_id, worker.arrivals) == ("ASGVICTIM", 1)
    # The real worker finishes and is sent back with their own assignment.
    judge_one(victim, study)
    done = victim.get(f"/api/v1/study/{study.token}/progress/").json()
    assert done["done"] and done["completion"]["fields"]["assignmentId"] == "ASGVICTIM"


def test_a_fresh_browser_with_a_prolific_pid_is_not_signed_in_as_that_worker():
    study = prolific_study(crowd_pool(gold=0, training=0))
    working_victim(study, prolific_query())
    stranger = Client()
    page = stranger.get(f"/study/{study.token}/?{prolific_query(session='s2')}")
    assert page.status_code == 200 and b'id="resume-code-input"' in page.content
    assert signed_in_as(stranger) is None
    assert stranger.get(f"/api/v1/study/{study.token}/progress/").status_code in (403, 404)
    # Posting the resume form without the code, or with a wrong one, signs nobody in either.
    for code in ("", "AAAAA-AAAAA"):
        refused = stranger.post(f"/study/{study.token}/enter/", {"ticket": ticket_of(page), "action": "resume",
                                                                "resume_code": code})
        assert refused.status_code in (403, 409) and signed_in_as(stranger) is None
    # Nor does the "I agree" form of the entry page, posted for an id that exists.
    agree = stranger.post(f"/study/{study.token}/enter/", {"ticket": ticket_of(page), "action": "agree"})
    assert agree.status_code == 409 and signed_in_as(stranger) is None
    assert CrowdWorker.objects.get().arrivals == 1


def test_the_resume_code_shown_to_the_worker_restores_the_work_in_another_browser():
    study = prolific_study(crowd_pool(gold=0, training=0), quota_pairs=4)
    victim = working_victim(study, prolific_query())
    work_page = victim.get(f"/study/{study.token}/work/").content.decode()
    code = victim.get(f"/api/v1/study/{study.token}/progress/").json()["resume_code"]
    assert f'<code id="resume-code">{code}</code>' in work_page and len(code) == 11
    laptop = Client()
    page = laptop.get(f"/study/{study.token}/?{prolific_query(session='s2')}")
    back = laptop.post(f"/study/{study.token}/enter/", {"ticket": ticket_of(page), "action": "resume", "resume_code": code})
    assert back.status_code == 302 and laptop.get(back["Location"])["Location"] == f"/study/{study.token}/work/"
    state = laptop.get(f"/api/v1/study/{study.token}/progress/").json()
    assert state["judged"] == 1 and state["stage"] == "work"
    # From now on this browser is the worker's own: the link takes it straight on.
    assert laptop.get(f"/study/{study.token}/?{prolific_query(session='s3')}").status_code == 302


def test_a_second_assignment_is_refused_once_the_worker_has_judged():
    study = mturk_study(crowd_pool(gold=0, training=0), quota_pairs=3)
    # Before any judging, a new assignment (the first returned or abandoned) takes the old one's place.
    fresh = Client()
    arrive_by_form(fresh, study, mturk_query(worker="A2FRESH", assignment="ASGOLD"))
    assert fresh.get(f"/study/{study.token}/?{mturk_query(worker='A2FRESH', assignment='ASGNEW')}").status_code == 302
    assert CrowdWorker.objects.get(worker_id="A2FRESH").session_id == "ASGNEW"
    victim = working_victim(study, mturk_query())
    page = victim.get(f"/study/{study.token}/?{mturk_query(assignment='ASGSECOND')}")
    assert page.status_code == 409 and b"under another assignment" in page.content
    api = api_arrive(victim, study, workerId=VICTIM, assignmentId="ASGSECOND", hitId="HIT1",
                     turkSubmitTo="https://workersandbox.mturk.com")
    assert api.status_code == 409 and api.json()["code"] == "other_assignment"
    assert CrowdWorker.objects.get(worker_id=VICTIM).session_id == "ASGVICTIM"


# --- finding 3: a study link does not replace whoever is signed in -------------------------------

def test_a_signed_in_admin_opening_a_study_link_stays_signed_in_and_is_asked():
    study = prolific_study(crowd_pool(gold=0, training=0))
    admin = make_user("admin")
    client = Client()
    assert client.post("/login/", {"username": admin.username, "password": PASSWORD}).status_code == 302
    page = client.get(f"/study/{study.token}/?{prolific_query()}")
    assert page.status_code == 200 and admin.username.encode() in page.content and b'id="choice-switch"' in page.content
    assert signed_in_as(client) == admin.pk and client.get("/admin-ui/").status_code == 200
    # A forged "I agree" for the link (with the page's own ticket) still only asks.
    entry_ticket = ticket_of(page)
    again = client.post(f"/study/{study.token}/enter/", {"ticket": entry_ticket, "action": "agree"})
    assert again.status_code == 200 and b'id="choice-switch"' in again.content and signed_in_as(client) == admin.pk
    assert api_arrive(client, study, PROLIFIC_PID="5f1e2d3c4b5a69788796a5b4", STUDY_ID="s",
                      SESSION_ID="x").json()["code"] == "signed_in"
    assert signed_in_as(client) == admin.pk and not CrowdWorker.objects.exists()
    # Choosing to take part (a POST) signs out and shows the study's entry page.
    switched = client.post(f"/study/{study.token}/switch/", {"ticket": entry_ticket})
    assert switched.status_code == 302 and signed_in_as(client) is None
    assert b'id="consent-agree"' in client.get(switched["Location"]).content
    assert client.get(f"/study/{study.token}/switch/").status_code == 405


# --- finding 4: arrivals make nothing on a GET, are throttled, and have places -------------------

def test_a_get_of_the_study_link_makes_no_account():
    study = prolific_study(crowd_pool(gold=0, training=0))
    users = get_user_model().objects.count()
    for n in range(5):
        assert Client().get(f"/study/{study.token}/?{prolific_query(pid=f'{n:024x}')}").status_code == 200
    assert get_user_model().objects.count() == users and not CrowdWorker.objects.exists()


def test_declining_on_the_entry_page_makes_nothing():
    study = prolific_study(crowd_pool(gold=0, training=0))
    response = arrive_by_form(Client(), study, prolific_query(), action="decline")
    assert response.status_code == 200 and b'id="declined"' in response.content
    assert not CrowdWorker.objects.exists()


def test_arrivals_are_throttled_per_address(settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {
        **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "crowd_arrivals": "4/hour"}}
    study = prolific_study(crowd_pool(gold=0, training=0))
    here = {"REMOTE_ADDR": "198.51.100.7"}
    assert arrive_by_form(Client(**here), study, prolific_query(pid="a" * 24)).status_code == 302  # 2 of 4
    assert Client(**here).get(f"/study/{study.token}/?{prolific_query(pid='b' * 24)}").status_code == 200  # 3
    assert Client(**here).get(f"/study/{study.token}/?{prolific_query(pid='c' * 24)}").status_code == 200  # 4
    refused = Client(**here).get(f"/study/{study.token}/?{prolific_query(pid='d' * 24)}")
    assert refused.status_code == 429 and b"Too many arrivals" in refused.content and int(refused["Retry-After"]) > 0
    api = Client(**here).post(f"/api/v1/study/{study.token}/arrive/", {"PROLIFIC_PID": "e" * 24, "STUDY_ID": "s",
                                                                      "SESSION_ID": "x"})
    assert api.status_code == 429
    # Another address is counted apart; behind a proxy, the address it appended is the one counted.
    assert Client(REMOTE_ADDR="198.51.100.8").get(f"/study/{study.token}/?{prolific_query()}").status_code == 200
    settings.CLIENT_IP_HEADER = "HTTP_X_FORWARDED_FOR"
    proxy = {"REMOTE_ADDR": "198.51.100.7"}
    assert Client(**proxy, HTTP_X_FORWARDED_FOR="203.0.113.5").get(
        f"/study/{study.token}/?{prolific_query()}").status_code == 200
    assert CrowdWorker.objects.count() == 1


def test_places_cap_the_workers_and_a_return_without_answers_frees_one():
    study = prolific_study(crowd_pool(gold=0, training=0), places=2, quota_pairs=3)
    first, second = Client(), Client()
    assert arrive_by_form(first, study, prolific_query(pid="1" * 24)).status_code == 302
    assert arrive_by_form(second, study, prolific_query(pid="2" * 24)).status_code == 302
    # A returning worker does not take a second place.
    assert first.get(f"/study/{study.token}/?{prolific_query(pid='1' * 24, session='again')}").status_code == 302
    full = Client().get(f"/study/{study.token}/?{prolific_query(pid='3' * 24)}")
    assert full.status_code == 409 and b"This study is full" in full.content
    # The first worker judges, then returns the task: they keep their place and answers.
    first.post(f"/study/{study.token}/start/")
    judge_one(first, study)
    kept = first.post(f"/api/v1/study/{study.token}/return/").json()
    assert kept["freed"] is False and kept["stage"] == "work"
    assert Client().get(f"/study/{study.token}/?{prolific_query(pid='3' * 24)}").status_code == 409
    # The second returns having judged nothing: the place goes to the next worker.
    page = second.post(f"/study/{study.token}/return/")
    assert page.status_code == 200 and b"your place in the study went back" in page.content
    third = Client()
    assert arrive_by_form(third, study, prolific_query(pid="3" * 24)).status_code == 302
    assert CrowdWorker.objects.filter(study=study).exclude(stage="returned").count() == 2
    # The second, back from the same browser, finds the study full again.
    assert second.get(f"/study/{study.token}/?{prolific_query(pid='2' * 24)}").status_code == 409
    assert Label.objects.filter(rater__crowd_worker__worker_id="1" * 24).count() == 1


def test_places_are_read_and_written_by_the_crowd_study_api(as_role):
    pool = crowd_pool(gold=0, training=0)
    admin = as_role("admin")
    body = {"platform": "prolific", "title": "T", "completion_code": "C1", "quota_pairs": 2, "consent_text": "ok",
            "training_required": False, "places": 10}
    created = admin.put(f"/api/v1/pools/{pool.pk}/crowd-study/", body, format="json")
    assert created.status_code == 201 and created.json()["places"] == 10
    assert admin.get(f"/api/v1/pools/{pool.pk}/crowd-study/").json()["places"] == 10
    for bad in (0, -3, "many", 2.5):
        refused = admin.put(f"/api/v1/pools/{pool.pk}/crowd-study/", {"places": bad}, format="json")
        assert refused.status_code == 400 and "places" in refused.json(), bad
    uncapped = admin.put(f"/api/v1/pools/{pool.pk}/crowd-study/", {"places": None}, format="json")
    assert uncapped.status_code == 200 and uncapped.json()["places"] is None


# --- the MTurk frame: no cookie, so no session, and no CSRF cookie ------------------------------

def test_an_mturk_form_without_cookies_goes_on_by_token_and_touches_no_session():
    study = mturk_study(crowd_pool(gold=0, training=0))
    page = Client().get(f"/study/{study.token}/?{mturk_query()}")
    frame = Client(enforce_csrf_checks=True)  # a browser in MTurk's iframe: no cookie sent or kept
    response = frame.post(f"/study/{study.token}/enter/", {"ticket": ticket_of(page), "action": "agree"})
    assert response.status_code == 302 and "?wt=" in response["Location"]
    assert "sessionid" not in response.cookies and signed_in_as(frame) is None
    assert CrowdWorker.objects.get().stage == CrowdWorker.Stage.GUIDELINES
    # A Prolific study's form is a normal page's: without CSRF it is refused, and so is a forged ticket.
    prolific = prolific_study(crowd_pool(gold=0, training=0))
    page = Client().get(f"/study/{prolific.token}/?{prolific_query()}")
    assert frame.post(f"/study/{prolific.token}/enter/", {"ticket": ticket_of(page), "action": "agree"}).status_code == 403
    forged = Client().post(f"/study/{prolific.token}/enter/", {"ticket": ticket_of(page)[:-4] + "AAAA", "action": "agree"})
    assert forged.status_code == 400 and CrowdWorker.objects.count() == 1


def test_a_silent_worker_who_judged_nothing_gives_their_place_to_a_newcomer_when_full():
    """The platforms do not tell us of a return: a worker silent past the idle timeout who judged
    nothing counts as returned once the study is full and someone new arrives."""
    study = prolific_study(crowd_pool(gold=0, training=0), places=1, idle_timeout_seconds=60)
    gone = Client()
    assert arrive_by_form(gone, study, prolific_query(pid="1" * 24)).status_code == 302
    assert Client().get(f"/study/{study.token}/?{prolific_query(pid='2' * 24)}").status_code == 409  # not silent yet
    CrowdWorker.objects.filter(worker_id="1" * 24).update(last_seen_at=timezone.now() - timedelta(seconds=61))
    assert arrive_by_form(Client(), study, prolific_query(pid="2" * 24)).status_code == 302
    assert CrowdWorker.objects.get(worker_id="1" * 24).stage == CrowdWorker.Stage.RETURNED
    assert gone.get(f"/study/{study.token}/?{prolific_query(pid='1' * 24)}").status_code == 409  # full again
    assert gone.get(f"/study/{study.token}/go/").content.count(b"You have returned this task") == 1


def test_the_api_arrival_without_csrf_signs_nobody_in():
    """The API arrival signs in by session, so it is CSRF-checked like a form; an MTurk call
    without the CSRF cookie (the iframe) is served by the worker token alone."""
    frame = Client(enforce_csrf_checks=True)
    prolific = prolific_study(crowd_pool(gold=0, training=0))
    refused = frame.post(f"/api/v1/study/{prolific.token}/arrive/", {"PROLIFIC_PID": "a" * 24, "STUDY_ID": "s",
                                                                     "SESSION_ID": "x"})
    assert refused.status_code == 403 and not CrowdWorker.objects.exists()
    study = mturk_study(crowd_pool(gold=0, training=0))
    reply = frame.post(f"/api/v1/study/{study.token}/arrive/", {"workerId": VICTIM, "assignmentId": "ASG1", "hitId": "H",
                                                                "turkSubmitTo": "https://www.mturk.com"})
    assert reply.status_code == 200 and reply.json()["worker_token"] and signed_in_as(frame) is None
    assert "sessionid" not in reply.cookies
