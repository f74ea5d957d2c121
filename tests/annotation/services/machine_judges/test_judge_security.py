"""Issue 36, findings 1-3, against hostile servers run as processes on 127.0.0.1
(tests/hostile_outbound_server.py): a key goes only to the hosts its operator declared and never
into a message; the verdict cache is keyed by the endpoint that answered; the worker requests only
what the outbound policy admits (judges and clip media alike) and says which rule refused, never
what an internal service answered."""
from __future__ import annotations

import logging
import re

import pytest
from django.conf import settings as django_settings
from rest_framework.test import APIClient

from annotation.demo.scenes import SCENES
from annotation.demo.video import render_clip
from annotation.formats.judge_chat import DEFAULT_PROMPT
from annotation.models import Caption, Clip, Dataset, Job, JudgeCall, JudgeEndpoint, JudgeEndpointChange, MachineJudge, \
    Pool, PooledPair
from annotation.services.machine_judges.operations import machine_judge_run_start
from tests.factories import make_user, unique
from tests.hostile_outbound_server import INTERNAL_BODY, HostileServerProcess

from .judge_world import agreement, endpoint_for, judge_server, mini_pool  # noqa: F401 - judge_server is a fixture

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

OPENAI_KEY = "sk-proj-h5-0123456789abcdef-REAL-KEY"


@pytest.fixture
def hostile():
    server = HostileServerProcess()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def admin_user():
    return make_user("admin")


@pytest.fixture
def admin(admin_user):
    client = APIClient()
    client.force_authenticate(admin_user)
    return client


@pytest.fixture
def openai_key(monkeypatch):
    """The operator's key for a hosted judge, bound to its host (https only)."""
    monkeypatch.setenv("REJUDGE_JUDGE_KEY_OPENAI", OPENAI_KEY)
    monkeypatch.setenv("REJUDGE_JUDGE_KEY_OPENAI_HOSTS", "api.openai.com")


def _run(endpoint, pool) -> Job:
    job = machine_judge_run_start(endpoint=endpoint, pool=pool, created_by=make_user("admin"))
    job.refresh_from_db()
    return job


def _register(admin, **body):
    return admin.post("/api/v1/judge-endpoints/", {"name": unique("judge"), "model": "demo-vl", "frames_per_clip": 4,
                                                   "concurrency": 2, "max_retries": 0} | body, format="json")


# --- Finding 1: any admin could take another judge's key ---------------------------------------

def test_a_key_is_refused_for_a_host_its_operator_did_not_declare_at_registration_and_change(
        admin, hostile, judge_server, openai_key, monkeypatch):
    taken = _register(admin, base_url=hostile.url + "/echo401", key_env="REJUDGE_JUDGE_KEY_OPENAI")
    assert taken.status_code == 400
    assert "REJUDGE_JUDGE_KEY_OPENAI may only be sent to the hosts REJUDGE_JUDGE_KEY_OPENAI_HOSTS declares" in \
        taken.json()["detail"]
    nowhere = _register(admin, base_url=hostile.url + "/echo401", key_env="REJUDGE_JUDGE_KEY_UNDECLARED")
    assert nowhere.status_code == 400 and "declared no host for REJUDGE_JUDGE_KEY_UNDECLARED" in nowhere.json()["detail"]

    # A judge the operator set up for the test server, over http explicitly.
    monkeypatch.setenv("REJUDGE_JUDGE_KEY_LOCAL", "sk-local-test-key-000111")
    monkeypatch.setenv("REJUDGE_JUDGE_KEY_LOCAL_HOSTS", f"http://127.0.0.1:{judge_server.port}")
    created = _register(admin, base_url=judge_server.url, key_env="REJUDGE_JUDGE_KEY_LOCAL")
    assert created.status_code == 201, created.content
    endpoint_id = created.json()["id"]
    moved = admin.patch(f"/api/v1/judge-endpoints/{endpoint_id}/", {"base_url": hostile.url + "/echo401"}, format="json")
    assert moved.status_code == 400 and "REJUDGE_JUDGE_KEY_LOCAL_HOSTS declares" in moved.json()["detail"]
    other_key = admin.patch(f"/api/v1/judge-endpoints/{endpoint_id}/", {"key_env": "REJUDGE_JUDGE_KEY_OPENAI"},
                            format="json")
    assert other_key.status_code == 400 and "REJUDGE_JUDGE_KEY_OPENAI_HOSTS declares" in other_key.json()["detail"]
    assert JudgeEndpoint.objects.get(pk=endpoint_id).base_url == judge_server.url

    # Declared for https only: the key never goes over plain http.
    monkeypatch.setenv("REJUDGE_JUDGE_KEY_LOCAL_HOSTS", f"127.0.0.1:{judge_server.port}")
    clear = _register(admin, base_url=judge_server.url, key_env="REJUDGE_JUDGE_KEY_LOCAL")
    assert clear.status_code == 400 and "never sent over plain http" in clear.json()["detail"]
    assert hostile.stats()["requests"] == 0


def test_a_judge_moved_behind_the_api_s_back_is_refused_on_the_worker_before_anything_is_sent(
        hostile, judge_server, openai_key, monkeypatch):
    monkeypatch.setenv("REJUDGE_JUDGE_KEY_OPENAI_HOSTS", f"http://127.0.0.1:{judge_server.port}")
    endpoint = endpoint_for(judge_server, key_env="REJUDGE_JUDGE_KEY_OPENAI")
    JudgeEndpoint.objects.filter(pk=endpoint.pk).update(base_url=hostile.url + "/echo401")  # e.g. the database edited
    endpoint.refresh_from_db()
    job = _run(endpoint, mini_pool(clips=("demo01",), captions=("cap01",)))
    assert job.status == "failed"
    assert "REJUDGE_JUDGE_KEY_OPENAI may only be sent to the hosts REJUDGE_JUDGE_KEY_OPENAI_HOSTS declares" in job.message
    assert hostile.stats()["requests"] == 0 and hostile.stats()["authorization"] == []


def test_a_server_that_echoes_the_key_gets_its_status_shown_and_never_the_key(
        admin, hostile, monkeypatch, caplog):
    """The operator did allow this host (say, a hosted API whose 401 quotes the key): what it says
    is not copied anywhere, and every known key is masked out of what is."""
    monkeypatch.setenv("REJUDGE_JUDGE_KEY_ECHO", OPENAI_KEY)
    monkeypatch.setenv("REJUDGE_JUDGE_KEY_ECHO_HOSTS", f"http://127.0.0.1:{hostile.port}")
    caplog.set_level(logging.DEBUG)
    created = _register(admin, base_url=hostile.url + "/echo401", key_env="REJUDGE_JUDGE_KEY_ECHO")
    assert created.status_code == 201, created.content
    pool = mini_pool(clips=("demo01",), captions=("cap01",))
    started = admin.post(f"/api/v1/pools/{pool.pk}/machine-judges/run/", {"endpoint": created.json()["id"]},
                         format="json")
    job = admin.get(started.json()["status_url"]).json()
    assert job["status"] == "failed" and "answered HTTP 401" in job["message"]
    assert hostile.stats()["authorization"] == [f"Bearer {OPENAI_KEY}"]  # sent where the operator allowed it
    shown = [job["message"], admin.get("/api/v1/jobs/").content.decode(), caplog.text,
             *JudgeCall.objects.values_list("error", flat=True)]
    assert not any(OPENAI_KEY in text or "Incorrect API key" in text for text in shown)


def test_changes_of_a_judge_s_url_and_key_variable_are_audited(admin, admin_user, hostile, caplog, monkeypatch):
    monkeypatch.setenv("REJUDGE_JUDGE_KEY_AUDIT_HOSTS", f"http://127.0.0.1:{hostile.port}")
    caplog.set_level(logging.INFO, logger="rejudge.judges")
    created = _register(admin, base_url=hostile.url + "/a")
    endpoint_id = created.json()["id"]
    changed = admin.patch(f"/api/v1/judge-endpoints/{endpoint_id}/",
                          {"base_url": hostile.url + "/b", "key_env": "REJUDGE_JUDGE_KEY_AUDIT", "max_retries": 2},
                          format="json")
    assert changed.status_code == 200, changed.content
    rows = list(JudgeEndpointChange.objects.filter(endpoint_id=endpoint_id)
                .values_list("field", "old_value", "new_value", "changed_by"))
    assert [(f, o, n) for f, o, n, _ in rows] == [("base_url", "", hostile.url + "/a"),
                                                 ("base_url", hostile.url + "/a", hostile.url + "/b"),
                                                 ("key_env", "", "REJUDGE_JUDGE_KEY_AUDIT")]
    assert all(who == admin_user.pk for *_, who in rows)
    assert all(c.changed_at is not None for c in JudgeEndpointChange.objects.filter(endpoint_id=endpoint_id))
    logged = [r for r in caplog.records if r.name == "rejudge.judges" and getattr(r, "field", None) == "base_url"]
    assert logged[-1].old == hostile.url + "/a" and logged[-1].new == hostile.url + "/b"
    assert logged[-1].changed_by == admin_user.username
    JudgeEndpoint.objects.filter(pk=endpoint_id).delete()
    assert JudgeEndpointChange.objects.filter(endpoint_name=created.json()["name"]).count() == 3  # evidence stays


# --- Finding 2: the verdict cache could be poisoned ---------------------------------------------

def test_a_hostile_judge_with_the_real_model_s_name_does_not_answer_for_the_real_judge(judge_server, hostile):
    pool = mini_pool(clips=("demo01", "demo04"), captions=("cap01", "cap04", "cap13"))  # six pairs
    poison = endpoint_for(hostile, name="hostile", model="demo-vl")
    poison.base_url = hostile.url + "/notrelevant"
    poison.save()
    poisoned = _run(poison, pool)
    assert poisoned.status == "succeeded", poisoned.message
    assert MachineJudge.objects.get(job=poisoned).counts["not_relevant"] == 6
    assert hostile.stats()["requests"] == 6

    real = endpoint_for(judge_server, name="real", model="demo-vl")
    job = _run(real, pool)
    assert job.status == "succeeded", job.message
    judge = MachineJudge.objects.get(job=job)
    assert judge_server.stats()["requests"] == 6  # it asked its own server, every pair
    assert judge.counts["cached"] == 0 and judge.counts["judged"] == 6
    assert agreement(judge) == 1.0 and judge.counts["relevant"] >= 1  # its own verdicts, not the six "not relevant"
    again = _run(real, pool)
    assert MachineJudge.objects.get(job=again).counts["cached"] == 6 and judge_server.stats()["requests"] == 6


# --- Finding 3: the worker requested wherever it was told, and said what it found -----------------

@pytest.mark.parametrize("url, rule", [
    ("http://localhost", "loopback"), ("http://[::1]", "loopback"), ("http://0x7f000001", "loopback"),
    ("http://2130706433", "loopback"), ("http://127.1", "loopback"), ("http://017700000001", "loopback"),
    ("http://[::ffff:127.0.0.1]", "loopback"), ("http://169.254.169.254", "metadata"), ("http://10.1.2.3", "private"),
    ("http://[fd00::1]", "unique-local"), ("http://0.0.0.0", "unspecified"), ("http://224.0.0.1", "multicast"),
    ("http://localhost:8000", "port 8000 is not allowed"),
])
def test_every_spelling_of_an_internal_address_is_refused_at_registration(admin, settings, url, rule):
    settings.REJUDGE_OUTBOUND = {**settings.REJUDGE_OUTBOUND, "ALLOW_NETWORKS": "", "ALLOW_PORTS": ""}
    response = _register(admin, base_url=url)
    assert response.status_code == 400 and response.json()["detail"].startswith("base_url: ")
    assert rule in response.json()["detail"]
    assert not JudgeEndpoint.objects.exists()


@pytest.mark.parametrize("url, rule", [
    ("http://127.0.0.1:6379", "port 6379 is not allowed"), ("http://127.0.0.1:5432", "port 5432 is not allowed"),
    ("http://127.0.0.1:99999", "port must be a number from 1 to 65535"),
    ("http://127.0.0.1:0", "port must be a number from 1 to 65535"),
    ("http://127.0.0.1:8000/v1\r\nX-Injected: 1", "no whitespace, control characters"),
    ("http://127.0.0.1:8000/a b", "no whitespace"), ("http://user:pw@127.0.0.1:8000", "no credentials"),
    ("http://127.0.0.1:8000/#x", "no fragment"), ("http://127.0.0.1:8000/?q=1", "no query"),
    ("gopher://127.0.0.1:8000", "only http:// and https://"), ("http://127.0.0.2:8000", "loopback"),
])
def test_ports_and_url_tricks_are_refused_even_on_an_allowed_network(admin, url, rule):
    # The tests' policy admits 127.0.0.1/32 and ports 1024-65535 (tests/conftest.py): not Redis's
    # or PostgreSQL's port, which a range never opens, nor the rest of 127/8.
    response = _register(admin, base_url=url)
    assert response.status_code == 400 and rule in response.json()["detail"], response.content


def test_closed_ports_and_non_http_services_look_the_same_and_no_body_is_shown(hostile):
    import socket

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    closed = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    pool = mini_pool(clips=("demo01",), captions=("cap01", "cap04", "cap13"))
    messages = {}
    for port in (closed, hostile.raw_port):
        endpoint = JudgeEndpoint.objects.create(name=unique("scan"), base_url=f"http://127.0.0.1:{port}", model="m",
                                                prompt_version=DEFAULT_PROMPT, frames_per_clip=2, concurrency=1, max_retries=0, timeout_seconds=10)
        job = _run(endpoint, pool)
        assert job.status == "failed"
        errors = set(JudgeCall.objects.filter(job=job).values_list("error", flat=True))
        messages[port] = (job.message.replace(str(port), "PORT"), errors)
    assert messages[closed] == messages[hostile.raw_port]
    text = repr(messages)
    assert "did not answer with HTTP" in text and not re.search(r"RemoteProtocolError|ConnectError|ERR unknown", text)

    teapot = endpoint_for(hostile, name=unique("teapot"))
    teapot.base_url = hostile.url + "/teapot"
    teapot.save()
    job = _run(teapot, pool)
    assert job.status == "succeeded", job.message
    assert [e["error"] for e in job.result["errors_listed"]] == ["HTTP 418"] * 3
    assert INTERNAL_BODY not in str(job.result) and INTERNAL_BODY not in job.message


def _media_pool(urls: dict[str, str]) -> Pool:
    """One caption (cap01: a red circle) and a clip per media URL, every pair pooled."""
    from annotation.demo.scenes import demo_captions

    dataset = Dataset.objects.create(name=unique("media"))
    caption = Caption.objects.create(dataset=dataset, external_id="cap01",
                                     text={c.caption_id: c for c in demo_captions()}["cap01"].text)
    pool = Pool.objects.create(dataset=dataset, name="media pool")
    for external_id, url in urls.items():
        clip = Clip.objects.create(dataset=dataset, external_id=external_id, video_id=external_id, media=url,
                                   duration=4.0)
        PooledPair.objects.create(pool=pool, caption=caption, clip=clip)
    return pool


def test_clip_media_are_fetched_under_the_policy_and_never_by_ffmpeg(judge_server, settings):
    video = django_settings.MEDIA_ROOT / "demo" / "demo01.mp4"
    if not video.exists():
        render_clip(next(s for s in SCENES if s.clip_id == "demo01"), video)
    public, internal = HostileServerProcess(video), HostileServerProcess(video)
    try:
        # The "public" media host and the judge are reachable; another port on the host is not.
        settings.REJUDGE_OUTBOUND = {**settings.REJUDGE_OUTBOUND, "ALLOW_PORTS": f"{judge_server.port},{public.port}"}
        pool = _media_pool({
            "direct": f"{public.url}/clip.mp4",
            "hop": f"{public.url}/redirect?to={public.url}/clip.mp4",
            "to-internal-port": f"{public.url}/redirect?to=http://127.0.0.1:{internal.port}/clip.mp4",
            "to-loopback": f"{public.url}/redirect?to=http://127.0.0.2:{public.port}/clip.mp4",
            "to-file": f"{public.url}/redirect?to=file:///etc/passwd",
            "playlist": f"{public.url}/playlist.mp4",
        })
        job = _run(endpoint_for(judge_server), pool)
        assert job.status == "succeeded", job.message
        errors = {e["clip"]: e["error"] for e in job.result["errors_listed"]}
        assert set(errors) == {"to-internal-port", "to-loopback", "to-file", "playlist"}
        assert f"port {internal.port} is not allowed" in errors["to-internal-port"]
        assert "loopback" in errors["to-loopback"]
        assert "only http:// and https://" in errors["to-file"]
        assert "a playlist (HLS, DASH or concat)" in errors["playlist"]
        assert not re.search(r"Invalid data|Protocol|ffmpeg version|Input #0|Error opening", str(errors))
        assert internal.stats()["requests"] == 0  # nothing reached the internal service, nor the playlist's entries
        assert public.stats()["by_path"].get("/playlist.mp4") == 1
        assert MachineJudge.objects.get(job=job).counts["judged"] == 2  # direct and the allowed hop
    finally:
        public.stop()
        internal.stop()


# --- Finding 8, third bullet: researchers read each judge's base URL ----------------------------

def test_researchers_see_a_run_judge_s_name_and_model_and_admins_also_its_url(admin, hostile):
    endpoint = endpoint_for(hostile, name="poison-free", model="demo-vl")
    endpoint.base_url = hostile.url + "/notrelevant"
    endpoint.save()
    job = _run(endpoint, mini_pool(clips=("demo01",), captions=("cap01",)))
    judge = MachineJudge.objects.get(job=job)
    researcher = APIClient()
    researcher.force_authenticate(make_user("researcher"))
    for client, url_shown in ((researcher, False), (admin, True)):
        one = client.get(f"/api/v1/machine-judges/{judge.pk}/")
        listed = client.get(f"/api/v1/machine-judges/?pool={judge.pool_id}")
        assert one.status_code == listed.status_code == 200
        body = one.json()
        assert body["name"] == judge.name and body["model_name"] == "demo-vl"
        assert body["source_name"] == (hostile.url + "/notrelevant" if url_shown else "")
        assert (hostile.url in one.content.decode() + listed.content.decode()) is url_shown
    assert researcher.get(f"/api/v1/judge-endpoints/{endpoint.pk}/").status_code == 403
