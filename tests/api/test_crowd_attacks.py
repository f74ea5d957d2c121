"""An attacker's pass over the crowd surface (a worker, or a foreign page, trying to game a study):
each test is one attack that must fail. Findings that broke are marked in their docstring."""
from __future__ import annotations

import re
import uuid

import pytest
from django.test import Client

from annotation.models import CrowdWorker
from annotation.services.crowd.identity import resume_code
from tests.annotation.services.crowd.crowd_world import arrive_by_form, crowd_pool, mturk_study, prolific_study, ticket_of
from tests.api.test_crowd_identity import prolific_query
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_a_crowd_worker_is_not_shown_the_pool_or_dataset_name_on_the_rater_pages():
    """BROKEN before: a crowd account is a rater, so the start page ("/") listed its pool's and
    dataset's names with a link to the rater judging page, which showed them too, as did the
    rater API's my/pools/."""
    study = prolific_study(crowd_pool(gold=0, training=0))
    worker = Client()
    assert arrive_by_form(worker, study, prolific_query()).status_code == 302
    worker.post(f"/study/{study.token}/start/")
    pool = study.pool
    for url in ("/", f"/judge/{pool.pk}/"):
        page = worker.get(url)
        assert pool.name.encode() not in page.content and pool.dataset.name.encode() not in page.content, url
        assert page.status_code == 302 and page["Location"] == f"/study/{study.token}/go/", url
    assert worker.get("/api/v1/my/pools/").json() == []


def _low_arrival_rate(settings, rate="2/hour"):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {
        **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "crowd_arrivals": rate}}


def test_arrivals_from_one_ipv6_subnet_share_one_count(settings):
    """BROKEN before: the arrival throttle counted each IPv6 address apart, and one machine is given
    a whole /64 (2^64 addresses): new accounts and resume-code guesses were unbounded."""
    _low_arrival_rate(settings)
    study = prolific_study(crowd_pool(gold=0, training=0))
    link = f"/study/{study.token}/?{prolific_query()}"
    assert Client(REMOTE_ADDR="2001:db8:1:2::1").get(link).status_code == 200
    assert Client(REMOTE_ADDR="2001:db8:1:2::2").get(link).status_code == 200
    assert Client(REMOTE_ADDR="2001:db8:1:2:ffff::3").get(link).status_code == 429
    api = Client(REMOTE_ADDR="2001:db8:1:2:abcd::9").post(f"/api/v1/study/{study.token}/arrive/", {
        "PROLIFIC_PID": "e" * 24, "STUDY_ID": "s", "SESSION_ID": "x"})
    assert api.status_code == 429
    # Another /64, and IPv4 addresses, are counted apart as before.
    assert Client(REMOTE_ADDR="2001:db8:1:3::1").get(link).status_code == 200
    assert Client(REMOTE_ADDR="198.51.100.1").get(link).status_code == 200
    assert not CrowdWorker.objects.exists()


def test_resume_code_guesses_are_counted_by_the_arrival_throttle(settings):
    """Held: each resume-code try is an arrival; a guesser is stopped after the rate."""
    _low_arrival_rate(settings, "3/hour")
    study = prolific_study(crowd_pool(gold=0, training=0))
    assert arrive_by_form(Client(REMOTE_ADDR="198.51.100.20"), study, prolific_query()).status_code == 302
    thief = Client(REMOTE_ADDR="198.51.100.21")
    page = thief.get(f"/study/{study.token}/?{prolific_query()}")
    assert b"resume code" in page.content
    ticket = ticket_of(page)
    tries = [thief.post(f"/study/{study.token}/enter/", {"ticket": ticket, "action": "resume",
                                                         "resume_code": f"AAAAA-AAAA{n}"}).status_code for n in range(3)]
    assert tries == [403, 403, 429]


@pytest.mark.parametrize("submit_to", ["https://www.mturk.com.evil.example", "https://evil.example/https://www.mturk.com",
                                       "http://www.mturk.com", "https://www.mturk.com@evil.example",
                                       "//evil.example", "javascript:alert(1)", "https://WWW.MTURK.COM.evil.example"])
def test_turk_submit_to_look_alikes_are_refused(submit_to):
    """Held: the completion form posts only to MTurk's own hosts."""
    study = mturk_study(crowd_pool(gold=0, training=0))
    page = Client().get(f"/study/{study.token}/", {"workerId": "A1", "assignmentId": "ASG", "hitId": "H",
                                                   "turkSubmitTo": submit_to})
    assert page.status_code == 400 and b"turkSubmitTo" in page.content


def test_an_entry_ticket_of_one_study_or_worker_id_does_not_open_another():
    """Held: the ticket is signed with its study and its worker id; posting it to another study is
    refused, and its worker id cannot be swapped (the form's fields are not read)."""
    first, second = (prolific_study(crowd_pool(gold=0, training=0)) for _ in range(2))
    browser = Client()
    ticket = ticket_of(browser.get(f"/study/{first.token}/?{prolific_query()}"))
    assert browser.post(f"/study/{second.token}/enter/", {"ticket": ticket, "action": "agree"}).status_code == 400
    assert browser.post(f"/study/{first.token}/enter/", {"ticket": ticket, "action": "agree",
                                                         "PROLIFIC_PID": "b" * 24}).status_code == 302
    assert list(CrowdWorker.objects.values_list("worker_id", flat=True)) == [prolific_query().split("&")[0].split("=")[1]]


def test_a_worker_token_is_refused_on_another_study_and_off_the_study_endpoints():
    """Held: an MTurk worker token opens its own study's pages and endpoints only."""
    study, other = mturk_study(crowd_pool(gold=0, training=0)), mturk_study(crowd_pool(gold=0, training=0))
    arrived = Client().post(f"/api/v1/study/{study.token}/arrive/", {
        "workerId": "A1TOKEN", "assignmentId": "ASG1", "hitId": "H", "turkSubmitTo": "https://www.mturk.com"})
    token = arrived.json()["worker_token"]
    auth = {"HTTP_AUTHORIZATION": f"StudyWorker {token}"}
    assert Client().get(f"/api/v1/study/{study.token}/progress/", **auth).status_code == 200
    assert Client().get(f"/api/v1/study/{other.token}/progress/", **auth).status_code == 403
    assert Client().post(f"/api/v1/pools/{other.pool_id}/next/", {}, content_type="application/json", **auth).status_code == 403
    assert Client().get("/api/v1/me/", **auth).status_code == 403
    assert Client().get(f"/api/v1/pools/{study.pool_id}/crowd-study/", **auth).status_code == 403
    assert Client().get(f"/study/{other.token}/go/", {"wt": token}).status_code == 404


def test_a_forged_forwarded_for_header_does_not_reset_the_arrival_count(settings):
    """Held: without REJUDGE_CLIENT_IP_HEADER the header is ignored; with it, only the entry the
    proxy appended (the last) counts, not those the client wrote before it."""
    _low_arrival_rate(settings, "1/hour")
    study = prolific_study(crowd_pool(gold=0, training=0))
    link = f"/study/{study.token}/?{prolific_query()}"
    assert Client(REMOTE_ADDR="198.51.100.30", HTTP_X_FORWARDED_FOR="203.0.113.1").get(link).status_code == 200
    assert Client(REMOTE_ADDR="198.51.100.30", HTTP_X_FORWARDED_FOR="203.0.113.2").get(link).status_code == 429
    settings.CLIENT_IP_HEADER = "HTTP_X_FORWARDED_FOR"
    proxy = "198.51.100.99"
    assert Client(REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR="203.0.113.3, 192.0.2.7").get(link).status_code == 200
    assert Client(REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR="203.0.113.4, 192.0.2.7").get(link).status_code == 429


def test_a_foreign_page_can_neither_sign_in_nor_sign_out_by_the_entry_forms():
    """Held: a Prolific entry form and the choice page's switch need Django's CSRF token; a signed-in
    admin stays signed in and nothing is made."""
    study = prolific_study(crowd_pool(gold=0, training=0))
    admin = make_user("admin")
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(admin)
    ticket = ticket_of(browser.get(f"/study/{study.token}/?{prolific_query()}"))  # the choice page
    assert browser.post(f"/study/{study.token}/switch/", {"ticket": ticket}).status_code == 403
    assert browser.post(f"/study/{study.token}/enter/", {"ticket": ticket, "action": "agree"}).status_code == 403
    assert int(browser.session["_auth_user_id"]) == admin.pk
    anonymous = Client(enforce_csrf_checks=True)
    assert anonymous.post(f"/study/{study.token}/enter/", {"ticket": ticket, "action": "agree"}).status_code == 403
    assert not CrowdWorker.objects.exists()


def test_a_completed_mturk_worker_gets_no_second_assignment_and_no_more_pairs():
    """Held: once done, a second assignment is refused (`done`), the completion names the first one,
    and the worker token still works for the completion but hands out no pair."""
    study = mturk_study(crowd_pool(gold=0, training=0), quota_pairs=1)
    fields = {"workerId": "A1DONE", "assignmentId": "ASG1", "hitId": "H", "turkSubmitTo": "https://www.mturk.com"}
    token = Client().post(f"/api/v1/study/{study.token}/arrive/", fields).json()["worker_token"]
    auth = {"HTTP_AUTHORIZATION": f"StudyWorker {token}"}
    api = Client()
    api.post(f"/api/v1/study/{study.token}/consent/", {"agree": True}, content_type="application/json", **auth)
    api.post(f"/api/v1/study/{study.token}/guidelines-read/", {}, content_type="application/json", **auth)
    lease = api.post(f"/api/v1/pools/{study.pool_id}/next/", {}, content_type="application/json", **auth).json()
    assert api.post("/api/v1/labels/", {"client_id": uuid.uuid4().hex, "lease_id": lease["assignment"]["lease_id"],
                                        "value": "relevant", "seconds": 3.0}, content_type="application/json",
                    **auth).status_code == 201
    done = api.get(f"/api/v1/study/{study.token}/progress/", **auth).json()
    assert done["done"] and done["completion"]["fields"]["assignmentId"] == "ASG1"
    again = api.post(f"/api/v1/pools/{study.pool_id}/next/", {}, content_type="application/json", **auth)
    assert again.status_code != 200 or not again.json().get("assignment"), again.content
    code = resume_code(CrowdWorker.objects.get(worker_id="A1DONE"))
    second = Client().post(f"/api/v1/study/{study.token}/arrive/", {**fields, "assignmentId": "ASG2", "resume_code": code})
    assert second.status_code == 409 and second.json()["code"] == "done"
    assert CrowdWorker.objects.get(worker_id="A1DONE").completed_session_id == "ASG1"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_return_racing_a_rejoin_cannot_hold_a_place_a_newcomer_took(require_postgres, monkeypatch):
    """BROKEN before: a rejoin looked at whether the worker had returned before locking anything; a
    return committed in between (and a newcomer taking the freed place) let the returned worker back
    in without a place: two workers in a study of one place. Here the return and the newcomer run in
    another connection at the moment the rejoin locks the worker's row."""
    import threading

    from django.db import connection

    from annotation.services.crowd.arrivals import ArrivalRefused, arrival_from_query, study_arrive, worker_return

    study = prolific_study(crowd_pool(gold=0, training=0), places=1)
    query = lambda pid, session: {"PROLIFIC_PID": pid, "STUDY_ID": "st", "SESSION_ID": session}  # noqa: E731
    first = study_arrive(study=study, arrival=arrival_from_query(study=study, query=query("1" * 24, "a")))
    main, fired, outcome = threading.get_ident(), [], []
    original = CrowdWorker.objects.select_for_update

    def meanwhile():
        try:
            worker_return(worker=first)
            study_arrive(study=study, arrival=arrival_from_query(study=study, query=query("2" * 24, "b")))
            outcome.append("newcomer in")
        except ArrivalRefused as refused:
            outcome.append(refused.code)
        finally:
            connection.close()

    def hooked(*args, **kwargs):
        if threading.get_ident() == main and not fired:
            fired.append(True)
            other = threading.Thread(target=meanwhile)
            other.start()
            other.join(timeout=3)  # blocked behind the rejoin's locks (fixed) or done (before)
            outcome.append(other)
        return original(*args, **kwargs)

    monkeypatch.setattr(CrowdWorker.objects, "select_for_update", hooked)
    try:
        study_arrive(study=study, arrival=arrival_from_query(study=study, query=query("1" * 24, "again")),
                     known_worker_ids={"1" * 24})
    except ArrivalRefused as refused:
        assert refused.code == "full"
    monkeypatch.undo()
    for item in outcome:
        if isinstance(item, threading.Thread):
            item.join(timeout=30)
    assert fired
    taken = CrowdWorker.objects.filter(study=study).exclude(stage=CrowdWorker.Stage.RETURNED).count()
    assert taken <= 1, (taken, outcome)


def test_no_one_but_the_worker_frees_their_place_by_return():
    """Held: a foreign page's POST to the return page (no CSRF token, or a made-up worker token), a
    worker of another study and the API without credentials all fail; the place stays taken."""
    study, other = prolific_study(crowd_pool(gold=0, training=0)), prolific_study(crowd_pool(gold=0, training=0))
    victim = Client(enforce_csrf_checks=True)
    page = victim.get(f"/study/{study.token}/?{prolific_query()}")
    csrf = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page.content).group(1).decode()
    assert victim.post(f"/study/{study.token}/enter/", {"ticket": ticket_of(page), "action": "agree",
                                                        "csrfmiddlewaretoken": csrf}).status_code == 302
    assert victim.post(f"/study/{study.token}/return/").status_code == 403  # the victim's browser, forged
    assert victim.post(f"/study/{study.token}/return/?wt=made-up").status_code == 403
    stranger = Client()
    assert arrive_by_form(stranger, other, prolific_query(pid="c" * 24)).status_code == 302
    assert stranger.post(f"/study/{study.token}/return/").status_code == 404
    assert stranger.post(f"/api/v1/study/{study.token}/return/").status_code == 404
    assert Client().post(f"/api/v1/study/{study.token}/return/").status_code in (401, 403)
    assert CrowdWorker.objects.get(study=study).stage != CrowdWorker.Stage.RETURNED
