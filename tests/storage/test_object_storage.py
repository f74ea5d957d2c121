"""Every storage area in a bucket of a real S3-compatible server (moto's standalone server, see
tests/objectstore.py): streamed multipart writes that appear whole or not at all, reads for the
import parsers, the job clean-up, clip playback through signed URLs answering Range with 206, and
export downloads redirected to signed URLs with the permission rules unchanged."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
import requests
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from annotation.models import Artefact, Clip, Job
from annotation.services.accounts.raters import memberships_grant
from annotation.storage import (area_is_local, stored_file_chunks, stored_file_exists, stored_file_local_path,
                                         stored_file_open, stored_file_write, stored_files_under)
from annotation.services.storage.job_files import job_files_clean, job_upload_remove
from annotation.services.storage.uploads import upload_local_path, upload_store
from tests.conftest import REPO
from tests.factories import make_pool_with_runs, make_rater, make_user
from tests.objectstore import object_store  # noqa: F401 (the session fixture)

pytestmark = [pytest.mark.django_db, pytest.mark.objectstore]
MB = 1 << 20


@pytest.fixture
def bucket(settings, object_store):  # noqa: F811
    name = object_store.new_bucket()
    settings.STORAGES = settings.STORAGES | object_store.storages(name, areas=settings.STORAGE_AREAS)
    settings.AWS_S3_FILE_BUFFER_SIZE = 5 * MB  # the smallest part S3 accepts: 12 MB make 3 parts
    settings.REJUDGE_STORAGE_DOWNLOADS = "redirect"
    assert not area_is_local("exports")
    return name


def _keys(object_store, bucket) -> list[str]:  # noqa: F811
    listed = object_store.client().list_objects_v2(Bucket=bucket)
    return sorted(o["Key"] for o in listed.get("Contents", []))


def _block(i: int) -> bytes:
    return hashlib.sha256(str(i).encode()).digest() * (MB // 32)  # 1 MB, different per i


def test_a_streamed_write_goes_up_in_parts_and_reads_back_the_same(bucket, object_store):  # noqa: F811
    digest = hashlib.sha256()
    with stored_file_write("exports", "jobs/7/big.csv") as out:
        for i in range(12):
            out.write(_block(i))
            digest.update(_block(i))
        # Nothing is visible before the writer finishes: the parts are not an object yet.
        assert _keys(object_store, bucket) == []
        assert len(object_store.client().list_multipart_uploads(Bucket=bucket).get("Uploads", [])) == 1
    assert _keys(object_store, bucket) == ["exports/jobs/7/big.csv"]
    head = object_store.client().head_object(Bucket=bucket, Key="exports/jobs/7/big.csv")
    assert head["ContentLength"] == 12 * MB
    assert head["ETag"].strip('"').endswith("-3")  # a multipart object: 5 + 5 + 2 MB

    streamed = hashlib.sha256()
    for chunk in stored_file_chunks("exports", "jobs/7/big.csv"):
        assert len(chunk) <= MB
        streamed.update(chunk)
    assert streamed.hexdigest() == digest.hexdigest()
    with stored_file_local_path("exports", "jobs/7/big.csv") as path:
        assert path.name == "big.csv" and path.stat().st_size == 12 * MB
        copy = path
    assert not copy.exists()  # the temporary copy is gone once read


def test_a_write_that_fails_leaves_no_object_and_no_pending_upload(bucket, object_store):  # noqa: F811
    with pytest.raises(RuntimeError):
        with stored_file_write("exports", "jobs/8/broken.csv") as out:
            for i in range(7):
                out.write(_block(i))
            raise RuntimeError("the database went away mid-export")
    assert _keys(object_store, bucket) == []
    assert object_store.client().list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []


def test_an_upload_is_stored_by_name_read_by_the_importer_and_removed_with_its_job(bucket, object_store):  # noqa: F811
    name = upload_store(uploaded_file=SimpleUploadedFile("my run (1).trec", b"q1 Q0 v1 1 0.9 t\n"))
    folder, file_name = name.split("/")
    assert file_name == "my_run_1_.trec" and len(folder) == 32
    assert _keys(object_store, bucket) == [f"uploads/{name}"]
    with upload_local_path(params={"upload": name}) as path:
        assert path.read_bytes() == b"q1 Q0 v1 1 0.9 t\n" and path.name == "my_run_1_.trec"
    assert job_upload_remove(job=Job(params={"upload": name})) is True
    assert _keys(object_store, bucket) == []


def test_the_clean_up_works_on_the_bucket(bucket, object_store):  # noqa: F811
    retention = timedelta(days=8)
    kept = upload_store(uploaded_file=SimpleUploadedFile("a.trec", b"x"))
    gone = upload_store(uploaded_file=SimpleUploadedFile("b.trec", b"x"))
    Job.objects.create(kind="import_run", status=Job.Status.QUEUED, params={"upload": kept})
    Job.objects.create(kind="import_run", status=Job.Status.FAILED, params={"upload": gone},
                       finished_at=timezone.now() - retention)
    done = Job.objects.create(kind="export_csv", status=Job.Status.SUCCEEDED)
    for name in ("kept.csv", "orphan.csv"):
        with stored_file_write("exports", f"jobs/{done.pk}/{name}") as out:
            out.write(b"x")
    pool, _ = make_pool_with_runs(captions=2, clips=3, depth=2)
    Artefact.objects.create(dataset=pool.dataset, kind="labels_csv", name="kept.csv", path=f"jobs/{done.pk}/kept.csv",
                            job=done)

    counts = job_files_clean()
    assert (counts["uploads"], counts["outputs"]) == (1, 1)
    assert _keys(object_store, bucket) == [f"exports/jobs/{done.pk}/kept.csv", f"uploads/{kept}"]


@pytest.fixture
def clip_in_bucket(bucket):
    pool, _ = make_pool_with_runs(captions=2, clips=3, depth=2)
    Clip.objects.filter(dataset=pool.dataset, external_id="v2").update(media="clips/a.mp4")
    with stored_file_write("media", "clips/a.mp4") as out:
        out.write(bytes(range(256)) * 64)  # 16 KB
    member, outsider = make_rater(), make_rater()
    memberships_grant(pool=pool, users=[member])
    return {"member": member, "outsider": outsider}


def test_a_member_rater_is_sent_to_a_signed_url_that_answers_range_with_206(client, clip_in_bucket, object_store):  # noqa: F811
    client.force_login(clip_in_bucket["member"])
    response = client.get("/media/clips/a.mp4")
    assert response.status_code == 302
    url = response["Location"]
    assert url.startswith(object_store.endpoint + "/") and "X-Amz-Signature=" in url and "X-Amz-Expires=300" in url
    assert "private" in response["Cache-Control"]

    part = requests.get(url, headers={"Range": "bytes=1000-1009"}, timeout=10)
    assert part.status_code == 206
    assert part.headers["Content-Range"] == "bytes 1000-1009/16384"
    assert part.content == bytes((1000 + i) % 256 for i in range(10))
    assert part.headers["Content-Type"] == "video/mp4"
    # (moto does not check signatures, so that an unsigned URL is refused is the real store's part.)


def test_nobody_else_gets_a_url(client, clip_in_bucket):
    client.force_login(clip_in_bucket["outsider"])
    refused = client.get("/media/clips/a.mp4")
    assert refused.status_code == 404 and "Location" not in refused
    client.force_login(make_user("researcher"))
    assert client.get("/media/clips/a.mp4").status_code == 404
    client.logout()
    assert client.get("/media/clips/a.mp4")["Location"].startswith("/login/")


def test_exports_download_through_a_signed_url_for_researchers_only(client, bucket):
    pool, _ = make_pool_with_runs(captions=2, clips=3, depth=2)
    body = b"q1 0 v1 1\n" * 1000
    with stored_file_write("exports", "pools/pool-1/x.qrels") as out:
        out.write(body)
    artefact = Artefact.objects.create(dataset=pool.dataset, kind="qrels", name="x.qrels", path="pools/pool-1/x.qrels",
                                       content_type="text/plain; charset=utf-8", size=len(body),
                                       sha256=hashlib.sha256(body).hexdigest())
    client.force_login(make_user("researcher"))
    response = client.get(f"/api/v1/exports/{artefact.pk}/download/")
    assert response.status_code == 302 and response["X-Content-SHA256"] == artefact.sha256
    downloaded = requests.get(response["Location"], timeout=10)
    assert downloaded.status_code == 200 and downloaded.content == body
    assert downloaded.headers["Content-Disposition"] == 'attachment; filename="x.qrels"'

    client.force_login(make_rater())
    assert client.get(f"/api/v1/exports/{artefact.pk}/download/").status_code == 403


def test_exports_stream_through_the_web_process_when_asked(client, bucket, settings):
    settings.REJUDGE_STORAGE_DOWNLOADS = "stream"
    pool, _ = make_pool_with_runs(captions=2, clips=3, depth=2)
    body = os.urandom(3 * MB)
    with stored_file_write("exports", "pools/pool-1/y.csv") as out:
        out.write(body)
    artefact = Artefact.objects.create(dataset=pool.dataset, kind="labels_csv", name="y.csv", path="pools/pool-1/y.csv",
                                       content_type="text/csv", size=len(body))
    client.force_login(make_user("admin"))
    response = client.get(f"/api/v1/exports/{artefact.pk}/download/")
    assert response.status_code == 200 and response.streaming
    assert b"".join(response.streaming_content) == body
    assert response["Content-Length"] == str(len(body))


def test_names_cannot_leave_their_area(bucket):
    from annotation.storage import StoredFileMissing

    assert not stored_file_exists("exports", "../uploads/x")
    with pytest.raises(StoredFileMissing):
        stored_file_open("exports", "../uploads/x")
    assert list(stored_files_under("exports")) == []


def test_s3_settings_come_from_the_environment_and_the_store_may_serve_clips():
    code = ("from django.conf import settings as s; import django; django.setup(); "
            "print(s.STORAGES['media']['BACKEND'], s.STORAGES['media']['OPTIONS']['location'], s.AWS_QUERYSTRING_EXPIRE, "
            "s.AWS_S3_ADDRESSING_STYLE, ' '.join(s.CONTENT_SECURITY_POLICY['DIRECTIVES']['media-src']))")
    env = os.environ | {"DJANGO_SETTINGS_MODULE": "config.settings", "SECRET_KEY": "x", "REJUDGE_STORAGE": "s3",
                        "AWS_STORAGE_BUCKET_NAME": "b", "AWS_S3_ENDPOINT_URL": "http://store.internal:9000/",
                        "REJUDGE_SIGNED_URL_SECONDS": "120", "REJUDGE_S3_PREFIX": "rejudge",
                        "REJUDGE_CSP_MEDIA_SRC": "https://cdn.example"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    backend, location, expiry, style, media_src = out.stdout.strip().split(" ", 4)
    assert backend.endswith("S3AreaStorage") and location == "rejudge/media" and expiry == "120" and style == "path"
    assert media_src.split() == ["'self'", "https://cdn.example", "http://store.internal:9000"]
    refused = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                             env=env | {"AWS_STORAGE_BUCKET_NAME": ""})
    assert refused.returncode != 0 and "AWS_STORAGE_BUCKET_NAME" in refused.stderr


def test_local_storage_stays_the_default_with_todays_folders(settings, tmp_path):
    assert area_is_local("uploads") and area_is_local("media")
    with stored_file_write("exports", "pools/pool-1/z.csv") as out:
        out.write(b"z")
    assert (Path(settings.EXPORT_ROOT) / "pools/pool-1/z.csv").read_bytes() == b"z"
