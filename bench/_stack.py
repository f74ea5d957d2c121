"""A local Rejudge stack for the rehearsal and the upgrade drill: gunicorn, a Celery worker for jobs,
an upkeep worker on a queue of its own (so the reaper runs while a job holds the other), and beat,
each a process from .venv against PostgreSQL, Redis and moto's S3 server, like tests/multihost does,
with a database, Redis queues, cache prefix, bucket and port of its own so that colleagues sharing
the machine never see its traffic.

Faults are implemented here for the local stack: `kill_worker()` SIGKILLs the job worker (as an
OOM kill or a lost host would: no chance to hand its message back) and starts a new one, as a
container's restart policy would; `restart_web()` stops gunicorn and starts it again on the same
port, so clients see refused connections in between.
"""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parent.parent
PG = "postgres://postgres@127.0.0.1:5432"
# Redis database 11: colleagues' tests use db 0/other numbers; queues and cache keys are prefixed too.
REDIS = "redis://127.0.0.1:6379/11"
S3_ENDPOINT = os.environ.get("REJUDGE_TEST_S3_ENDPOINT", "http://127.0.0.1:5055")
S3_KEYS = {"AWS_ACCESS_KEY_ID": "rejudge-test", "AWS_SECRET_ACCESS_KEY": "rejudge-test-secret",
           "AWS_S3_REGION_NAME": "us-east-1"}
# One address plays the whole crowd: the per-address and per-user limits must not stop it.
HIGH_RATE = "1000000/min"
THROTTLES = {"REJUDGE_THROTTLE_USER": HIGH_RATE, "REJUDGE_THROTTLE_ANON": HIGH_RATE,
             "REJUDGE_THROTTLE_UPLOADS": HIGH_RATE, "REJUDGE_THROTTLE_CROWD_ARRIVALS": HIGH_RATE}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def s3_client():
    import boto3

    return boto3.client("s3", endpoint_url=S3_ENDPOINT, aws_access_key_id=S3_KEYS["AWS_ACCESS_KEY_ID"],
                        aws_secret_access_key=S3_KEYS["AWS_SECRET_ACCESS_KEY"], region_name=S3_KEYS["AWS_S3_REGION_NAME"])


def bucket_objects(bucket: str) -> dict[str, bytes]:
    client, out, token = s3_client(), {}, None
    while True:
        kwargs = {"Bucket": bucket, **({"ContinuationToken": token} if token else {})}
        page = client.list_objects_v2(**kwargs)
        for obj in page.get("Contents", []):
            out[obj["Key"]] = client.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
        if not page.get("IsTruncated"):
            return out
        token = page["NextContinuationToken"]


def psql(sql: str, db: str = "postgres") -> str:
    return subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", db, "-v", "ON_ERROR_STOP=1", "-Atc", sql],
                          check=True, capture_output=True, text=True).stdout


def create_database(name: str) -> None:
    psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    psql(f'CREATE DATABASE "{name}"')


def drop_database(name: str) -> None:
    psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class LocalStack:
    """One stack; `code` is the checkout whose manage.py/config the processes run (the drill runs
    an older release's checkout against the same services)."""

    tag: str
    code: Path = REPO
    database: str | None = None
    bucket: str | None = None
    extra_env: dict = field(default_factory=dict)
    root: Path = field(init=False)
    port: int = 0  # gunicorn's port; 0: a free one
    procs: dict = field(default_factory=dict)
    keep: bool = False

    def __post_init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=f"rejudge-{self.tag}-"))
        self.port = self.port or free_port()
        self.database = self.database or f"rejudge_{self.tag}_{os.getpid()}"
        self.bucket = self.bucket or f"rejudge-{self.tag.replace('_', '-')}-{uuid.uuid4().hex[:8]}"
        self.queue = f"rejudge-{self.tag}-{uuid.uuid4().hex[:8]}"
        self.secret = secrets.token_urlsafe(50)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def database_url(self) -> str:
        return f"{PG}/{self.database}"

    def env(self) -> dict:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("REJUDGE_", "DJANGO_", "AWS_"))
                and k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "SECRET_KEY")}
        folders = {name: str(self.root / "disk" / name.lower()) for name in
                   ("UPLOAD_ROOT", "EXPORT_ROOT", "MEDIA_ROOT", "JUDGMENTS_ROOT", "RUNS_ROOT", "STATIC_ROOT",
                    "REJUDGE_STORAGE_CACHE_DIR", "REJUDGE_VAR_DIR")}
        return base | folders | THROTTLES | S3_KEYS | {
            "DATABASE_URL": self.database_url, "CELERY_BROKER_URL": REDIS, "REDIS_URL": REDIS,
            "CELERY_TASK_DEFAULT_QUEUE": self.queue, "REJUDGE_MAINTENANCE_QUEUE": self.queue + "-upkeep",
            "CELERY_TASK_ALWAYS_EAGER": "0", "CACHE_KEY_PREFIX": self.queue, "SECRET_KEY": self.secret,
            "DEBUG": "0", "REJUDGE_HTTPS": "0", "ALLOWED_HOSTS": "127.0.0.1,localhost", "LOG_LEVEL": "WARNING",
            "REJUDGE_STORAGE": "s3", "AWS_STORAGE_BUCKET_NAME": self.bucket, "AWS_S3_ENDPOINT_URL": S3_ENDPOINT,
            "REJUDGE_STORAGE_DOWNLOADS": "redirect",
            # A killed worker's job is taken back within ~30 s instead of the production 5 minutes,
            # so the rehearsal sees the recovery inside its time budget (3 heartbeats, as settings demand).
            "REJUDGE_JOB_HEARTBEAT_SECONDS": "5", "REJUDGE_JOB_STALE_AFTER_SECONDS": "15",
            "REJUDGE_JOB_RECOVER_EVERY_SECONDS": "5", "REJUDGE_JOB_RESEND_AFTER_SECONDS": "30",
            "PYTHONUNBUFFERED": "1",
        } | self.extra_env

    def python(self) -> str:
        return str(REPO / ".venv" / "bin" / "python")

    def manage(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run([self.python(), "manage.py", *args], cwd=self.code, env=self.env(), input=input,
                              capture_output=True, text=True)
        if check and done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} (in {self.code}) exited {done.returncode}:\n"
                               f"{done.stdout[-1500:]}\n{done.stderr[-3000:]}")
        return done

    # ---- lifecycle ----------------------------------------------------------------------------

    def prepare(self, *, fresh_database: bool = True) -> None:
        for name in ("disk/tmp", "disk/rejudge_var_dir"):
            (self.root / name).mkdir(parents=True, exist_ok=True)
        if fresh_database:
            create_database(self.database)
        try:
            s3_client().create_bucket(Bucket=self.bucket)
        except Exception as exc:  # noqa: BLE001 - an existing bucket of ours (restore) is fine
            if "BucketAlreadyOwnedByYou" not in str(exc) and "BucketAlreadyExists" not in str(exc):
                raise

    def migrate(self) -> str:
        return self.manage("migrate", "--no-input").stdout

    def admin_token(self, username: str = "admin") -> str:
        """The one step outside HTTP: the first admin account, as `createsuperuser` makes it."""
        self.manage("createsuperuser", "--no-input", "--username", username, "--email", f"{username}@example.org",
                    check=False)
        out = self.manage("drf_create_token", username).stdout
        return out.strip().split()[2]  # "Generated token <key> for user admin"

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = (self.root / f"{name}.log").open("a")
        self.procs[name] = subprocess.Popen([self.python(), "-m", *argv], cwd=self.code, env=self.env(),
                                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def start_worker(self) -> None:
        # solo: the job runs in the process we kill, as a container's only process would.
        self._spawn("worker", ["celery", "-A", "config", "worker", "-Q", self.queue, "--pool=solo", "-l", "INFO",
                               "-n", f"{self.queue}@%h", "--without-gossip", "--without-mingle"])

    def start_web(self, workers: int = 3) -> None:
        self._spawn("web", ["gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{self.port}",
                            "--workers", str(workers), "--threads", "4", "--timeout", "120",
                            "--graceful-timeout", "10", "--no-control-socket"])

    def start(self, *, web_workers: int = 3) -> None:
        self.start_worker()
        self._spawn("upkeep", ["celery", "-A", "config", "worker", "-Q", self.queue + "-upkeep", "--pool=solo",
                               "-l", "WARNING", "-n", f"{self.queue}-upkeep@%h", "--without-gossip", "--without-mingle"])
        self._spawn("beat", ["celery", "-A", "config", "beat", "-l", "WARNING",
                             "-s", str(self.root / "beat-schedule")])
        self.web_workers = web_workers
        self.start_web(web_workers)
        self.wait_healthy(90)

    def wait_healthy(self, timeout: float) -> float:
        started = time.monotonic()
        deadline = started + timeout
        while time.monotonic() < deadline:
            web = self.procs.get("web")
            if web is not None and web.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {web.returncode}\n{self.log('web')}")
            try:
                answer = requests.get(self.url + "/healthz", timeout=2).status_code
                if answer == 404:  # a release older than /healthz: its login page then
                    answer = requests.get(self.url + "/login/", timeout=2).status_code
                if answer == 200:
                    return time.monotonic() - started
            except requests.RequestException:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{self.url}/healthz did not answer 200 within {timeout:.0f}s\n{self.log('web')}")

    def _stop(self, name: str, sig=signal.SIGTERM, timeout: float = 30) -> None:
        proc = self.procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    # ---- faults ------------------------------------------------------------------------------

    def kill_worker(self) -> str:
        pid = self.procs["worker"].pid
        self._stop("worker", sig=signal.SIGKILL)
        self.start_worker()
        return f"SIGKILL job worker pid {pid}; started pid {self.procs['worker'].pid}"

    def restart_web(self) -> str:
        pid = self.procs["web"].pid
        self._stop("web")
        self.start_web(self.web_workers)
        return f"gunicorn pid {pid} stopped and started again as pid {self.procs['web'].pid}"

    def stop_web(self) -> None:
        self._stop("web")

    def log(self, name: str, chars: int = 3000) -> str:
        path = self.root / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def stop(self, *, drop: bool = True) -> None:
        for name in ("web", "beat", "worker", "upkeep"):
            self._stop(name)
        try:
            import redis

            client = redis.Redis.from_url(REDIS)
            client.delete(self.queue, self.queue + "-upkeep")
            for key in client.scan_iter(f"{self.queue}*"):
                client.delete(key)
        except Exception:  # noqa: BLE001 - cleanup only
            pass
        if drop and not self.keep:
            drop_database(self.database)
            try:
                client = s3_client()
                for key in bucket_objects(self.bucket):
                    client.delete_object(Bucket=self.bucket, Key=key)
                client.delete_bucket(Bucket=self.bucket)
            except Exception:  # noqa: BLE001
                pass
            shutil.rmtree(self.root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit("a helper module: see bench/rehearsal.py and bench/upgrade_drill.py")
