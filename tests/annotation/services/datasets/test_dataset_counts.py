"""Clip, caption and original-positive counts stored on each dataset: right after an import, kept
by the Django admin, back-filled by migration 0004, and read by the listings without counting
clips or captions, so a listing issues the same queries whatever the datasets' sizes."""
from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Caption, Clip, Dataset, Pool, Run
from annotation.services.datasets.imports import dataset_import
from annotation.services.datasets.counts import dataset_counts_add, dataset_counts_refresh
from annotation.formats.errors import ImportRejected
from tests.factories import make_dataset, make_user

pytestmark = pytest.mark.django_db

# 4 clips; captions: q1 -> c1, q2 names c4 before c4 is defined (resolved at the end), q3 has no
# original clip, q4 -> c1 again. So 4 clips, 4 captions, 3 original positives.
MANIFEST = """\
{"kind": "clip", "id": "c1"}
{"kind": "caption", "id": "q1", "text": "a dog runs", "clip": "c1"}
{"kind": "caption", "id": "q2", "text": "a cat sleeps", "clip": "c4"}
{"kind": "clip", "id": "c2"}
{"kind": "clip", "id": "c3"}
{"kind": "caption", "id": "q3", "text": "a man cooks"}
{"kind": "caption", "id": "q4", "text": "a puppy runs", "clip": "c1"}
{"kind": "clip", "id": "c4"}
"""


def counts(dataset: Dataset) -> tuple[int, int, int]:
    dataset.refresh_from_db()
    return dataset.clip_count, dataset.caption_count, dataset.original_positive_count


def true_counts(dataset: Dataset) -> tuple[int, int, int]:
    return (Clip.objects.filter(dataset=dataset).count(), Caption.objects.filter(dataset=dataset).count(),
            Caption.objects.filter(dataset=dataset, original_clip__isnull=False).count())


@pytest.mark.parametrize("batch_size", [2, 5000])
def test_counts_are_right_after_an_import(tmp_path, settings, batch_size):
    settings.REJUDGE = {**settings.REJUDGE, "IMPORT_BATCH_SIZE": batch_size}  # several flushes, or one
    path = tmp_path / "m.jsonl"
    path.write_text(MANIFEST)
    dataset = dataset_import(path=path, name="small")
    assert (dataset.clip_count, dataset.caption_count, dataset.original_positive_count) == (4, 4, 3)
    assert counts(dataset) == (4, 4, 3) == true_counts(dataset)


def test_counts_of_a_real_benchmark_excerpt(fixtures_dir):
    dataset = dataset_import(path=fixtures_dir / "msrvtt_1ka_excerpt.csv", name="msrvtt")
    assert counts(dataset) == true_counts(dataset)
    assert dataset.clip_count > 0 and dataset.original_positive_count == dataset.caption_count  # MSR-VTT: one each


def test_a_refused_import_leaves_no_dataset_and_no_counts(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(MANIFEST + '{"kind": "caption", "id": "q9", "text": "x", "clip": "nope"}\n')
    with pytest.raises(ImportRejected):
        dataset_import(path=path, name="bad")
    assert not Dataset.objects.exists()


def test_add_and_refresh():
    dataset = make_dataset(clips=5, captions=3)
    assert counts(dataset) == (5, 3, 3)
    dataset_counts_add(dataset=dataset, clips=2, captions=-1, original_positives=-1)
    assert (dataset.clip_count, dataset.caption_count, dataset.original_positive_count) == (7, 2, 2)
    Caption.objects.filter(dataset=dataset, external_id="q1").update(original_clip=None)
    dataset_counts_refresh(datasets=[dataset])
    assert counts(dataset) == (5, 3, 2)


def test_migration_backfills_existing_datasets():
    big, small, empty = make_dataset(clips=7, captions=4), make_dataset(clips=2, captions=1), Dataset.objects.create(name="e")
    Caption.objects.filter(dataset=big, external_id="q4").update(original_clip=None)
    Dataset.objects.update(clip_count=0, caption_count=0, original_positive_count=0)  # as before the migration
    migration = importlib.import_module("annotation.migrations.0004_dataset_counts")
    migration.backfill_dataset_counts(apps, None)
    assert [counts(d) for d in (big, small, empty)] == [(7, 4, 3), (2, 1, 1), (0, 0, 0)]


def test_django_admin_edits_keep_the_counts(client):
    dataset = make_dataset(clips=3, captions=2)  # q1 -> v1, q2 -> v2
    client.force_login(make_user("admin"))
    caption = Caption.objects.get(dataset=dataset, external_id="q2")
    response = client.post(f"/admin/annotation/caption/{caption.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302 and counts(dataset) == (3, 1, 1)
    # Deleting a clip also deletes the captions written for it (on_delete=CASCADE).
    clip = Clip.objects.get(dataset=dataset, external_id="v1")
    response = client.post("/admin/annotation/clip/", {"action": "delete_selected", "_selected_action": [clip.pk],
                                                       "post": "yes"})
    assert response.status_code == 302 and counts(dataset) == (2, 0, 0) == true_counts(dataset)
    response = client.post("/admin/annotation/clip/add/", {"dataset": dataset.pk, "external_id": "v9", "video_id": "v9",
                                                           "media": ""})
    assert response.status_code == 302 and counts(dataset) == (3, 0, 0)


# --- the listings -------------------------------------------------------------------------------

def _grow(dataset: Dataset, clips: int, captions: int) -> None:
    made = Clip.objects.bulk_create([Clip(dataset=dataset, external_id=f"x{i}", video_id=f"x{i}") for i in range(clips)])
    Caption.objects.bulk_create([Caption(dataset=dataset, external_id=f"y{i}", text="t", original_clip=made[i % clips])
                                 for i in range(captions)])
    dataset_counts_add(dataset=dataset, clips=clips, captions=captions, original_positives=captions)


def _reads_clips_or_captions(queries) -> list[str]:
    return [q["sql"] for q in queries if "annotation_clip" in q["sql"] or "annotation_caption" in q["sql"]]


@pytest.fixture
def two_sizes():
    """Listed after one small dataset, then after adding a larger one: same queries both times."""
    small = make_dataset(name="a-small", clips=2, captions=1)
    Run.objects.create(dataset=small, name="r", checksum="r")

    def add_large():
        large = make_dataset(name="b-large", clips=5, captions=3)
        _grow(large, clips=300, captions=400)
        for name in ("r1", "r2"):
            Run.objects.create(dataset=large, name=name, checksum=name)
        Pool.objects.create(dataset=large, name="p")
        return large

    return small, add_large


def test_dataset_api_listing_queries_do_not_grow_with_size(client, two_sizes):
    small, add_large = two_sizes
    client.force_login(make_user("researcher"))
    with CaptureQueriesContext(connection) as one:
        first = client.get("/api/v1/datasets/").json()
    add_large()
    with CaptureQueriesContext(connection) as two:
        second = client.get("/api/v1/datasets/").json()
    assert len(one) == len(two) and not _reads_clips_or_captions(two.captured_queries)
    assert [(d["name"], d["clip_count"], d["caption_count"], d["original_positive_count"]) for d in first["results"]] \
        == [("a-small", 2, 1, 1)]
    assert [(d["name"], d["clip_count"], d["caption_count"], d["original_positive_count"]) for d in second["results"]] \
        == [("a-small", 2, 1, 1), ("b-large", 305, 403, 403)]
    detail = client.get(f"/api/v1/datasets/{small.pk}/").json()
    assert (detail["clip_count"], detail["caption_count"]) == (2, 1)


@pytest.mark.parametrize("url, role", [("/admin-ui/", "admin"), ("/", "admin"), ("/", "researcher")])
def test_overview_pages_queries_do_not_grow_with_size(client, two_sizes, url, role):
    _, add_large = two_sizes
    client.force_login(make_user(role))
    with CaptureQueriesContext(connection) as one:
        assert client.get(url).status_code == 200
    add_large()
    with CaptureQueriesContext(connection) as two:
        page = client.get(url).content.decode()
    assert len(one) == len(two) and not _reads_clips_or_captions(two.captured_queries)
    assert ">305<" in page and ">403<" in page  # the large dataset's clips and captions


def test_admin_dataset_page_reads_the_stored_counts(client, two_sizes):
    _, add_large = two_sizes
    large = add_large()
    client.force_login(make_user("admin"))
    with CaptureQueriesContext(connection) as queries:
        page = client.get(f"/admin-ui/datasets/{large.pk}/").content.decode()
    assert "305 clips · 403 captions · 403 original positives" in page
    assert not _reads_clips_or_captions(queries.captured_queries)
