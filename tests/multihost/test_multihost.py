"""Web and worker on separate "hosts" (issue 17, item 2): a gunicorn web process and a Celery worker,
each a subprocess with its own local folders for every *_ROOT setting, sharing only PostgreSQL,
Redis and an S3-compatible server (REJUDGE_STORAGE=s3, a bucket of the test's own). Driven only
over HTTP, as an admin (API token) and a rater (signed in through the login form): upload a
dataset and a run, build a pool, judge pairs, compute a report, export the labels and download the
export through its signed URL, play a clip. Every job must have run on the worker, every file
must be in the bucket, and neither process may touch the other's folders: an audit hook in each
(guard.py) refuses such access and records it, and the folders are checked afterwards.
"""
from __future__ import annotations

import csv
import functools
import hashlib
import io
import tempfile
import time
import uuid
from pathlib import Path

import pytest
import requests

from tests.conftest import FIXTURES, TEST_BROKER_URL, _redis_reachable, missing_service
from tests.media_files import make_video
from tests.multihost.hosts import Host, free_port, logs, wait_for_web
from tests.objectstore import object_store  # noqa: F401 (the session fixture)
from tests.worker_processes import database_url

pytestmark = [pytest.mark.postgres, pytest.mark.worker, pytest.mark.objectstore, pytest.mark.django_db(transaction=True)]

JOB_TIMEOUT = 90  # seconds per job on a loaded 2-core machine; a bound on waiting, not a claim about speed


@functools.cache
def clip_bytes() -> bytes:
    """A real (tiny) H.264 MP4 for each video of the run: the dataset's import checks its media, and
    a pool is not built on clips a browser cannot play."""
    with tempfile.TemporaryDirectory() as folder:
        return make_video(Path(folder) / "clip", "mp4").read_bytes()
RUN_VIDEOS = ("video9770", "video9771", "video7020", "video9773", "video7026", "video9775")


@pytest.fixture
def hosts(tmp_path, object_store):  # noqa: F811
    from django.db import connection

    if connection.vendor != "postgresql":
        missing_service("PostgreSQL (the web and worker processes share the test database)")
    if not _redis_reachable(TEST_BROKER_URL):
        missing_service(f"Redis at {TEST_BROKER_URL}")
    bucket = object_store.new_bucket()
    queue = f"rejudge-multihost-{uuid.uuid4().hex[:10]}"
    shared = object_store.env(bucket) | {
        "DATABASE_URL": database_url(), "CELERY_BROKER_URL": TEST_BROKER_URL, "REDIS_URL": TEST_BROKER_URL,
        "CELERY_TASK_DEFAULT_QUEUE": queue, "REJUDGE_MAINTENANCE_QUEUE": queue, "CELERY_TASK_ALWAYS_EAGER": "0",
        "CACHE_KEY_PREFIX": queue, "SECRET_KEY": f"multihost-{uuid.uuid4().hex}", "DEBUG": "0", "REJUDGE_HTTPS": "0",
        "ALLOWED_HOSTS": "127.0.0.1", "REJUDGE_STORAGE_DOWNLOADS": "redirect", "REJUDGE_MIN_WATCH_SECONDS": "0",
    }
    web, worker = Host("web", tmp_path / "web"), Host("worker", tmp_path / "worker")
    web.configure(shared=shared, other=worker)
    worker.configure(shared=shared, other=web)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    node = f"multihost-{queue}"
    worker.start(["celery", "-A", "config", "worker", "-Q", queue, "--pool=solo", "-l", "INFO", "-n", f"{node}@%h",
                  "--without-gossip", "--without-mingle", "--without-heartbeat"])
    web.start(["gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", "1",
               "--timeout", "120", "--access-logfile", "-",
               # Its default socket is one per user (~/.gunicorn): other web servers may be running.
               "--no-control-socket"])
    try:
        wait_for_web(web, url, timeout=60, others=[worker])
        yield {"web": web, "worker": worker, "url": url, "bucket": bucket, "node": node}
    finally:
        web.stop()
        worker.stop()
        import redis

        redis.Redis.from_url(TEST_BROKER_URL).delete(queue)


class Api:
    """HTTP to the web process, failing with both hosts' logs on a surprise."""

    def __init__(self, base: str, session: requests.Session, hosts: dict) -> None:
        self.base, self.session, self.hosts = base, session, hosts

    def call(self, method: str, path: str, expect: int, **kwargs) -> requests.Response:
        response = self.session.request(method, self.base + path, timeout=60, allow_redirects=False, **kwargs)
        if response.status_code != expect:
            pytest.fail(f"{method} {path}: {response.status_code}, expected {expect}\n{response.text[:2000]}\n"
                        + logs(self.hosts["web"], self.hosts["worker"]))
        return response

    def wait_job(self, job_id: int) -> dict:
        deadline = time.monotonic() + JOB_TIMEOUT
        while time.monotonic() < deadline:
            job = self.call("GET", f"/api/v1/jobs/{job_id}/", 200).json()
            if job["status"] in ("succeeded", "failed"):
                if job["status"] != "succeeded":
                    pytest.fail(f"job {job_id} ({job['kind']}) failed: {job['message']} {job['errors']}\n"
                                + logs(self.hosts["web"], self.hosts["worker"]))
                return job
            time.sleep(0.25)
        pytest.fail(f"job {job_id} did not finish within {JOB_TIMEOUT}s\n" + logs(self.hosts["web"], self.hosts["worker"]))


def _rater_session(api_base: str, username: str, password: str) -> requests.Session:
    """Signs in through the login form, as a browser does (CSRF cookie, then the POST)."""
    session = requests.Session()
    session.get(api_base + "/login/", timeout=30).raise_for_status()
    token = session.cookies["csrftoken"]
    response = session.post(api_base + "/login/", data={"username": username, "password": password,
                                                         "csrfmiddlewaretoken": token},
                            headers={"Referer": api_base + "/login/"}, timeout=30, allow_redirects=False)
    assert response.status_code == 302, f"rater login refused: {response.status_code} {response.text[:500]}"
    session.headers["X-CSRFToken"] = session.cookies["csrftoken"]
    return session


def _bucket_keys(object_store, bucket: str) -> list[str]:  # noqa: F811
    listed = object_store.client().list_objects_v2(Bucket=bucket)
    return sorted(o["Key"] for o in listed.get("Contents", []))


def test_web_and_worker_on_separate_hosts_share_only_database_broker_and_bucket(hosts, object_store):  # noqa: F811
    from annotation.services.accounts.users import api_token_for
    from tests.factories import make_user

    base, bucket = hosts["url"], hosts["bucket"]
    # The one step outside HTTP: the first admin account, as `createsuperuser` makes it.
    admin_session = requests.Session()
    admin_session.headers["Authorization"] = f"Token {api_token_for(user=make_user('admin'))}"
    admin = Api(base, admin_session, hosts)
    jobs = []

    # Clips live in the bucket's media area, put there by whoever holds the videos.
    for video in RUN_VIDEOS:
        object_store.client().put_object(Bucket=bucket, Key=f"media/msrvtt/{video}.mp4", Body=clip_bytes())

    dataset_csv = (FIXTURES / "datasets/msrvtt_1ka_head30.csv").read_bytes()
    started = admin.call("POST", "/api/v1/datasets/import/", 202,
                         files={"file": ("msrvtt_1ka_head30.csv", dataset_csv)},
                         data={"name": "multihost", "media_template": "msrvtt/{video_id}.mp4"}).json()
    assert started["status"] == "queued"  # not run eagerly by the web process
    jobs.append(done := admin.wait_job(started["id"]))
    dataset_id = done["result"]["dataset_id"]
    assert (done["result"]["clips"], admin.call("GET", f"/api/v1/datasets/{dataset_id}/", 200).json()["caption_count"]) == (30, 30)

    run_file = (FIXTURES / "multihost/msrvtt_head30_run.trec").read_bytes()
    started = admin.call("POST", f"/api/v1/datasets/{dataset_id}/runs/import/", 202,
                         files={"file": ("multihost.trec", run_file)}).json()
    jobs.append(done := admin.wait_job(started["id"]))
    run_id = done["result"]["run_id"]

    started = admin.call("POST", "/api/v1/pools/build/", 202, json={
        "dataset": dataset_id, "name": "multihost pool", "runs": [run_id], "depth": 2, "redundancy": 0}).json()
    jobs.append(done := admin.wait_job(started["id"]))
    pool_id = done["result"]["pool_id"]
    # 6 captions x the run's top 2 clips, all distinct pairs (the fixture's run shifts by one clip per caption).
    assert done["result"]["pairs"] == 12

    password = f"pw-{uuid.uuid4().hex}"
    rater = admin.call("POST", "/api/v1/raters/", 201, json={"username": "multihost-rater", "password": password}).json()
    admin.call("POST", f"/api/v1/pools/{pool_id}/members/", 201, json={"raters": [rater["id"]]})
    rater_api = Api(base, _rater_session(base, "multihost-rater", password), hosts)

    given = {}
    for value in ("relevant", "not_relevant", "relevant"):
        assignment = rater_api.call("POST", f"/api/v1/pools/{pool_id}/next/", 200, json={}).json()["assignment"]
        assert assignment is not None and assignment["mode"] == "production"
        clip = assignment["clip"]
        if not given:
            # The web process checks access, then sends the player to the bucket, which answers Range.
            signed = rater_api.call("GET", clip["url"], 302).headers["Location"]
            assert signed.startswith(f"{object_store.endpoint}/{bucket}/media/msrvtt/{clip['id']}.mp4?")
            part = requests.get(signed, headers={"Range": "bytes=1000-1009"}, timeout=30)
            assert (part.status_code, part.content) == (206, clip_bytes()[1000:1010])
        rater_api.call("POST", "/api/v1/labels/", 201, json={
            "client_id": uuid.uuid4().hex, "lease_id": assignment["lease_id"], "value": value, "seconds": 3})
        given[(assignment["caption"]["text"], clip["id"])] = value
    assert len(given) == 3

    started = admin.call("POST", f"/api/v1/pools/{pool_id}/reports/", 202, json={"kind": "metrics"}).json()
    jobs.append(done := admin.wait_job(started["id"]))
    report = admin.call("GET", f"/api/v1/reports/{done['result']['report_id']}/", 200).json()
    assert report["kind"] == "metrics" and report["pool"] == pool_id and report["result"]["runs"] == ["multihost"]
    # Redundancy 0: each answer settles its pair. 12 pool pairs, 3 judged (2 relevant) -> 9 open;
    # the fixture's run answers 6 of the 30 captions.
    counts = report["result"]["labels"]
    assert (counts["pool_pairs"], counts["pairs_resolved_relevant"], counts["pairs_unresolved"]) == (12, 2, 9)
    assert report["result"]["per_run"]["multihost"]["captions_answered"] == 6

    started = admin.call("POST", f"/api/v1/pools/{pool_id}/exports/", 202, json={"format": "csv"}).json()
    jobs.append(done := admin.wait_job(started["id"]))
    export_id, sha256 = done["result"]["export_id"], done["result"]["sha256"]
    download = admin.call("GET", f"/api/v1/exports/{export_id}/download/", 302)
    signed = download.headers["Location"]
    assert signed.startswith(f"{object_store.endpoint}/{bucket}/exports/") and "X-Amz-Signature=" in signed
    body = requests.get(signed, timeout=30)
    assert body.status_code == 200 and hashlib.sha256(body.content).hexdigest() == sha256
    rows = list(csv.DictReader(io.StringIO(body.content.decode())))
    assert len(rows) == 12  # one row per label, one per unlabelled pair: 3 + 9
    labelled = {(row["caption_text"], row["clip_id"]): row["value"] for row in rows if row["label_id"]}
    assert labelled == given
    # Raters appear under their pseudonym only, and a rater may not download the export.
    assert {row["rater"] for row in rows if row["label_id"]} == {str(rater["pseudonym"])}
    rater_api.call("GET", f"/api/v1/exports/{export_id}/download/", 403)

    # Every job ran on the worker, once: its attempts name the worker's node and process.
    worker_pid = hosts["worker"].process.pid
    for job in jobs:
        attempts = admin.call("GET", f"/api/v1/jobs/{job['id']}/", 200).json()["attempt_history"]
        assert [(a["outcome"], a["worker"].split("@")[0], a["worker"].endswith(f" pid {worker_pid}")) for a in attempts] \
            == [("succeeded", hosts["node"], True)], (job["kind"], attempts)
    # The imports named their uploads in the uploads area, not a path on the web host's disk.
    for job in jobs[:2]:
        assert "upload" in job["params"] and "path" not in job["params"], job["params"]

    # The files are in the bucket: the one export (its bytes, under its name) and the clips; the
    # uploads were removed once imported.
    keys = _bucket_keys(object_store, bucket)
    exports = admin.call("GET", f"/api/v1/exports/?pool={pool_id}", 200).json()
    exports = exports["results"] if isinstance(exports, dict) else exports
    assert [(e["id"], e["sha256"]) for e in exports] == [(export_id, sha256)]
    exported = [k for k in keys if k.startswith("exports/")]
    assert len(exported) == 1 and exported[0].endswith("/" + exports[0]["name"]), keys
    assert object_store.client().head_object(Bucket=bucket, Key=exported[0])["ContentLength"] == len(body.content)
    assert [k for k in keys if k.startswith("media/")] == sorted(f"media/msrvtt/{v}.mp4" for v in RUN_VIDEOS)
    assert not [k for k in keys if k.startswith("uploads/")], keys

    # Nothing crossed between the hosts: no refused access, and no file on either host's disk
    # (temporary copies of uploads are gone once read).
    for host in (hosts["web"], hosts["worker"]):
        assert host.guard_refusals() == [], f"{host.name} reached into the other host's folders: {host.guard_refusals()}"
        assert host.files_on_disk() == {}, f"{host.name} kept files on its own disk: {host.files_on_disk()}"
