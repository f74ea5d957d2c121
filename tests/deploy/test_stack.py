"""Issue 23: scripts/stack.py runs the stack from docker-compose.yml as parsed, so these check that
what it would run is what the compose file says (the running stack itself is CI's image step)."""
from __future__ import annotations

import importlib.util
import sys

import pytest

from tests.deploy.files import REPO, compose

spec = importlib.util.spec_from_file_location("rejudge_stack", REPO / "scripts" / "stack.py")
stack = importlib.util.module_from_spec(spec)
sys.modules["rejudge_stack"] = stack  # dataclasses look their module up there
spec.loader.exec_module(stack)

ENV = {"SECRET_KEY": "k", "REJUDGE_PUBLISH": "127.0.0.1:18000", "REJUDGE_STORAGE": "s3",
       "AWS_S3_ENDPOINT_URL": "http://10.89.0.1:5055"}


@pytest.mark.parametrize("text, env, expected", [
    ("${A}", {"A": "x"}, "x"),
    ("${A:-d}", {}, "d"),
    ("${A:-d}", {"A": ""}, "d"),
    ("${A-d}", {"A": ""}, ""),
    ("${A:-}", {}, ""),
    ("$A/b", {"A": "x"}, "x/b"),
    ("$${A}", {"A": "x"}, "${A}"),
    ("${A:-127.0.0.1:8000}:8000", {}, "127.0.0.1:8000:8000"),
])
def test_interpolation_follows_the_compose_specification(text, env, expected):
    assert stack.interpolate(text, env) == expected


def test_a_required_variable_that_is_missing_stops_the_start():
    with pytest.raises(SystemExit, match="SECRET_KEY is required"):
        stack.load_services({}, {})


def test_services_start_in_the_order_depends_on_gives():
    services = stack.load_services(ENV, {})
    assert set(services) == set(compose()["services"])
    order = stack.start_order(services)
    for name, service in services.items():
        for dep in service.depends_on():
            assert order.index(dep) < order.index(name), (dep, name)
    assert order.index("migrate") < min(order.index(n) for n in ("web", "worker", "upkeep", "beat"))


def test_each_container_runs_the_compose_files_command_environment_and_settings():
    raw = compose()["services"]
    services = stack.load_services(ENV, {"worker": 3})
    assert services["worker"].containers == [f"{stack.NAME}-worker-{i}" for i in (1, 2, 3)]
    assert len(services["beat"].containers) == 1
    worker = stack.run_argv(services["worker"], services["worker"].containers[0])
    image_at = worker.index(raw["worker"]["image"])
    assert worker[image_at + 1:] == raw["worker"]["command"]
    assert ["--stop-timeout", "300"] == worker[worker.index("--stop-timeout"):worker.index("--stop-timeout") + 2]
    assert ["--restart", "unless-stopped"] == worker[worker.index("--restart"):worker.index("--restart") + 2]
    assert f"{stack.NAME}_data:/data" in worker  # the named volume, one per stack
    assert "REJUDGE_STORAGE=s3" in worker and "AWS_S3_ENDPOINT_URL=http://10.89.0.1:5055" in worker
    assert "REJUDGE_MAINTENANCE_QUEUE=rejudge-upkeep" in worker and "DEBUG=0" in worker
    web = stack.run_argv(services["web"], services["web"].containers[0])
    assert web[web.index("-p") + 1] == "127.0.0.1:18000:8000"
    assert ["--network-alias", "web"] == web[web.index("--network-alias"):web.index("--network-alias") + 2]
    migrate = stack.run_argv(services["migrate"], services["migrate"].containers[0])
    assert "--restart" not in migrate and services["migrate"].health_test() is None
    assert services["postgres"].health_test() == ["pg_isready", "-U", "rejudge"]
    assert services["web"].health_test() == ["python", "-m", "config.healthcheck", "web"]


@pytest.mark.parametrize("duration, seconds", [("5m", 300), ("30s", 30), ("1m30s", 90), (12, 12)])
def test_compose_durations(duration, seconds):
    assert stack.seconds(duration) == seconds


def test_the_image_scripts_build_is_the_one_compose_runs():
    image_sh = (REPO / "scripts" / "image.sh").read_text()
    assert "IMAGE=${REJUDGE_IMAGE:-%s}" % compose()["x-app"]["image"] in image_sh
