"""The MTurk worker token: what MTurk's iframe (no cookies) works with. Accepted on its own study's
endpoints and its pool's queue only, without CSRF; refused on another study, another pool and
every admin or researcher endpoint; expired or tampered tokens are 403 with a clear message and
are never repeated or logged. The study pages of an MTurk study may be framed by MTurk's two
origins, and nothing else may be."""
from __future__ import annotations

import logging
import time
import uuid
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.core import signing
from django.test import Client

from annotation.models import CrowdWorker
from annotation.services.crowd.worker_tokens import SALT, WorkerTokenRefused, worker_from_token, worker_token_issue
from tests.annotation.services.crowd.crowd_world import arrive_by_form, crowd_pool, mturk_study, prolific_study

pytestmark = pytest.mark.django_db

MTURK_ORIGINS = "https://worker.mturk.com https://workersandbox.mturk.com"


def arrive(study, worker="A1WORKER", assignment="ASG1") -> tuple[str, str]:
    """The MTurk link, as MTurk's iframe opens it; returns (the redirect's path, the worker token)."""
    response = arrive_by_form(Client(), study, f"workerId={worker}&assignmentId={assignment}&hitId=HIT1"
                                               "&turkSubmitTo=https://workersandbox.mturk.com")
    assert response.status_code == 302, response.content[:300]
    location = urlsplit(response["Location"])
    return location.path, parse_qs(location.query)["wt"][0]


def iframe_client(token: str) -> Client:
    """No cookie at all (as in the cross-site iframe) and CSRF checked as a browser would be."""
    return Client(enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"StudyWorker {token}")


def frame_ancestors(response) -> str:
    policy = response["Content-Security-Policy"]
    return next(part.strip() for part in policy.split(";") if part.strip().startswith("frame-ancestors"))


@pytest.fixture
def two_studies():
    a, b = crowd_pool(gold=4, training=0), crowd_pool(gold=4, training=0)
    return mturk_study(a), mturk_study(b)


def test_the_token_does_the_whole_hit_without_cookies_or_csrf(two_studies):
    study, _ = two_studies
    path, token = arrive(study)
    assert path == f"/study/{study.token}/go/"
    client = iframe_client(token)
    api = f"/api/v1/study/{study.token}"
    # The link's form gave the consent ("I agree"); the consent endpoint takes it again harmlessly.
    assert client.get(f"{api}/progress/").json()["stage"] == "guidelines"
    assert client.post(f"{api}/consent/", {"agree": True}, content_type="application/json").status_code == 200
    assert client.post(f"{api}/guidelines-read/").json()["stage"] == "work"
    pool_id = study.pool_id
    for _ in range(study.quota_pairs):
        body = client.post(f"/api/v1/pools/{pool_id}/next/", {}, content_type="application/json").json()
        lease = body["assignment"]["lease_id"]
        assert client.post(f"/api/v1/leases/{lease}/heartbeat/").status_code == 200
        reply = client.post("/api/v1/labels/", {"client_id": uuid.uuid4().hex, "lease_id": lease, "value": "relevant",
                                                "seconds": 3.0}, content_type="application/json")
        assert reply.status_code == 201, reply.content
    assert client.get(f"/api/v1/pools/{pool_id}/my-progress/").status_code == 200
    assert client.get(f"/api/v1/my/recent-answers/?pool={pool_id}").status_code == 200
    done = client.get(f"{api}/progress/").json()
    assert done["done"] and done["completion"]["fields"]["assignmentId"] == "ASG1"
    worker = CrowdWorker.objects.get(study=study)
    assert worker.stage == CrowdWorker.Stage.DONE and worker.user.labels.count() == study.quota_pairs


def test_the_token_is_refused_on_another_study_another_pool_and_every_other_endpoint(two_studies):
    study_a, study_b = two_studies
    _, token = arrive(study_a)
    arrive(study_b, worker="A2OTHER")
    client = iframe_client(token)
    refused = [
        ("get", f"/api/v1/study/{study_b.token}/progress/"),
        ("post", f"/api/v1/study/{study_b.token}/consent/"),
        ("post", f"/api/v1/pools/{study_b.pool_id}/next/"),
        ("get", f"/api/v1/pools/{study_b.pool_id}/my-progress/"),
        # admin and researcher endpoints, of the worker's own pool too
        ("get", "/api/v1/pools/"),
        ("get", f"/api/v1/pools/{study_a.pool_id}/"),
        ("get", f"/api/v1/pools/{study_a.pool_id}/crowd-study/"),
        ("get", f"/api/v1/pools/{study_a.pool_id}/rater-quality/"),
        ("get", "/api/v1/raters/"),
        ("get", "/api/v1/datasets/"),
        ("get", "/api/v1/jobs/"),
        # a rater's endpoints the judging page of a study does not call
        ("get", "/api/v1/my/pools/"),
        ("get", "/api/v1/my/labels/"),
    ]
    for method, url in refused:
        response = getattr(client, method)(url, {}, content_type="application/json") if method == "post" else client.get(url)
        assert response.status_code == 403, (url, response.status_code)
        assert response.json()["detail"] == "A study worker token is valid only on its own study's work.", url
    # The same calls on its own study work.
    assert client.get(f"/api/v1/study/{study_a.token}/progress/").status_code == 200


def test_expired_and_tampered_tokens_are_403_with_a_clear_message_and_never_logged(two_studies, caplog):
    study, _ = two_studies
    _, token = arrive(study)
    worker = CrowdWorker.objects.get(study=study)
    # 4 h default lifetime (no time quota): issued 4 h 1 s ago, it has expired.
    expired = worker_token_issue(worker=worker, now=time.time() - 4 * 3600 - 1)
    other_key = signing.dumps({"w": worker.pk, "s": study.token, "e": 2**40}, salt=SALT, key="not-the-site-key")
    wrong_salt = signing.dumps({"w": worker.pk, "s": study.token, "e": 2**40}, salt="another-purpose")
    cases = {expired: "has expired", token[:-2] + ("AA" if token[-2:] != "AA" else "BB"): "is not valid",
             other_key: "is not valid", wrong_salt: "is not valid", "garbage": "is not valid"}
    url = f"/api/v1/study/{study.token}/progress/"
    with caplog.at_level(logging.DEBUG):
        for bad, words in cases.items():
            response = iframe_client(bad).get(url)
            # 403, not 401: DRF answers 401 only when its first authentication class (the session's)
            # has a challenge to send.
            assert response.status_code == 403, bad
            assert words in response.json()["detail"], response.json()
            assert bad not in response.content.decode()
        # On a page: a 403 page that says why.
        page = Client().get(f"/study/{study.token}/go/?wt={expired}")
        assert page.status_code == 403 and b"has expired" in page.content and expired.encode() not in page.content
        assert iframe_client(token).get(url).status_code == 200
    assert not any(secret in caplog.text for secret in (token, *cases))
    # A study with a 30-minute quota: 30 min + 1 h of slack, then refused.
    study.quota_minutes = 30
    study.save()
    worker.study = study
    issued_at = 1_000_000.0
    short = worker_token_issue(worker=worker, now=issued_at)
    assert worker_from_token(short, now=issued_at + 90 * 60).pk == worker.pk
    with pytest.raises(WorkerTokenRefused, match="expired"):
        worker_from_token(short, now=issued_at + 90 * 60 + 1)


def test_study_pages_by_token_post_without_csrf_and_keep_the_token(two_studies):
    study_a, study_b = two_studies
    _, token = arrive(study_a)
    client = Client(enforce_csrf_checks=True)  # no session: the iframe's browser keeps no cookie
    wt = urlencode({"wt": token})  # the token's ':' travels as %3A
    guidelines = client.get(f"/study/{study_a.token}/go/?wt={token}")
    assert guidelines.status_code == 200 and f'action="/study/{study_a.token}/start/?{wt}"' in guidelines.content.decode()
    again = client.post(f"/study/{study_a.token}/consent/?wt={token}", {"agree": "yes"})  # already given: harmless
    assert again.status_code == 302 and again["Location"] == f"/study/{study_a.token}/go/?{wt}"
    started = client.post(f"/study/{study_a.token}/start/?wt={token}")
    assert started.status_code == 302
    work = client.get(f"/study/{study_a.token}/work/?wt={token}")
    assert work.status_code == 200
    assert f'<meta name="study-worker-token" content="{token}">' in work.content.decode()
    # Study A's token opens none of study B's pages.
    assert client.get(f"/study/{study_b.token}/go/?wt={token}").status_code == 404
    assert client.post(f"/study/{study_b.token}/consent/?wt={token}", {"agree": "yes"}).status_code == 404
    # Without the token, a page POST by session is still CSRF-checked.
    session = Client(enforce_csrf_checks=True)
    assert arrive_by_form(session, study_b, "workerId=A3SESSION&assignmentId=ASG3&hitId=HIT1"
                                            "&turkSubmitTo=https://workersandbox.mturk.com").status_code == 302
    assert session.post(f"/study/{study_b.token}/start/").status_code == 403
    assert CrowdWorker.objects.get(worker_id="A3SESSION").stage == CrowdWorker.Stage.GUIDELINES


def test_only_an_mturk_studys_pages_may_be_framed_and_only_by_mturk(two_studies):
    study, _ = two_studies
    entry = Client().get(f"/study/{study.token}/?workerId=A9&assignmentId=ASG9&hitId=HIT1"
                         "&turkSubmitTo=https://workersandbox.mturk.com")                     # the link's page
    path, token = arrive(study)
    client = Client()
    pages = [entry, client.get(f"{path}?wt={token}")]                                        # guidelines
    client.post(f"/study/{study.token}/start/?wt={token}")
    pages.append(client.get(f"/study/{study.token}/work/?wt={token}"))                       # judging
    pages.append(Client().get(f"/study/{study.token}/?workerId=X&assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE"
                              "&hitId=HIT1"))                                                # preview
    for page in pages:
        assert page.status_code == 200
        assert frame_ancestors(page) == f"frame-ancestors {MTURK_ORIGINS}"
        assert "X-Frame-Options" not in page
    # Everything else: frame-ancestors 'none' and DENY, a Prolific study's pages included.
    prolific = prolific_study(crowd_pool(gold=2, training=0))
    prolific_client = Client()
    link = prolific_client.get(f"/study/{prolific.token}/?PROLIFIC_PID=5f1e2d3c4b5a69788796a5b4&STUDY_ID=s&SESSION_ID=x")
    arrived = arrive_by_form(prolific_client, prolific, "PROLIFIC_PID=5f1e2d3c4b5a69788796a5b4&STUDY_ID=s&SESSION_ID=x")
    others = [link, arrived, prolific_client.get(arrived["Location"]), Client().get("/login/"),
              client.get(f"/api/v1/study/{study.token}/progress/", HTTP_AUTHORIZATION=f"StudyWorker {token}")]
    for page in others:
        assert frame_ancestors(page) == "frame-ancestors 'none'", page.status_code
        assert page["X-Frame-Options"] == "DENY"


def test_clips_by_token_are_the_workers_own_pool_only(settings):
    """A <video> in the iframe sends no header: the clip URL carries the token as wt."""
    from annotation.models import Clip
    from tests.factories import make_pool_with_runs

    for name in ("a/clip.mp4", "b/clip.mp4"):
        path = settings.MEDIA_ROOT / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\0" * 512)
    pool_a, _ = make_pool_with_runs(captions=2, clips=3, depth=2)
    pool_b, _ = make_pool_with_runs(captions=2, clips=3, depth=2)
    Clip.objects.filter(dataset=pool_a.dataset, external_id="v2").update(media="a/clip.mp4")  # pooled in both
    Clip.objects.filter(dataset=pool_b.dataset, external_id="v2").update(media="b/clip.mp4")
    study_a, _ = mturk_study(pool_a), mturk_study(pool_b)
    _, token = arrive(study_a)
    client = Client()
    assert client.get("/media/a/clip.mp4", {"wt": token}).status_code == 200
    assert client.get("/media/b/clip.mp4", {"wt": token}).status_code == 404
    # A bad token is no token: the anonymous are sent to log in, as without one.
    assert client.get("/media/a/clip.mp4", {"wt": token[:-3] + "xyz"}).status_code == 302
    assert client.get("/media/a/clip.mp4").status_code == 302


def test_the_api_arrival_gives_an_mturk_worker_a_token_and_a_prolific_worker_none(two_studies):
    study, _ = two_studies
    reply = Client().post(f"/api/v1/study/{study.token}/arrive/", {
        "workerId": "A4APIWORKER", "assignmentId": "ASG4", "hitId": "HIT1", "turkSubmitTo": "https://www.mturk.com"})
    assert reply.status_code == 200, reply.content
    progress = iframe_client(reply.json()["worker_token"]).get(f"/api/v1/study/{study.token}/progress/")
    assert progress.status_code == 200 and progress.json()["stage"] == "consent"
    prolific = prolific_study(crowd_pool(gold=2, training=0))
    reply = Client().post(f"/api/v1/study/{prolific.token}/arrive/", {
        "PROLIFIC_PID": "5f1e2d3c4b5a69788796a5b4", "STUDY_ID": "s", "SESSION_ID": "x"})
    assert reply.status_code == 200 and "worker_token" not in reply.json()
