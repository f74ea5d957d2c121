"""Deleting a dataset, a pool or a judgment set (services/deletes.py, annotation/bulk_delete.py):
jobs that delete in set-based statements, on PostgreSQL and SQLite alike.

The oracle is the order the test made things in, not the platform's own code: a second dataset
(its pool, labels, judgment set, files) is made first and every row of every table is listed; the
one to delete is made after it. Once deleted, every table holds exactly the first listing again
(accounts and jobs aside, which belong to no dataset), and the files the deleted rows named are
gone while the other dataset's stay.
"""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.apps import apps
from django.db import DatabaseError
from django.db.models import QuerySet
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.models import (Artefact, Dataset, ImportedJudgment, Job, JudgmentSet, Label, Lease, Pool, PooledPair,
                               Release, Report, Run)
from annotation.services.datasets.operations import DATASET_DELETE
from annotation.services.datasets.runs import RUNS
from annotation.services.deletes import DeleteRefused, delete_counts, delete_start
from annotation.services.judgment_sets.operations import DELETE as JUDGMENT_SET_DELETE
from annotation.services.judgment_sets.storage import JUDGMENTS, judgment_file_store
from annotation.services.operations.run import operation_job_run
from annotation.services.pools.operations import POOL_DELETE
from annotation.storage import stored_file_exists, stored_file_write
from tests.factories import make_pool_with_runs, make_rater, make_user, unique

pytestmark = pytest.mark.django_db

#: Rows that belong to no dataset: accounts, and the jobs (the delete's own among them).
NOT_OF_A_DATASET = {"auth.User", "annotation.Job", "annotation.JobAttempt", "annotation.RaterProfile",
                    "annotation.RaterInvitation"}


def _write(area: str, name: str, data: bytes = b"x") -> str:
    with stored_file_write(area, name) as out:
        out.write(data)
    return name


def _world(tmp_path, tag: str) -> dict:
    """A dataset with runs (one of them a stored score matrix), a pool with leases, labels and a
    report with its file, and a judgment set with its file and verdicts; returns its rows' files."""
    pool, runs = make_pool_with_runs()
    dataset = pool.dataset
    rater = make_rater()
    pairs = list(PooledPair.objects.filter(pool=pool).order_by("pk")[:2])
    for pair in pairs:
        lease = Lease.objects.create(pair=pair, rater=rater, expires_at=timezone.now() + timedelta(minutes=5))
        Label.objects.create(pair=pair, rater=rater, value="relevant", client_id=unique("c"), lease=lease)
    source = tmp_path / f"{tag}.qrels"
    source.write_text("q1 0 v1 1\n")
    checksum = unique("j").ljust(64, "0")[:64]
    judgments = JudgmentSet.objects.create(dataset=dataset, name="published", source_format="qrels", checksum=checksum,
                                           stored_file=judgment_file_store(dataset_id=dataset.pk, checksum=checksum,
                                                                           source=source, name="avs.qrels"))
    pair = pairs[0]
    ImportedJudgment.objects.create(judgment_set=judgments, dataset=dataset, caption_id=pair.caption_id,
                                    clip_id=pair.clip_id, label="relevant")
    prepared = _write("media", f"prepared/{dataset.pk}/v1-{tag}.mp4")  # services/media/prepare.py's copies
    matrix = _write(RUNS, f"ab/{tag}.npz")
    Run.objects.create(dataset=dataset, name="matrix", checksum=unique("m"), scores_file=matrix)
    report = Report.objects.create(kind="agreement", dataset=dataset, pool=pool)
    artefact = _write("exports", f"reports/{tag}/chart.svg")
    Artefact.objects.create(report=report, dataset=dataset, kind="chart", name="chart.svg", path=artefact)
    return {"dataset": dataset, "pool": pool, "runs": runs, "judgment_set": judgments,
            "files": {(JUDGMENTS, judgments.stored_file), (RUNS, matrix), ("exports", artefact), ("media", prepared)}}


def _every_row() -> dict[str, set[int]]:
    """Every table's primary keys (the app's models and the accounts')."""
    return {model._meta.label: set(model._base_manager.values_list("pk", flat=True))
            for model in apps.get_models() if model._meta.app_label in ("annotation", "auth")
            and model._meta.label not in NOT_OF_A_DATASET}


def _files_there(files) -> set:
    return {(area, name) for area, name in files if stored_file_exists(area, name)}


def _run(job: Job) -> Job:
    return operation_job_run(job_id=job.pk)


@pytest.fixture
def two_datasets(tmp_path):
    kept = _world(tmp_path, "kept")
    before = _every_row()
    doomed = _world(tmp_path, "doomed")
    return kept, before, doomed


def test_deleting_a_dataset_leaves_every_table_as_it_was_before_it_and_its_files_go(
        two_datasets, django_capture_on_commit_callbacks):
    kept, before, doomed = two_datasets
    admin = make_user("admin")
    job, created = delete_start(DATASET_DELETE, target=doomed["dataset"], created_by=admin)
    assert created and job.status == Job.Status.QUEUED
    assert Dataset.objects.filter(pk=doomed["dataset"].pk).exists()  # gone once the job has run
    with django_capture_on_commit_callbacks(execute=True):
        job = _run(job)
    assert job.status == Job.Status.SUCCEEDED, job.message
    after = _every_row()
    assert {label: len(pks) for label, pks in after.items()} == {label: len(pks) for label, pks in before.items()}
    assert after == before
    # The rows it deleted, as the result reports them (the doomed world's own, counted by hand).
    deleted = job.result["deleted"]
    assert deleted["annotation.Dataset"] == 1 and deleted["annotation.Pool"] == 1
    assert deleted["annotation.Clip"] == 6 and deleted["annotation.Caption"] == 4
    assert deleted["annotation.Run"] == 3 and deleted["annotation.Prediction"] == 2 * 4 * 3
    assert deleted["annotation.Label"] == 2 and deleted["annotation.Lease"] == 2
    assert deleted["annotation.ImportedJudgment"] == 1 and deleted["annotation.Artefact"] == 1
    assert job.result["files"] == 3
    assert _files_there(doomed["files"]) == set()
    assert _files_there(kept["files"]) == kept["files"]


def test_a_failure_part_way_leaves_every_row_and_every_file(two_datasets, monkeypatch,
                                                            django_capture_on_commit_callbacks):
    kept, before, doomed = two_datasets
    everything = _every_row()
    calls = []
    real = QuerySet._raw_delete

    def failing(self, using):
        calls.append(self.model)
        if self.model._meta.label == "annotation.Clip":  # after the pairs, labels and predictions went
            raise DatabaseError("the database went away")
        return real(self, using)

    monkeypatch.setattr(QuerySet, "_raw_delete", failing)
    job, _ = delete_start(DATASET_DELETE, target=doomed["dataset"], created_by=make_user("admin"))
    with django_capture_on_commit_callbacks(execute=True):
        job = _run(job)
    assert job.status == Job.Status.FAILED and "went away" in job.message
    assert len({m._meta.label for m in calls}) > 10  # it had deleted a good part already
    assert _every_row() == everything
    assert _files_there(doomed["files"]) == doomed["files"]


def test_deleting_a_pool_keeps_its_dataset_and_the_sets_that_name_it(two_datasets,
                                                                      django_capture_on_commit_callbacks):
    kept, before, doomed = two_datasets
    pool = doomed["pool"]
    from_pool = JudgmentSet.objects.create(dataset=pool.dataset, name="from the pool", source_format="pool",
                                           checksum="p" * 64, pool=pool)
    job, _ = delete_start(POOL_DELETE, target=pool, created_by=make_user("admin"))
    with django_capture_on_commit_callbacks(execute=True):
        job = _run(job)
    assert job.status == Job.Status.SUCCEEDED, job.message
    assert not Pool.objects.filter(pk=pool.pk).exists()
    assert not PooledPair.objects.filter(pool_id=pool.pk).exists() and not Report.objects.filter(pool_id=pool.pk).exists()
    assert not Label.objects.filter(pair__pool_id=pool.pk).exists()
    from_pool.refresh_from_db()
    assert from_pool.pool_id is None
    assert Run.objects.filter(dataset=pool.dataset).count() == 3
    assert Dataset.objects.filter(pk=pool.dataset_id).exists()
    assert job.result["deleted"]["annotation.JudgmentSet.pool set null"] == 1
    # Its report's file went; the dataset's judgment set and runs keep theirs.
    assert _files_there(doomed["files"]) == doomed["files"] - {f for f in doomed["files"] if f[0] == "exports"}
    assert Pool.objects.filter(pk=kept["pool"].pk).exists()


def test_deleting_a_judgment_set_removes_its_verdicts_and_its_file(two_datasets, django_capture_on_commit_callbacks):
    kept, before, doomed = two_datasets
    judgments = doomed["judgment_set"]
    job, _ = delete_start(JUDGMENT_SET_DELETE, target=judgments, created_by=make_user("admin"))
    with django_capture_on_commit_callbacks(execute=True):
        job = _run(job)
    assert job.status == Job.Status.SUCCEEDED, job.message
    assert job.result["deleted"] == {"annotation.JudgmentSet": 1, "annotation.ImportedJudgment": 1}
    assert not stored_file_exists(JUDGMENTS, judgments.stored_file)
    assert stored_file_exists(JUDGMENTS, kept["judgment_set"].stored_file)
    assert ImportedJudgment.objects.filter(judgment_set=kept["judgment_set"]).count() == 1


def test_a_score_matrix_file_another_dataset_still_reads_stays(two_datasets, django_capture_on_commit_callbacks):
    kept, before, doomed = two_datasets
    shared = Run.objects.get(dataset=doomed["dataset"], name="matrix").scores_file
    Run.objects.create(dataset=kept["dataset"], name="same matrix", checksum="s" * 64, scores_file=shared)
    job, _ = delete_start(DATASET_DELETE, target=doomed["dataset"], created_by=make_user("admin"))
    with django_capture_on_commit_callbacks(execute=True):
        _run(job)
    assert stored_file_exists(RUNS, shared)


def test_a_delete_sent_again_gets_the_first_job_and_one_run_after_it_deletes_nothing(
        two_datasets, django_capture_on_commit_callbacks):
    kept, before, doomed = two_datasets
    admin = make_user("admin")
    first, created = delete_start(DATASET_DELETE, target=doomed["dataset"], created_by=admin)
    again, created_again = delete_start(DATASET_DELETE, target=doomed["dataset"], created_by=admin)
    assert created and not created_again and again.pk == first.pk
    with django_capture_on_commit_callbacks(execute=True):
        _run(first)
    # A second job for the same row (as an admin's retry of a copy would run) finds it gone.
    second = Job.objects.create(kind="delete_dataset", operation="delete_dataset",
                                params={"dataset_id": doomed["dataset"].pk})
    second = _run(second)
    assert second.status == Job.Status.SUCCEEDED
    assert second.result["existed"] is False and second.result["deleted"] == {}
    assert _every_row() == before


def test_a_dataset_a_release_refers_to_is_refused_and_nothing_goes(two_datasets):
    kept, before, doomed = two_datasets
    Release.objects.create(name="kept-for-good", version=1, dataset=doomed["dataset"], archive="r.zip",
                           pairs_file="r.pairs", bytes=1, sha256="0" * 64, created_at=timezone.now())
    with pytest.raises(DeleteRefused, match="1 release"):
        delete_start(DATASET_DELETE, target=doomed["dataset"], created_by=make_user("admin"))
    assert not Job.objects.filter(operation="delete_dataset").exists()
    # A release made after the start (the job's own check, under its locks) fails the job instead.
    Release.objects.all().delete()
    job, _ = delete_start(DATASET_DELETE, target=doomed["dataset"], created_by=make_user("admin"))
    Release.objects.create(name="kept-for-good", version=1, dataset=doomed["dataset"], archive="r.zip",
                           pairs_file="r.pairs", bytes=1, sha256="0" * 64, created_at=timezone.now())
    job = _run(job)
    assert job.status == Job.Status.FAILED and "release" in job.message
    assert Dataset.objects.filter(pk=doomed["dataset"].pk).exists()


def test_the_counts_a_delete_would_delete(two_datasets):
    kept, before, doomed = two_datasets
    counts = delete_counts(Dataset.objects.filter(pk=doomed["dataset"].pk))
    assert counts["datasets"] == 1 and counts["clips"] == 6 and counts["predictions"] == 24
    assert counts["labels"] == 2 and counts["imported judgments"] == 1


# --- the doors: API, Django's admin --------------------------------------------------------------

def _client(user) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


@pytest.mark.parametrize("kind", ["dataset", "pool", "judgment_set"])
def test_only_admins_may_delete_and_the_answer_is_202_with_the_job(kind, tmp_path):
    world = _world(tmp_path, kind)
    target = world[kind]
    url = {"dataset": f"/api/v1/datasets/{target.pk}/", "pool": f"/api/v1/pools/{target.pk}/",
           "judgment_set": f"/api/v1/judgment-sets/{target.pk}/"}[kind]
    for someone in (None, make_user("researcher"), make_rater()):
        response = _client(someone).delete(url)
        assert response.status_code in (401, 403), (someone, response.status_code)
    assert not Job.objects.exists()
    admin = _client(make_user("admin"))
    response = admin.delete(url, HTTP_IDEMPOTENCY_KEY="k-1")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["kind"] == f"delete_{kind}" and body["status"] == "queued"
    assert response["Location"] == body["status_url"] == f"/api/v1/jobs/{body['id']}/"
    # Sent again, with or without its key: the same job, 200.
    for headers in ({"HTTP_IDEMPOTENCY_KEY": "k-1"}, {}):
        again = admin.delete(url, **headers)
        assert again.status_code == 200 and again.json()["id"] == body["id"]
    assert Job.objects.count() == 1
    _run(Job.objects.get(pk=body["id"]))
    assert not type(target).objects.filter(pk=target.pk).exists()
    assert admin.delete(url).status_code == 404


def test_the_api_answers_409_for_a_dataset_a_release_refers_to(tmp_path):
    world = _world(tmp_path, "released")
    Release.objects.create(name="kept", version=1, dataset=world["dataset"], archive="r.zip", pairs_file="r.pairs",
                           bytes=1, sha256="0" * 64, created_at=timezone.now())
    response = _client(make_user("admin")).delete(f"/api/v1/datasets/{world['dataset'].pk}/")
    assert response.status_code == 409 and "release" in response.json()["detail"]


def test_the_django_admin_deletes_through_the_job_and_counts_on_its_confirmation_page(client, tmp_path):
    world = _world(tmp_path, "admin")
    dataset = world["dataset"]
    client.force_login(make_user("admin"))
    page = client.get(f"/admin/annotation/dataset/{dataset.pk}/delete/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "Predictions: 24" in text and "Clips: 6" in text
    response = client.post(f"/admin/annotation/dataset/{dataset.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    job = Job.objects.get(operation="delete_dataset")
    assert job.params == {"dataset_id": dataset.pk}
    _run(job)
    assert not Dataset.objects.filter(pk=dataset.pk).exists()


# --- a writer meanwhile (PostgreSQL: the per-row reference checks are off for the deletes) --------

@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_row_written_meanwhile_that_refers_to_doomed_rows_waits_and_is_refused(tmp_path, require_postgres):
    """The doomed rows are locked before any goes, so a transaction adding a prediction for the
    dataset's run and clip once its predictions are gone (but the run and clip not yet) waits for
    the delete and is refused, as PostgreSQL's own reference check would have made it: no
    prediction is left pointing at a deleted clip."""
    import threading
    import time

    from django.db import IntegrityError, connection, transaction

    from annotation.models import Clip, Prediction
    from annotation.services.deletes import rows_delete

    world = _world(tmp_path, "meanwhile")
    dataset, run = world["dataset"], world["runs"][0]
    clip, caption = Clip.objects.filter(dataset=dataset).first(), run.predictions.first().caption
    predictions_gone, writing, outcome = threading.Event(), threading.Event(), []

    def writer():
        try:
            predictions_gone.wait(60)
            with transaction.atomic():
                Prediction.objects.create(run_id=run.pk, caption_id=caption.pk, clip_id=clip.pk, rank=999)
                writing.set()  # the reference checks run as the block commits
            outcome.append("committed")
        except IntegrityError:
            outcome.append("refused")
        finally:
            writing.set()
            connection.close()

    seen = []

    def progress(done, total, message):
        if seen and seen[-1] == "deleting predictions" and message != seen[-1] and not predictions_gone.is_set():
            predictions_gone.set()
            writing.wait(30)
            time.sleep(0.5)  # long enough for the writer to reach its commit and wait there
        seen.append(message)

    thread = threading.Thread(target=writer)
    thread.start()
    with transaction.atomic():
        rows_delete(Dataset.objects.filter(pk=dataset.pk), progress=progress)
    thread.join(60)
    assert predictions_gone.is_set() and outcome == ["refused"]
    assert not Prediction.objects.filter(clip_id=clip.pk).exists()
    assert not Dataset.objects.filter(pk=dataset.pk).exists()


@pytest.mark.parametrize("root", [Dataset, Pool, JudgmentSet])
def test_every_stored_file_a_deleted_row_may_name_is_listed_for_removal(root):
    """A model that keeps a file's name (its help text says where: a *_ROOT or a storage area) and
    that a delete reaches is in services/deletes.py STORED_FILES, or its file would outlive it."""
    import re

    from django.db.models import CharField

    from annotation.services.deletes import STORED_FILES, plan_for

    plan = plan_for(root)
    naming = {(m, f.name) for m in plan.order for f in m._meta.concrete_fields
              if isinstance(f, CharField) and re.search(r"_ROOT|storage area|exports area", str(f.help_text))}
    assert naming <= {(m, field) for m, (field, _) in STORED_FILES.items()}
    if root is Dataset:
        assert {m for m, _ in naming} == set(STORED_FILES)
