"""Two admins make a release of one name at the same moment (PostgreSQL, two connections): each
gets its own version number, the later one's changes.json is against the earlier one."""
from __future__ import annotations

import io
import json
import threading
import zipfile

import pytest
from django.db import connections

from annotation.models import Pool, Release
from annotation.services.exports.labels import EXPORTS
from annotation.services.releases.create import release_create
from annotation.storage import stored_file_chunks
from tests.annotation.services.reports.test_report_metrics import example_pool

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_concurrent_creates_get_consecutive_versions(require_postgres, tmp_path):
    pool_id = example_pool(tmp_path).pk
    start = threading.Barrier(3)
    made, errors = [], []

    def create() -> None:
        try:
            start.wait(timeout=60)
            made.append(release_create(allow_unresolved=True, pools=[Pool.objects.get(pk=pool_id)], name="example-fire").version)
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(repr(exc))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=create) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert not errors and sorted(made) == [1, 2, 3]
    releases = list(Release.objects.filter(name="example-fire").order_by("version"))
    assert [r.version for r in releases] == [1, 2, 3]
    assert len({r.archive for r in releases}) == 3
    for previous, release in zip(releases, releases[1:]):
        data = b"".join(stored_file_chunks(EXPORTS, release.archive))
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            changes = json.loads(archive.read(f"{release.folder}/changes.json"))
        assert changes["from"] == previous.slug and changes["counts"] == {"added": 0, "changed": 0, "removed": 0}
