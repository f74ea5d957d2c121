"""REST API of ranking studies: the rater's contract (next, heartbeat, release, submit), the
admin's endpoints (create as a job, list, progress, members, report), and who is refused where."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.models import Job, RankingLease, RankingStudy, RankingSubmission, RankingTask, Report
from annotation.services.ranking.leases import ranking_lease_next, ranking_leases_expire
from annotation.services.ranking.study import ranking_memberships_grant
from annotation.services.accounts.raters import rater_set_paused
from tests.annotation.services.ranking.helpers import make_benchmark, make_study
from tests.conftest import wait_for_job
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def client_for(user) -> APIClient:
    c = APIClient()
    c.force_authenticate(user)
    return c


@pytest.fixture
def study_setup():
    rater = make_user("rater")
    study = make_study(n_clips=2, raters=[rater])
    return study, rater, client_for(rater)


def next_task(client, study, exclude=()):
    return client.post(f"/api/v1/ranking-studies/{study.pk}/next/", {"exclude": list(exclude)}, format="json")


# --- rater contract ----------------------------------------------------------------------------

def test_my_studies_lists_only_mine(study_setup):
    study, rater, client = study_setup
    make_study(make_benchmark(name="other"), n_clips=1, name="not mine")
    assert client.get("/api/v1/my/ranking-studies/").json() == [
        {"id": study.pk, "name": study.name, "dataset": "bench", "submitted": 0, "left": 2}]
    a = next_task(client, study).json()["assignment"]
    client.post("/api/v1/ranking-submissions/", {"client_id": "k", "lease_id": a["lease_id"],
                                                 "order": [c["id"] for c in a["captions"]]}, format="json")
    (mine,) = client.get("/api/v1/my/ranking-studies/").json()
    assert (mine["submitted"], mine["left"]) == (1, 1)


def test_next_reveals_clip_and_captions_only(study_setup):
    study, rater, client = study_setup
    resp = next_task(client, study)
    assert resp.status_code == 200
    body = resp.json()
    assert body["reason"] is None
    a = body["assignment"]
    assert set(a) == {"lease_id", "item_id", "clip", "captions", "expires_at"}
    assert set(a["clip"]) == {"id", "url", "start", "end", "duration"}
    assert a["clip"]["url"].endswith(".mp4")
    assert len(a["captions"]) == 5 and all(set(c) == {"id", "text"} for c in a["captions"])
    task = study.tasks.get(leases__token=a["lease_id"])
    assert sorted(c["id"] for c in a["captions"]) == sorted(task.captions.values_list("caption_id", flat=True))
    reload = next_task(client, study).json()["assignment"]  # a reloaded page: same lease, same caption order
    assert (reload["lease_id"], reload["captions"]) == (a["lease_id"], a["captions"])
    second = next_task(client, study, exclude=[a["lease_id"]]).json()["assignment"]
    assert second["item_id"] != a["item_id"] and second["lease_id"] != a["lease_id"]
    assert next_task(client, study, exclude=[a["lease_id"], second["lease_id"]]).json() == {"assignment": None,
                                                                                          "reason": "holding_max"}


def test_next_reasons(study_setup):
    study, rater, client = study_setup
    assert next_task(client_for(make_user("rater")), study).status_code == 404  # not a member
    assert client.post("/api/v1/ranking-studies/999999/next/", {}, format="json").status_code == 404
    rater_set_paused(user=rater, paused=True)
    assert next_task(client, study).json() == {"assignment": None, "reason": "paused"}
    rater_set_paused(user=rater, paused=False)
    for task in study.tasks.all():
        lease = next_task(client, study).json()["assignment"]
        order = [c["id"] for c in lease["captions"]]
        assert client.post("/api/v1/ranking-submissions/", {"client_id": f"c{task.pk}", "lease_id": lease["lease_id"],
                                                             "order": order}, format="json").status_code == 201
    assert next_task(client, study).json() == {"assignment": None, "reason": "no_work_left"}


def test_heartbeat_and_release(study_setup):
    study, rater, client = study_setup
    a = next_task(client, study).json()["assignment"]
    resp = client.post(f"/api/v1/ranking-leases/{a['lease_id']}/heartbeat/")
    assert resp.status_code == 200 and "expires_at" in resp.json()
    other = client_for(make_user("rater"))
    assert other.post(f"/api/v1/ranking-leases/{a['lease_id']}/heartbeat/").status_code == 404
    assert other.post(f"/api/v1/ranking-leases/{a['lease_id']}/release/").status_code == 404
    RankingLease.objects.filter(token=a["lease_id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert ranking_leases_expire() == 1
    gone = client.post(f"/api/v1/ranking-leases/{a['lease_id']}/heartbeat/")
    assert gone.status_code == 410 and gone.json()["state"] == "expired" and gone.json()["still_needed"] is True
    b = next_task(client, study).json()["assignment"]
    assert client.post(f"/api/v1/ranking-leases/{b['lease_id']}/release/").status_code == 204
    assert RankingLease.objects.get(token=b["lease_id"]).state == "released"


def test_submission_contract(study_setup):
    study, rater, client = study_setup
    a = next_task(client, study).json()["assignment"]
    order = [c["id"] for c in a["captions"]]
    body = {"client_id": "k1", "lease_id": a["lease_id"], "order": order, "seconds": 31.5}
    created = client.post("/api/v1/ranking-submissions/", body, format="json")
    assert created.status_code == 201
    sub = created.json()["submission"]
    assert set(sub) == {"client_id", "item_id", "order", "created_at"}
    assert (sub["client_id"], sub["item_id"], sub["order"]) == ("k1", a["item_id"], order)
    replay = client.post("/api/v1/ranking-submissions/", body, format="json")
    assert replay.status_code == 200 and replay.json() == created.json()
    conflict = client.post("/api/v1/ranking-submissions/", body | {"client_id": "k2"}, format="json")
    assert conflict.status_code == 409
    assert RankingSubmission.objects.count() == 1


@pytest.mark.parametrize("change,field", [
    (lambda o: o[:4], "order"),
    (lambda o: o[:4] + o[:1], "order"),
    (lambda o: o + [0], "order"),
    (lambda o: ["x"] + o[1:], "order"),
])
def test_wrong_caption_set_is_a_400_naming_order(study_setup, change, field):
    study, rater, client = study_setup
    a = next_task(client, study).json()["assignment"]
    order = change([c["id"] for c in a["captions"]])
    resp = client.post("/api/v1/ranking-submissions/", {"client_id": "k", "lease_id": a["lease_id"], "order": order},
                       format="json")
    assert resp.status_code == 400 and field in resp.json()
    assert RankingSubmission.objects.count() == 0


def test_an_ordering_needs_my_own_lease(study_setup):
    study, rater, client = study_setup
    a = next_task(client, study).json()["assignment"]
    order = [c["id"] for c in a["captions"]]
    outsider = client_for(make_user("rater"))
    for token in (a["lease_id"], "no-such-lease"):  # someone else's lease is no lease at all
        resp = outsider.post("/api/v1/ranking-submissions/", {"client_id": "k", "lease_id": token, "order": order},
                             format="json")
        assert resp.status_code == 404 and resp.json()["code"] == "not_found"
    fellow = make_user("rater")
    ranking_memberships_grant(study=study, users=[fellow])  # a member of the same study, but not the holder
    resp = client_for(fellow).post("/api/v1/ranking-submissions/", {"client_id": "k", "lease_id": a["lease_id"],
                                                                    "order": order}, format="json")
    assert resp.status_code == 404
    rater_set_paused(user=rater, paused=True)
    resp = client.post("/api/v1/ranking-submissions/", {"client_id": "k", "lease_id": a["lease_id"], "order": order},
                       format="json")
    assert resp.status_code == 403 and resp.json()["code"] == "paused"
    gone = client.post(f"/api/v1/ranking-leases/{a['lease_id']}/heartbeat/")  # the paused rater's hold ends
    assert gone.status_code == 410 and gone.json()["state"] == "released"
    assert RankingSubmission.objects.count() == 0 and RankingTask.objects.filter(active_leases__gt=0).count() == 0


# --- admin -------------------------------------------------------------------------------------

def test_admin_creates_a_study_through_a_job(as_role, run_jobs):
    dataset = make_benchmark()
    admin = as_role("admin")
    with run_jobs():
        resp = admin.post("/api/v1/ranking-studies/", {"dataset": dataset.pk, "name": "s1", "proxies": ["bow"],
                                                       "n_clips": 3, "seed": 5}, format="json")
    assert resp.status_code == 202 and resp["Location"] == f"/api/v1/jobs/{resp.json()['id']}/"
    job = Job.objects.get(pk=resp.json()["id"])
    assert job.status == "succeeded", job.message
    study = RankingStudy.objects.get(pk=job.result["study_id"])
    assert (study.n_clips, study.seed, study.raters_per_task, study.mode) == (3, 5, 3, "modern")
    assert study.tasks.count() == 3 and job.result["tasks"] == 3
    listed = admin.get("/api/v1/ranking-studies/").json()
    assert [s["id"] for s in listed] == [study.pk]
    detail = admin.get(f"/api/v1/ranking-studies/{study.pk}/").json()
    assert detail["progress"]["tasks"] == 3 and detail["progress"]["submissions_needed"] == 9
    assert detail["reports"] == []


@pytest.mark.parametrize("body,message", [
    ({"proxies": ["nope"]}, "proxies"),
    ({"n_clips": 8}, "between 1 and 7"),
    ({"raters_per_task": 1}, "raters_per_task"),
    ({"proxies": ["bow", "bow"]}, "once"),
])
def test_bad_study_requests_are_400(as_role, body, message):
    dataset = make_benchmark()
    resp = as_role("admin").post("/api/v1/ranking-studies/", {"dataset": dataset.pk, "name": "s", "proxies": ["bow"],
                                                              "n_clips": 2} | body, format="json")
    assert resp.status_code == 400 and message in str(resp.json())
    assert Job.objects.count() == 0


def test_members_and_report(as_role, run_jobs):
    admin = as_role("admin")
    study = make_study(n_clips=1)
    rs = [make_user("rater") for _ in range(3)]
    resp = admin.post(f"/api/v1/ranking-studies/{study.pk}/members/", {"raters": [r.pk for r in rs]}, format="json")
    assert resp.status_code == 201 and resp.json() == {"added": 3}
    assert len(admin.get(f"/api/v1/ranking-studies/{study.pk}/members/").json()) == 3
    researcher = make_user("researcher")
    assert admin.post(f"/api/v1/ranking-studies/{study.pk}/members/", {"raters": [researcher.pk]},
                      format="json").status_code == 400
    assert admin.post(f"/api/v1/ranking-studies/{study.pk}/members/", {"raters": [10**8]}, format="json").status_code == 400
    assert admin.post(f"/api/v1/ranking-studies/{study.pk}/report/").status_code == 400  # nothing complete yet
    for r in rs:
        c = client_for(r)
        a = next_task(c, study).json()["assignment"]
        c.post("/api/v1/ranking-submissions/", {"client_id": "k", "lease_id": a["lease_id"],
                                                "order": [x["id"] for x in a["captions"]]}, format="json")
    with run_jobs():
        resp = admin.post(f"/api/v1/ranking-studies/{study.pk}/report/")
    assert resp.status_code == 202
    job = Job.objects.get(pk=resp.json()["id"])
    assert job.status == "succeeded", job.message
    report = Report.objects.get(pk=job.result["report_id"])
    assert report.kind == "human_proxy" and report.result["proxies"]["bow"]["tasks"] == 1
    assert admin.get(f"/api/v1/ranking-studies/{study.pk}/").json()["reports"] == [report.pk]


# --- who may call what -------------------------------------------------------------------------

RATER_ENDPOINTS = [
    ("get", "/api/v1/my/ranking-studies/"),
    ("post", "/api/v1/ranking-studies/{study}/next/"),
    ("post", "/api/v1/ranking-leases/{lease}/heartbeat/"),
    ("post", "/api/v1/ranking-leases/{lease}/release/"),
    ("post", "/api/v1/ranking-submissions/"),
]
ADMIN_ENDPOINTS = [
    ("post", "/api/v1/ranking-studies/"),
    ("get", "/api/v1/ranking-studies/{study}/members/"),
    ("post", "/api/v1/ranking-studies/{study}/members/"),
    ("post", "/api/v1/ranking-studies/{study}/report/"),
]
READ_ENDPOINTS = [
    ("get", "/api/v1/ranking-studies/"),
    ("get", "/api/v1/ranking-studies/{study}/"),
]


def _call(client, method, url, study, lease):
    return getattr(client, method)(url.format(study=study.pk, lease=lease.token), {}, format="json")


@pytest.fixture
def targets():
    rater = make_user("rater")
    study = make_study(n_clips=1, raters=[rater])
    return study, ranking_lease_next(study=study, rater=rater).lease


@pytest.mark.parametrize("method,url", RATER_ENDPOINTS)
@pytest.mark.parametrize("role", [None, "admin", "researcher"])
def test_rater_endpoints_refuse_other_roles(as_role, targets, role, method, url):
    resp = _call(as_role(role), method, url, *targets)
    assert resp.status_code in ((401, 403) if role is None else (403,))


@pytest.mark.parametrize("method,url", ADMIN_ENDPOINTS)
@pytest.mark.parametrize("role", [None, "rater", "researcher"])
def test_admin_endpoints_refuse_other_roles(as_role, targets, role, method, url):
    resp = _call(as_role(role), method, url, *targets)
    assert resp.status_code in ((401, 403) if role is None else (403,))


@pytest.mark.parametrize("method,url", READ_ENDPOINTS)
def test_researchers_read_studies_raters_do_not(as_role, targets, method, url):
    assert _call(as_role("researcher"), method, url, *targets).status_code == 200
    assert _call(as_role("rater"), method, url, *targets).status_code == 403
    assert _call(as_role(None), method, url, *targets).status_code in (401, 403)


@pytest.mark.worker
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_study_is_built_by_a_real_worker(celery_worker_process):
    dataset = make_benchmark()
    admin = client_for(make_user("admin"))
    resp = admin.post("/api/v1/ranking-studies/", {"dataset": dataset.pk, "name": "w", "proxies": ["bow"], "n_clips": 4},
                      format="json")
    assert resp.status_code == 202 and resp.json()["status"] == "queued"
    done = wait_for_job(resp.json()["id"], log_path=celery_worker_process["log"])
    assert done.status == Job.Status.SUCCEEDED, done.message
    assert RankingStudy.objects.get(pk=done.result["study_id"]).tasks.count() == 4
