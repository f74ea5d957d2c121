"""Registering and running a machine judge over REST and the CLI; the key is read from the worker's
environment by name and never stored, logged or shown."""
from __future__ import annotations

import io
import logging

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from annotation.models import JudgeEndpoint, MachineJudge
from tests.factories import make_user

from .judge_world import agreement, judge_server, mini_pool  # noqa: F401 - judge_server is a fixture

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

SECRET = "sk-test-9f8e7d6c5b4a-never-shown"


@pytest.fixture
def admin():
    client = APIClient()
    client.force_authenticate(make_user("admin"))
    return client


@pytest.fixture(autouse=True)
def _demo_key_goes_to_the_test_server(request, monkeypatch):
    """The operator lets the key go to the test server, over http (test_judge_security.py shows it
    refused anywhere else)."""
    if "judge_server" in request.fixturenames:
        server = request.getfixturevalue("judge_server")
        monkeypatch.setenv("REJUDGE_JUDGE_KEY_DEMO_HOSTS", f"http://127.0.0.1:{server.port}")


def _register(admin, server, **extra):
    body = {"name": "demo judge", "base_url": server.url + "/v1", "model": "demo-vl", "frames_per_clip": 4,
            "concurrency": 4, "max_retries": 1, "key_env": "REJUDGE_JUDGE_KEY_DEMO"} | extra
    return admin.post("/api/v1/judge-endpoints/", body, format="json")


def test_an_admin_registers_a_judge_and_runs_it_on_a_pool_and_the_key_is_never_stored_or_shown(
        admin, judge_server, monkeypatch, caplog):
    monkeypatch.setenv("REJUDGE_JUDGE_KEY_DEMO", SECRET)
    caplog.set_level(logging.DEBUG)
    created = _register(admin, judge_server)
    assert created.status_code == 201, created.content
    endpoint = created.json()
    assert endpoint["base_url"] == judge_server.url and endpoint["has_key"] is True and "key_env" not in endpoint
    pool = mini_pool()
    started = admin.post(f"/api/v1/pools/{pool.pk}/machine-judges/run/", {"endpoint": endpoint["id"]}, format="json")
    assert started.status_code == 202, started.content
    job = admin.get(started.json()["status_url"]).json()
    assert job["status"] == "succeeded", job
    judge = MachineJudge.objects.get(pk=job["result"]["judge_id"])
    assert judge.counts["judged"] == 12 and agreement(judge) == 1.0
    assert judge_server.stats()["authorization"] == [f"Bearer {SECRET}"]  # sent, to the server only

    shown = [created.content, started.content, admin.get(started.json()["status_url"]).content,
             admin.get(f"/api/v1/judge-endpoints/{endpoint['id']}/").content, admin.get("/api/v1/judge-endpoints/").content,
             admin.get(f"/api/v1/machine-judges/{judge.pk}/").content, admin.get("/api/v1/jobs/").content]
    dump = io.StringIO()
    call_command("dumpdata", "annotation", stdout=dump)
    assert all(SECRET.encode() not in body for body in shown)
    assert SECRET not in dump.getvalue() and SECRET not in caplog.text
    assert "REJUDGE_JUDGE_KEY_DEMO" in dump.getvalue()  # only the variable's name is stored


def test_the_key_may_come_from_a_file_and_a_missing_key_fails_the_job_naming_the_variable(
        admin, judge_server, monkeypatch, tmp_path):
    monkeypatch.delenv("REJUDGE_JUDGE_KEY_DEMO", raising=False)
    secret_file = tmp_path / "judge-key"
    secret_file.write_text(SECRET + "\n")
    monkeypatch.setenv("REJUDGE_JUDGE_KEY_DEMO_FILE", str(secret_file))
    endpoint = _register(admin, judge_server).json()
    pool = mini_pool(clips=("demo01",), captions=("cap01",))
    job = admin.post(f"/api/v1/pools/{pool.pk}/machine-judges/run/", {"endpoint": endpoint["id"]}, format="json").json()
    assert admin.get(job["status_url"]).json()["status"] == "succeeded"
    assert judge_server.stats()["authorization"] == [f"Bearer {SECRET}"]

    monkeypatch.delenv("REJUDGE_JUDGE_KEY_DEMO_FILE")
    job = admin.post(f"/api/v1/pools/{pool.pk}/machine-judges/run/", {"endpoint": endpoint["id"]}, format="json").json()
    failed = admin.get(job["status_url"]).json()
    assert failed["status"] == "failed"
    assert "neither REJUDGE_JUDGE_KEY_DEMO nor REJUDGE_JUDGE_KEY_DEMO_FILE" in failed["message"]


@pytest.mark.parametrize("field, value, problem", [
    ("base_url", "ftp://judge.example", "only http:// and https://"),
    ("base_url", "file:///etc/passwd", "only http:// and https://"),
    ("base_url", "https://user:pw@judge.example", "credentials in the URL"),
    ("key_env", SECRET, "not the key itself"),
    ("key_env", "OPENAI_API_KEY", "REJUDGE_JUDGE_KEY_"),
    ("prompt_version", "v9", "prompt_version"),
    ("concurrency", 0, "concurrency"),
])
def test_registrations_that_cannot_be_stored_are_refused_naming_the_field(admin, judge_server, field, value, problem):
    response = _register(admin, judge_server, **{field: value})
    assert response.status_code == 400 and problem in str(response.json())
    assert not JudgeEndpoint.objects.exists()
    if field == "key_env":
        assert SECRET not in response.content.decode()


def test_a_run_names_an_existing_judge(admin):
    pool = mini_pool(clips=("demo01",), captions=("cap01",))
    response = admin.post(f"/api/v1/pools/{pool.pk}/machine-judges/run/", {"endpoint": 999_999}, format="json")
    assert response.status_code == 400 and "no registered judge" in str(response.json()["endpoint"])


def test_the_cli_registers_and_runs_a_judge(judge_server):
    out = io.StringIO()
    call_command("machine_judge", "add", "cli judge", "--url", judge_server.url, "--model", "demo-vl+ollama",
                 "--frames", "4", "--concurrency", "2", stdout=out)
    pool = mini_pool(clips=("demo01", "demo04"), captions=("cap01", "cap13"))
    call_command("run_machine_judge", "--pool", str(pool.pk), "--judge", "cli judge", stdout=out)
    assert "4 of 4 pairs judged (0 from the cache)" in out.getvalue() and "4 requests" in out.getvalue()
    call_command("machine_judge", "list", stdout=out)
    assert "cli judge\t" + judge_server.url in out.getvalue()
    judge = MachineJudge.objects.get(pool=pool)
    assert agreement(judge) == 1.0 and judge.job is not None and judge.job.status == "succeeded"
