"""Runs the production stack as docker-compose.yml describes it, on podman or Docker Engine, where no
compose tool is at hand to honour the file's `depends_on` conditions (`service_healthy`,
`service_completed_successfully`): the Debian mirror CI uses has neither podman-compose nor
docker-compose, and podman 4.3 has no `podman compose`.

The compose file is PARSED (PyYAML, anchors and merge keys; `${VAR}`, `${VAR:-default}`,
`${VAR:?error}` interpolated from the environment), not copied: services, images, commands,
environment, named volumes, published ports, restart policies, stop grace periods, `depends_on`
conditions and health checks all come from it, so a change to docker-compose.yml is what this runs.
One podman network per stack: containers reach `postgres` and `redis` by service name, and the
host's own PostgreSQL (5432) and Redis (6379) are untouched; web is published on a free host port.

    python scripts/stack.py up [--workers N]   start in dependency order, wait until all are healthy,
                                               print the web base URL on the last line
    python scripts/stack.py url                the web base URL (http://127.0.0.1:PORT)
    python scripts/stack.py ps                 the stack's containers and their health
    python scripts/stack.py kill-worker        SIGKILL the first worker container (a crash mid-job),
                                               then bring it back as its restart policy would
    python scripts/stack.py restart-web        restart web and wait until it is healthy again
    python scripts/stack.py logs [SERVICE]     the containers' logs
    python scripts/stack.py down               remove the containers, volumes, network, object store

For the rehearsal (bench/rehearsal.py), files go to an object store: moto's S3 server (from
requirements-dev.txt) runs on the host, on the stack network's gateway address, which the
containers and the host reach under the same URL (signed URLs stay valid on both sides).
Environment: REJUDGE_STACK (name, default rejudge-stack), REJUDGE_ENGINE (podman|docker),
REJUDGE_STACK_TIMEOUT (seconds to wait for a health check, default 600).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
COMPOSE_FILE = REPO / "docker-compose.yml"
NAME = os.environ.get("REJUDGE_STACK", "rejudge-stack")
STATE = Path(os.environ.get("REJUDGE_STACK_STATE", f"/tmp/{NAME}"))
TIMEOUT = float(os.environ.get("REJUDGE_STACK_TIMEOUT", "600"))
LABEL = "io.rejudge.stack"
# Images docker-compose.yml names that stack-images/ can make from Debian when no registry answers.
DEBIAN_MADE = {"postgres:15": "postgres", "redis:7": "redis"}


def log(message: str) -> None:
    print(f"[stack {time.strftime('%H:%M:%S', time.gmtime())}] {message}", flush=True)


# --- the engine ---------------------------------------------------------------------------------

def _engine_name() -> str:
    chosen = os.environ.get("REJUDGE_ENGINE") or os.environ.get("ENGINE_NAME")
    if chosen:
        return chosen
    if shutil.which("docker") and subprocess.run(["docker", "info"], capture_output=True).returncode == 0:
        return "docker"
    return "podman"


ENGINE = _engine_name()


def engine_argv(*args: str) -> list[str]:
    if ENGINE == "podman":
        # As scripts/engine.sh: runc (crun cannot set rlimits here), cgroupfs, a file events log.
        return ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs", "--events-backend", "file", *args]
    return ["docker", *args]


def engine(*args: str, check: bool = True, capture: bool = True, timeout: float | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run(engine_argv(*args), capture_output=capture, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise SystemExit(f"{' '.join(engine_argv(*args[:3]))} ... failed ({done.returncode}): "
                         f"{(done.stderr or '').strip()[-2000:]}")
    return done


def ulimits() -> list[str]:
    """As scripts/engine.sh: explicit limits runc may set here (see the comment there)."""
    import resource

    nofile = min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 65536)
    nproc = min(resource.getrlimit(resource.RLIMIT_NPROC)[1], 32768)
    nofile = 65536 if nofile < 0 else nofile
    nproc = 32768 if nproc < 0 else nproc
    return ["--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", f"nproc={nproc}:{nproc}"]


# --- the compose file ---------------------------------------------------------------------------

_VAR = re.compile(r"\$(?:(\$)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


def interpolate(value, env: dict[str, str]):
    """The compose specification's interpolation: $$, $VAR, ${VAR}, ${VAR:-d}, ${VAR-d}, ${VAR:?e}, ${VAR?e}."""
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def replace(match: re.Match) -> str:
        if match.group(1):
            return "$"
        name = match.group(2) or match.group(5)
        op, arg = match.group(3), match.group(4) or ""
        current = env.get(name)
        unset_or_empty = current is None or (current == "" and op is not None and op.startswith(":"))
        if op in (":-", "-"):
            return arg if unset_or_empty else current
        if op in (":?", "?"):
            if unset_or_empty:
                raise SystemExit(f"docker-compose.yml: {name} is required: {arg}")
            return current
        return current or ""

    return _VAR.sub(replace, value)


def seconds(duration) -> float:
    """A compose duration (30s, 5m, 1m30s, or a number of seconds) in seconds."""
    if isinstance(duration, (int, float)):
        return float(duration)
    total, units = 0.0, {"h": 3600, "m": 60, "s": 1, "ms": 0.001, "us": 1e-6}
    for number, unit in re.findall(r"([\d.]+)(h|ms|us|m|s)", duration):
        total += float(number) * units[unit]
    return total


@dataclass
class Service:
    name: str
    spec: dict
    replicas: int = 1
    containers: list[str] = field(default_factory=list)

    @property
    def image(self) -> str:
        return self.spec["image"]

    def command(self) -> list[str]:
        cmd = self.spec.get("command")
        if cmd is None:
            return []
        return list(cmd) if isinstance(cmd, list) else shlex.split(cmd)

    def environment(self) -> dict[str, str]:
        env = self.spec.get("environment") or {}
        if isinstance(env, list):
            env = dict(item.split("=", 1) if "=" in item else (item, os.environ.get(item, "")) for item in env)
        return {k: "" if v is None else str(v) for k, v in env.items()}

    def health_test(self) -> list[str] | None:
        check = self.spec.get("healthcheck")
        if not check or check.get("disable"):
            return None
        test = check["test"]
        if isinstance(test, str):
            return ["sh", "-c", test]
        if test[0] == "CMD":
            return list(test[1:])
        if test[0] == "CMD-SHELL":
            return ["sh", "-c", test[1]]
        if test[0] == "NONE":
            return None
        raise SystemExit(f"{self.name}: unknown health check form {test[0]!r}")

    def health_timeout(self) -> float:
        return seconds((self.spec.get("healthcheck") or {}).get("timeout", "30s"))

    def depends_on(self) -> dict[str, str]:
        deps = self.spec.get("depends_on") or {}
        if isinstance(deps, list):
            return {d: "service_started" for d in deps}
        return {d: (c or {}).get("condition", "service_started") for d, c in deps.items()}


def load_services(env: dict[str, str], scale: dict[str, int]) -> dict[str, Service]:
    raw = yaml.safe_load(COMPOSE_FILE.read_text())
    services = {}
    for name, spec in raw["services"].items():
        spec = interpolate(spec, env)
        replicas = scale.get(name, (spec.get("deploy") or {}).get("replicas", 1))
        services[name] = Service(name, spec, replicas)
        services[name].containers = [f"{NAME}-{name}-{i}" for i in range(1, replicas + 1)]
    return services


def start_order(services: dict[str, Service]) -> list[str]:
    order, seen = [], set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            raise SystemExit(f"docker-compose.yml: a depends_on cycle through {' -> '.join(path + (name,))}")
        if name in seen:
            return
        for dep in services[name].depends_on():
            visit(dep, path + (name,))
        seen.add(name)
        order.append(name)

    for name in services:
        visit(name, ())
    return order


# --- state --------------------------------------------------------------------------------------

def state() -> dict:
    path = STATE / "state.json"
    return json.loads(path.read_text()) if path.exists() else {}


def state_of_running_stack() -> dict:
    data = state()
    if "web" not in data:
        raise SystemExit(f"stack {NAME} is not up (REJUDGE_STACK names it; `up` starts it)")
    return data


def save_state(data: dict) -> None:
    STATE.mkdir(parents=True, exist_ok=True)
    (STATE / "state.json").write_text(json.dumps(data, indent=1))


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_for(condition, what: str, timeout: float = TIMEOUT, every: float = 1.0, on_fail=None) -> None:
    """Polls `condition` until it holds; fails, saying what, after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return
        if time.monotonic() > deadline:
            if on_fail:
                on_fail()
            raise SystemExit(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(every)


# --- images -------------------------------------------------------------------------------------

def image_present(image: str) -> bool:
    return engine("image", "inspect", image, check=False).returncode == 0


def ensure_images(services: dict[str, Service]) -> None:
    for service in services.values():
        image = service.image
        if image_present(image):
            continue
        if image in DEBIAN_MADE:
            folder = REPO / "scripts" / "stack-images" / DEBIAN_MADE[image]
            log(f"{image} is missing and no registry is asked: making it from Debian's packages ({folder.name})")
            subprocess.run(["bash", str(REPO / "scripts" / "image.sh"), "base"], check=True)
            tag = image if "/" in image else f"docker.io/library/{image}"
            build = ["build", "-t", tag, str(folder)]
            if ENGINE == "podman":
                build = ["build", "--pull=never", *ulimits(), "--layers", "-t", tag, str(folder)]
            started = time.monotonic()
            engine(*build, capture=False)
            log(f"made {image} in {time.monotonic() - started:.0f}s")
        else:
            raise SystemExit(f"image {image} is missing: build it first (bash scripts/image.sh build)")


# --- the object store ---------------------------------------------------------------------------

def network_gateway() -> str:
    info = json.loads(engine("network", "inspect", NAME).stdout)
    info = info[0] if isinstance(info, list) else info
    if ENGINE == "podman":
        return info["subnets"][0]["gateway"]
    return info["IPAM"]["Config"][0]["Gateway"]


BUCKET = "rejudge-stack"


def object_store_settings(gateway: str) -> dict[str, str]:
    """Where the store will answer. The gateway address exists on the host only once a container
    is on the network (the bridge is made then), so the port is chosen free on 127.0.0.1."""
    endpoint = f"http://{gateway}:{free_port()}"
    return {"REJUDGE_STORAGE": "s3", "AWS_STORAGE_BUCKET_NAME": BUCKET, "AWS_S3_ENDPOINT_URL": endpoint,
            "AWS_S3_REGION_NAME": "us-east-1", "AWS_ACCESS_KEY_ID": "stack", "AWS_SECRET_ACCESS_KEY": "stack"}


def start_object_store(settings: dict[str, str]) -> None:
    moto = Path(sys.executable).with_name("moto_server")
    if not moto.exists():
        raise SystemExit(f"{moto} is missing: bash scripts/setup.sh --dev installs moto (requirements-dev.txt)")
    endpoint = settings["AWS_S3_ENDPOINT_URL"]
    gateway, port = endpoint.rsplit("/", 1)[1].rsplit(":", 1)
    out = open(STATE / "moto.log", "w")
    proc = subprocess.Popen([str(moto), "-H", gateway, "-p", str(port)], stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True)
    (STATE / "moto.pid").write_text(str(proc.pid))

    def answers() -> bool:
        try:
            import urllib.request

            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2)
            return True
        except OSError:
            return proc.poll() is not None and (_ for _ in ()).throw(SystemExit((STATE / "moto.log").read_text()))

    wait_for(answers, f"moto's S3 server on {endpoint}", timeout=120, every=0.5)
    import boto3

    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="stack",
                 aws_secret_access_key="stack").create_bucket(Bucket=BUCKET)
    log(f"object store: moto on {endpoint}, bucket {BUCKET}")


def stop_object_store() -> None:
    pid_file = STATE / "moto.pid"
    if pid_file.exists():
        try:
            os.killpg(int(pid_file.read_text()), signal.SIGTERM)
        except (ProcessLookupError, ValueError):
            pass
        pid_file.unlink()


# --- containers ---------------------------------------------------------------------------------

def run_container(service: Service, container: str) -> None:
    engine("rm", "-f", container, check=False)
    engine(*run_argv(service, container))


def run_argv(service: Service, container: str) -> list[str]:
    """`run` arguments for one container of `service`, all from its compose entry."""
    spec = service.spec
    argv = ["run", "-d", "--name", container, "--network", NAME, "--network-alias", service.name,
            "--label", f"{LABEL}={NAME}", "--label", f"{LABEL}.service={service.name}", *ulimits()]
    if ENGINE == "podman":
        # podman runs health checks from systemd timers, and there is no systemd here: this script
        # runs each service's check itself (healthy()), so the image's own is not scheduled.
        argv.append("--no-healthcheck")
    for key, value in service.environment().items():
        argv += ["-e", f"{key}={value}"]
    for volume in spec.get("volumes") or []:
        source, _, target = volume.partition(":")
        if not source.startswith((".", "/")):
            source = f"{NAME}_{source}"  # a named volume, per stack as compose names them per project
        else:
            source = str((REPO / source).resolve())
        argv += ["-v", f"{source}:{target}"]
    for port in spec.get("ports") or []:
        argv += ["-p", str(port)]
    restart = spec.get("restart")
    if restart and restart != "no":
        argv += ["--restart", restart]
    if "stop_grace_period" in spec:
        argv += ["--stop-timeout", str(int(seconds(spec["stop_grace_period"])))]
    return [*argv, service.image, *service.command()]


def status(container: str) -> dict:
    done = engine("inspect", "--format", "{{json .State}}", container, check=False)
    return json.loads(done.stdout) if done.returncode == 0 else {}


def healthy(service: Service, container: str) -> bool:
    test = service.health_test()
    st = status(container)
    if not st.get("Running"):
        if st.get("Status") in ("exited", "stopped") and service.spec.get("restart", "no") == "no":
            show_logs(container)
            raise SystemExit(f"{container} exited ({st.get('ExitCode')}) before it was healthy")
        return False
    if test is None:
        return True
    try:
        done = engine("exec", container, *test, check=False, timeout=service.health_timeout())
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


def completed(container: str) -> bool:
    st = status(container)
    if st.get("Running") or st.get("Status") in ("created", "configured", "initialized"):
        return False
    if st.get("ExitCode") != 0:
        show_logs(container)
        raise SystemExit(f"{container} finished with exit code {st.get('ExitCode')}")
    return True


def show_logs(container: str, tail: int = 60) -> None:
    done = engine("logs", "--tail", str(tail), container, check=False)
    print(f"--- last {tail} lines of {container} ---\n{done.stdout}{done.stderr}", file=sys.stderr)


def satisfy(services: dict[str, Service], dep: str, condition: str) -> None:
    service = services[dep]
    for container in service.containers:
        if condition == "service_healthy":
            wait_for(lambda: healthy(service, container), f"{container} to be healthy", every=1.0,
                     on_fail=lambda: show_logs(container))
        elif condition == "service_completed_successfully":
            wait_for(lambda: completed(container), f"{container} to finish", every=1.0,
                     on_fail=lambda: show_logs(container))
        else:
            wait_for(lambda: status(container).get("Running") or completed(container), f"{container} to start")


def up(workers: int) -> None:
    started = time.monotonic()
    STATE.mkdir(parents=True, exist_ok=True)
    if state().get("up"):
        log("a stack of this name is up: taking it down first")
        down()
        STATE.mkdir(parents=True, exist_ok=True)
    port = free_port()
    save_state({"port": port, "up": True})
    if engine("network", "exists" if ENGINE == "podman" else "inspect", NAME, check=False).returncode != 0:
        engine("network", "create", NAME)
    store = object_store_settings(network_gateway())
    env = dict(os.environ)
    # The operator's settings of a plain-http rehearsal (no TLS proxy in front): a fresh key, the
    # published address, HTTPS redirects off (docs/operations.md, REJUDGE_HTTPS), the bucket.
    env.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
    env.update({"REJUDGE_PUBLISH": f"127.0.0.1:{port}", "REJUDGE_HTTPS": "0", **store})
    services = load_services(env, {"worker": workers})
    ensure_images(services)
    order = start_order(services)
    log(f"services in start order: {', '.join(order)}")
    store_started = False
    for name in order:
        service = services[name]
        for dep, condition in service.depends_on().items():
            satisfy(services, dep, condition)
        if not store_started and "AWS_S3_ENDPOINT_URL" in service.environment():
            start_object_store(store)  # a container is on the network by now: the gateway exists
            store_started = True
        for container in service.containers:
            run_container(service, container)
            log(f"started {container}")
    for name in order:
        service = services[name]
        if service.health_test() is None:
            continue
        for container in service.containers:
            wait_for(lambda: healthy(service, container), f"{container} to be healthy",
                     on_fail=lambda: show_logs(container))
            log(f"{container} is healthy")
    for name in ("web", "worker", "upkeep", "beat", "migrate"):
        for container in services[name].containers:
            uid = engine("inspect", "--format", "{{.Config.User}}", container).stdout.strip()
            if uid in ("", "0", "root"):
                raise SystemExit(f"{container} runs as root")
    save_state({"port": port, "up": True, "workers": services["worker"].containers,
                "web": services["web"].containers[0]})
    log(f"stack {NAME} is up and healthy in {time.monotonic() - started:.0f}s")
    print(url())


def url() -> str:
    return f"http://127.0.0.1:{state_of_running_stack()['port']}"


def ps() -> None:
    done = engine("ps", "-a", "--filter", f"label={LABEL}={NAME}", "--format",
                  "{{.Names}}\t{{.Status}}\t{{.Ports}}")
    print(done.stdout, end="")


def kill_worker() -> None:
    container = state_of_running_stack()["workers"][0]
    before = status(container)
    log(f"SIGKILL to {container} (pid {before.get('Pid')})")
    engine("kill", "--signal", "KILL", container)
    # Its restart policy (unless-stopped) brings it back; where the engine does not (podman
    # without its restart service), do what the policy says.

    def died() -> bool:
        now = status(container)
        return not now.get("Running") or now.get("Pid") != before.get("Pid")

    wait_for(died, f"{container} to die", timeout=60, every=0.2)
    if status(container).get("Running"):
        log(f"{container} was started again by the engine (its restart policy)")
    else:
        engine("start", container)
        log(f"{container} started again, as its restart policy says")


def restart_web() -> None:
    container = state_of_running_stack()["web"]
    services = load_services(dict(os.environ, SECRET_KEY="unused", REJUDGE_PUBLISH="unused"), {})
    log(f"restarting {container}")
    engine("restart", container)
    wait_for(lambda: healthy(services["web"], container), f"{container} to be healthy again",
             on_fail=lambda: show_logs(container))
    log(f"{container} is healthy again")


def manage(argv: list[str]) -> None:
    """`python manage.py ARGS` in the web container, as the operator runs a one-off command there."""
    container = state_of_running_stack()["web"]
    done = engine("exec", container, "python", "manage.py", *argv, check=False)
    print(done.stdout, end="")
    print(done.stderr, end="", file=sys.stderr)
    if done.returncode:
        raise SystemExit(done.returncode)


def logs(service: str | None) -> None:
    done = engine("ps", "-a", "--filter", f"label={LABEL}={NAME}", "--format", "{{.Names}}")
    for container in done.stdout.split():
        if service is None or container.startswith(f"{NAME}-{service}-"):
            show = engine("logs", container, check=False)
            print(f"=== {container} ===\n{show.stdout}{show.stderr}")


def down() -> None:
    done = engine("ps", "-a", "--filter", f"label={LABEL}={NAME}", "--format", "{{.Names}}", check=False)
    containers = done.stdout.split()
    if containers:
        engine("rm", "-f", "--time", "5", *containers, check=False) if ENGINE == "podman" else \
            engine("rm", "-f", *containers, check=False)
    for volume in ("pgdata", "data"):
        engine("volume", "rm", "-f", f"{NAME}_{volume}", check=False)
    engine("network", "rm", "-f", NAME, check=False) if ENGINE == "podman" else engine("network", "rm", NAME, check=False)
    stop_object_store()
    shutil.rmtree(STATE, ignore_errors=True)
    log(f"stack {NAME} is down ({len(containers)} containers removed)")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_up = sub.add_parser("up")
    p_up.add_argument("--workers", type=int, default=2, help="worker replicas (default 2: one can be killed)")
    for name in ("down", "ps", "url", "kill-worker", "restart-web"):
        sub.add_parser(name)
    p_logs = sub.add_parser("logs")
    p_logs.add_argument("service", nargs="?")
    p_manage = sub.add_parser("manage", help="manage.py ARGS in the web container")
    p_manage.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.cmd == "up":
        up(args.workers)
    elif args.cmd == "manage":
        manage(args.args)
    elif args.cmd == "url":
        print(url())
    else:
        {"down": down, "ps": ps, "kill-worker": kill_worker, "restart-web": restart_web}.get(
            args.cmd, lambda: logs(args.service))()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
