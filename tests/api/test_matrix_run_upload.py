"""REST upload of score-matrix runs (.npz) and of max_depth ("all" or N): through the import job and
the same service as the CLI; a refused matrix fails the job with the array named and keeps nothing."""
from __future__ import annotations

import io

import numpy as np
import pytest

from annotation.models import Caption, Clip, Dataset, Prediction, Run
from annotation.selectors.reports import run_rankings

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def runs_root(settings, tmp_path):
    settings.RUNS_ROOT = tmp_path / "runs"
    return settings.RUNS_ROOT


@pytest.fixture
def dataset():
    ds = Dataset.objects.create(name="up")
    clips = [Clip.objects.create(dataset=ds, external_id=f"v{i}", video_id=f"v{i}") for i in range(1, 5)]
    for i in range(1, 4):
        Caption.objects.create(dataset=ds, external_id=f"q{i}", text=f"caption {i}", original_clip=clips[i - 1])
    return ds


def npz_upload(name: str, scores, captions=("q1", "q2", "q3"), clips=("v1", "v2", "v3", "v4")) -> io.BytesIO:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, scores=np.asarray(scores, dtype=np.float32), caption_ids=np.array(captions),
                        clip_ids=np.array(clips))
    buffer.seek(0)
    buffer.name = name
    return buffer


# Rows q1..q3, columns v1..v4; q1's v2 and v4 tie, and trec_eval's rule (ties by clip id
# descending) puts v4 first: q1 -> v4, v2, v3, v1; q2 -> v3, v2, v1, v4; q3 -> v1, v2, v3, v4.
SCORES = [[0.2, 0.9, 0.5, 0.9], [0.3, 0.4, 0.5, 0.1], [4.0, 3.0, 2.0, 1.0]]


def named(name: str, content: bytes) -> io.BytesIO:
    buffer = io.BytesIO(content)
    buffer.name = name
    return buffer


def post(client, dataset, data):
    return client.post(f"/api/v1/datasets/{dataset.pk}/runs/import/", data, format="multipart")


def test_admin_uploads_a_score_matrix(as_role, run_jobs, dataset, runs_root):
    admin = as_role("admin")
    with run_jobs():
        response = post(admin, dataset, {"file": npz_upload("model.npz", SCORES)})
    assert response.status_code == 202
    job = admin.get(response["Location"]).json()
    assert job["status"] == "succeeded", job
    r = job["result"]
    assert (r["name"], r["depth"], r["predictions"], r["captions"], r["format"]) == ("model", 4, 12, 3, "npz")
    run = Run.objects.get()
    assert Prediction.objects.count() == 0 and (runs_root / run.scores_file).is_file()
    caption = dict(Caption.objects.values_list("pk", "external_id"))
    clip = dict(Clip.objects.values_list("pk", "external_id"))
    assert {caption[q]: [clip[v] for v in vs] for q, vs in run_rankings(run=run, depth=4).items()} == {
        "q1": ["v4", "v2", "v3", "v1"], "q2": ["v3", "v2", "v1", "v4"], "q3": ["v1", "v2", "v3", "v4"]}
    listed = admin.get(f"/api/v1/datasets/{dataset.pk}/runs/").json()["results"]
    assert [(x["name"], x["source_format"], x["prediction_count"]) for x in listed] == [("model", "npz", 12)]


def test_max_depth_cuts_an_uploaded_matrix_and_all_keeps_it(as_role, run_jobs, dataset):
    admin = as_role("admin")
    with run_jobs():
        post(admin, dataset, {"file": npz_upload("cut.npz", SCORES), "max_depth": "2", "format": "npz"})
        post(admin, dataset, {"file": npz_upload("full.npz", np.asarray(SCORES) * 2), "max_depth": "all"})
    assert dict(Run.objects.values_list("name", "depth")) == {"cut": 2, "full": 4}


def test_a_trec_run_deeper_than_the_default_is_kept_with_max_depth_all(as_role, run_jobs, settings, dataset):
    settings.REJUDGE = settings.REJUDGE | {"MAX_RUN_DEPTH": 2}
    admin = as_role("admin")
    content = b"q1 Q0 v1 1 0.9 deep\nq1 Q0 v2 2 0.8 deep\nq1 Q0 v3 3 0.7 deep\n"
    with run_jobs():
        refused = post(admin, dataset, {"file": named("a.trec", content)})
    job = admin.get(refused["Location"]).json()
    assert job["status"] == "failed"
    assert (job["errors"][0]["line"], job["errors"][0]["field"]) == (3, "rank")
    assert "--max-depth all" in job["errors"][0]["message"] and "max_depth" in job["errors"][0]["message"]
    with run_jobs():
        post(admin, dataset, {"file": named("b.trec", content), "max_depth": "all", "name": "b"})
    assert Run.objects.get().depth == 3


def test_a_refused_matrix_fails_the_job_naming_the_array(as_role, run_jobs, dataset, runs_root):
    admin = as_role("admin")
    bad = [row[:] for row in SCORES]
    bad[0][1] = float("nan")
    with run_jobs():
        response = post(admin, dataset, {"file": npz_upload("bad.npz", bad)})
    job = admin.get(response["Location"]).json()
    assert job["status"] == "failed"
    error = job["errors"][0]
    assert (error["file"], error["line"], error["field"]) == ("bad.npz", None, "scores[0, 1]")
    assert "caption 'q1' and clip 'v2'" in error["message"]
    assert Run.objects.count() == 0 and not any(p.is_file() for p in runs_root.rglob("*"))


@pytest.mark.parametrize("value", ["deep", "-1", "1.5", "9" * 5000])
def test_max_depth_must_be_a_whole_number_or_all(as_role, dataset, value):
    response = post(as_role("admin"), dataset, {"file": npz_upload("m.npz", SCORES), "max_depth": value})
    assert response.status_code == 400
    assert response.json()["max_depth"] == ["a positive whole number, or 'all' (or 0) to keep full rankings"]
    assert Run.objects.count() == 0


def test_a_blank_max_depth_in_a_form_means_the_default(as_role, run_jobs, dataset):
    with run_jobs():
        post(as_role("admin"), dataset, {"file": npz_upload("m.npz", SCORES), "max_depth": ""})
    assert Run.objects.get().depth == 4
