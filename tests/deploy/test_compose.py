"""Issue 17 item 3: docker-compose.yml, read as YAML (Docker cannot run here). A one-shot `migrate`
that web, the workers and beat wait for; a health check on every long-running service; workers
that `--scale worker=N` can multiply (no fixed name, port or private disk); one beat; and the
storage settings passed through so web and workers on several hosts can share a bucket."""
from __future__ import annotations

import re

import pytest

from config.healthcheck import BEAT_SCHEDULE, CHECKS
from tests.deploy.files import REPO, compose

APP_SERVICES = ("web", "worker", "upkeep", "beat")


@pytest.fixture(scope="module")
def spec():
    return compose()


def command(service: dict) -> list[str]:
    cmd = service["command"]
    return cmd if isinstance(cmd, list) else cmd.split()


def test_migrate_runs_once_before_anything_else_starts(spec):
    services = spec["services"]
    migrate = services["migrate"]
    assert command(migrate)[-3:-1] == ["manage.py", "migrate"] or command(migrate)[1:3] == ["manage.py", "migrate"]
    assert migrate.get("restart", "no") == "no"
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in APP_SERVICES:
        depends = services[name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully", name
        assert "migrate" not in " ".join(command(services[name])), f"{name} must not migrate on its own"


def test_every_long_running_service_has_a_health_check(spec):
    for name, service in spec["services"].items():
        check = service.get("healthcheck")
        assert check, f"{name} has no health check"
        if name == "migrate":
            assert check == {"disable": True}  # a one-shot job: the image's web check does not apply
            continue
        test = check["test"]
        assert test[0] in {"CMD", "CMD-SHELL"} and len(test) > 1, (name, test)
        if test[1:4] == ["python", "-m", "config.healthcheck"]:
            assert test[4] in CHECKS, (name, test)


def test_each_app_service_is_checked_by_its_own_kind_of_check(spec):
    kinds = {name: spec["services"][name]["healthcheck"]["test"][4] for name in APP_SERVICES}
    assert kinds == {"web": "web", "worker": "worker", "upkeep": "worker", "beat": "beat"}


def test_workers_can_be_scaled(spec):
    volumes = set(spec.get("volumes") or {})
    for name in ("worker", "upkeep"):
        service = spec["services"][name]
        # A fixed name or host port would make the second replica fail to start.
        assert "container_name" not in service and "ports" not in service and "hostname" not in service, name
        argv = command(service)
        # The health check pings celery@<container hostname>: the worker must keep that node name.
        assert "-n" not in argv and "--hostname" not in argv, name
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            assert source in volumes, f"{name} mounts {source}: only named volumes every replica shares"
        assert service.get("deploy", {}).get("replicas", 1) >= 1


def test_there_is_exactly_one_beat(spec):
    beat = spec["services"]["beat"]
    assert beat["deploy"]["replicas"] == 1
    argv = command(beat)
    assert argv[:4] == ["celery", "-A", "config", "beat"]
    # The health check reads the schedule file beat is told to write.
    assert argv[argv.index("-s") + 1] == BEAT_SCHEDULE
    others = [n for n, s in spec["services"].items() if n != "beat" and "command" in s and "beat" in command(s)]
    assert not others


def test_the_web_service_runs_gunicorn_with_the_metrics_settings(spec):
    argv = command(spec["services"]["web"])
    assert argv[0] == "gunicorn" and (REPO / argv[argv.index("-c") + 1]).is_file()


def _settings_env_names() -> set[str]:
    text = (REPO / "config" / "settings.py").read_text()
    return set(re.findall(r"""(?:os\.environ\.get|os\.environ\[|env_int|env_bool|env_rate)\(?\s*["']([A-Z0-9_]+)["']""", text))


def test_the_storage_and_observability_settings_are_passed_through(spec):
    env = spec["x-app"]["environment"]
    names = _settings_env_names()
    storage = {n for n in names if n.startswith(("AWS_", "REJUDGE_STORAGE", "REJUDGE_S3_", "REJUDGE_SIGNED_URL"))}
    # Read by boto3 itself, not by settings.py.
    storage |= {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
    wanted = storage | {"REJUDGE_LOG_FORMAT", "REJUDGE_METRICS_TOKEN", "LOG_LEVEL"}
    assert {"REJUDGE_STORAGE", "AWS_STORAGE_BUCKET_NAME", "AWS_S3_ENDPOINT_URL"} <= wanted
    missing = sorted(wanted - set(env))
    assert not missing, f"settings read {missing}, which docker-compose.yml does not pass to the containers"
    for name in wanted - {"REJUDGE_STORAGE"}:
        # Passed through from the operator's environment, not fixed here (the keys above all).
        assert re.fullmatch(r"\$\{%s:-[^}]*\}" % name, str(env[name])), (name, env[name])


def test_every_local_folder_is_on_the_shared_volume(spec):
    env = spec["x-app"]["environment"]
    roots = {n for n in _settings_env_names() if n.endswith("_ROOT") and n != "STATIC_ROOT"}
    assert roots >= {"MEDIA_ROOT", "UPLOAD_ROOT", "EXPORT_ROOT", "JUDGMENTS_ROOT", "RUNS_ROOT"}
    mount = next(v.split(":")[1] for v in spec["x-app"]["volumes"] if v.startswith("data:"))
    for name in roots:
        assert env[name].startswith(mount + "/"), (name, env[name])


def test_the_secret_key_is_required_and_never_written_in(spec):
    env = spec["x-app"]["environment"]
    assert env["SECRET_KEY"].startswith("${SECRET_KEY:?")
    assert env["DEBUG"] == "0"
