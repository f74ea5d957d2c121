"""A real S3-compatible server for the storage tests: moto's standalone server.

`REJUDGE_TEST_S3_ENDPOINT` (scripts/services.sh starts `moto_server` there) is used when it
answers; otherwise the harness starts moto's ThreadedMotoServer on a free port of 127.0.0.1 for
the session. Either way it is a real HTTP server that other processes reach too (the multi-host
test's web and worker). Without moto the tests fail under REJUDGE_REQUIRE_SERVICES=1, else skip.
"""
from __future__ import annotations

import os
import socket
import urllib.request
import uuid
from dataclasses import dataclass

import pytest

from tests.conftest import missing_service

ACCESS_KEY, SECRET_KEY, REGION = "rejudge-test", "rejudge-test-secret", "us-east-1"


@dataclass(frozen=True)
class ObjectStore:
    endpoint: str

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name=REGION)

    def new_bucket(self) -> str:
        name = f"rejudge-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def env(self, bucket: str) -> dict[str, str]:
        """The settings a process needs to keep its files in `bucket` (REJUDGE_STORAGE=s3)."""
        return {"REJUDGE_STORAGE": "s3", "AWS_STORAGE_BUCKET_NAME": bucket, "AWS_S3_ENDPOINT_URL": self.endpoint,
                "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_S3_REGION_NAME": REGION}

    def storages(self, bucket: str, *, areas) -> dict:
        """settings.STORAGES entries putting every area in `bucket`, as config/settings.py does."""
        options = {"bucket_name": bucket, "endpoint_url": self.endpoint, "access_key": ACCESS_KEY,
                   "secret_key": SECRET_KEY, "region_name": REGION, "addressing_style": "path",
                   "signature_version": "s3v4", "querystring_expire": 300, "max_memory_size": 8 << 20,
                   "file_overwrite": True}
        return {area: {"BACKEND": "annotation.storage.backends.S3AreaStorage",
                       "OPTIONS": options | {"location": area}} for area in areas}


def _answers(endpoint: str) -> bool:
    try:
        with urllib.request.urlopen(endpoint + "/moto-api/", timeout=2):
            return True
    except Exception:  # noqa: BLE001
        return False


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def object_store():
    configured = os.environ.get("REJUDGE_TEST_S3_ENDPOINT", "http://127.0.0.1:5055").rstrip("/")
    if _answers(configured):
        yield ObjectStore(configured)
        return
    try:
        from moto.server import ThreadedMotoServer
    except ImportError:
        missing_service("moto[server] (pip install -r requirements-dev.txt) for an S3-compatible server")
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    if not _answers(endpoint):
        server.stop()
        missing_service(f"moto's S3 server did not answer on {endpoint}")
    try:
        yield ObjectStore(endpoint)
    finally:
        server.stop()
