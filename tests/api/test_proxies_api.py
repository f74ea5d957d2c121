"""REST API of proxy matrices (compute as a job, list, download), graded nDCG of a run and the
proxy statistics report, and who is refused where."""
from __future__ import annotations

import io

import numpy as np
import pytest

from annotation.models import Artefact, Job, Report
from annotation.services.proxies.matrices import proxy_matrices_compute
from tests.annotation.services.proxies.test_proxy_matrices import TINY_RUN, make_run, tiny  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


def finished(resp) -> Job:
    assert resp.status_code == 202, resp.content
    job = Job.objects.get(pk=resp.json()["id"])
    assert job.status == Job.Status.SUCCEEDED, job.message
    return job


def test_compute_list_and_download(as_role, run_jobs, tiny):  # noqa: F811
    admin = as_role("admin")
    with run_jobs():
        resp = admin.post(f"/api/v1/datasets/{tiny.pk}/proxies/", {"proxy": "bow", "mode": "paper"}, format="json")
    job = finished(resp)
    (made,) = job.result["artefacts"]
    listed = as_role("researcher").get(f"/api/v1/datasets/{tiny.pk}/proxies/").json()
    assert [m["id"] for m in listed] == [made["id"]]
    m = listed[0]
    assert (m["proxy"], m["mode"], m["synsets"], m["min_fraction"]) == ("bow", "paper", None, 0.25)
    assert m["params"]["pipeline"]["tokenisation"].startswith("caption.split")
    download = as_role("researcher").get(m["download_url"])
    assert download.status_code == 200 and m["name"] in download["Content-Disposition"]
    with np.load(io.BytesIO(b"".join(download.streaming_content))) as data:
        assert data["relevance"].shape == (3, 3)
        assert data["caption_external_ids"].tolist() == ["q1", "q2", "q3"]
        # paper BoW: {The, dog, runs} vs {dog, sleeps} -> 1/4
        assert float(data["relevance"][0, 1]) == pytest.approx(0.25)


def test_bad_matrix_requests(as_role, tiny):  # noqa: F811
    admin = as_role("admin")
    assert admin.post(f"/api/v1/datasets/{tiny.pk}/proxies/", {"proxy": "nope"}, format="json").status_code == 400
    assert admin.post(f"/api/v1/datasets/{tiny.pk}/proxies/", {"proxy": "bow", "synsets": "x"},
                      format="json").status_code == 400
    assert admin.post("/api/v1/datasets/999999/proxies/", {"proxy": "bow"}, format="json").status_code == 404
    assert as_role("admin").get("/api/v1/proxy-matrices/999999/download/").status_code == 404
    assert Job.objects.count() == 0


def test_ndcg_of_a_run(as_role, run_jobs, tiny):  # noqa: F811
    (matrix,) = proxy_matrices_compute(dataset=tiny, proxies=["bow"])
    run = make_run(tiny, TINY_RUN)
    admin = as_role("admin")
    with run_jobs():
        resp = admin.post(f"/api/v1/runs/{run.pk}/proxy-ndcg/", {"matrix": matrix.pk, "gain": "exponential"},
                          format="json")
    job = finished(resp)
    report = Report.objects.get(pk=job.result["report_id"])
    assert report.kind == "proxy_ndcg" and report.params["gain"] == "exponential"
    assert job.result["mean"] == report.result["mean"] and 0 < report.result["mean"] < 1
    assert admin.post(f"/api/v1/runs/{run.pk}/proxy-ndcg/", {"matrix": 999999}, format="json").status_code == 400
    assert admin.post(f"/api/v1/runs/{run.pk}/proxy-ndcg/", {"matrix": matrix.pk, "gain": "cubic"},
                      format="json").status_code == 400


def test_ndcg_of_a_run_with_the_random_baseline(as_role, run_jobs, tiny):  # noqa: F811
    from annotation.services.proxies.matrices import proxy_random_baseline_table

    (matrix,) = proxy_matrices_compute(dataset=tiny, proxies=["bow"])
    run = make_run(tiny, TINY_RUN)
    admin = as_role("admin")
    body = {"matrix": matrix.pk, "random_baseline": True, "draws": 4, "seed": 3}
    with run_jobs():
        resp = admin.post(f"/api/v1/runs/{run.pk}/proxy-ndcg/", body, format="json")
    finished(resp)
    baseline = resp.json()["random_baseline"]
    # The CLI's table through the same service: seeded, so the same draws give the same numbers.
    assert baseline == proxy_random_baseline_table(dataset=tiny, artefacts=[matrix], draws=4, seed=3)
    (row,) = baseline["proxies"]
    assert row["matrix"] == matrix.pk and row["min"] <= row["mean"] <= row["max"]
    assert baseline["conventions"]["draws"] == 4 and baseline["conventions"]["seed"] == 3
    with run_jobs():
        plain = admin.post(f"/api/v1/runs/{run.pk}/proxy-ndcg/", {"matrix": matrix.pk}, format="json")
    assert "random_baseline" not in plain.json()
    assert admin.post(f"/api/v1/runs/{run.pk}/proxy-ndcg/", {**body, "draws": 0}, format="json").status_code == 400


def test_proxy_analysis(as_role, run_jobs, tiny):  # noqa: F811
    (modern,) = proxy_matrices_compute(dataset=tiny, proxies=["bow"], mode="modern")
    (paper,) = proxy_matrices_compute(dataset=tiny, proxies=["bow"], mode="paper")
    admin = as_role("admin")
    with run_jobs():
        resp = admin.post(f"/api/v1/datasets/{tiny.pk}/proxy-analysis/",
                          {"matrices": [paper.pk, modern.pk], "thresholds": [1.0, 0.3]}, format="json")
    job = finished(resp)
    report = Report.objects.get(pk=job.result["report_id"])
    assert report.result["thresholds"] == [0.3, 1.0]
    assert report.result["relevant_captions_per_clip"]["bow/paper"] == pytest.approx([5 / 3, 1])
    assert report.result["pearson"][0]["a"] == "bow/paper"  # the order asked for
    resp = admin.post(f"/api/v1/datasets/{tiny.pk}/proxy-analysis/", {"matrices": [999999]}, format="json")
    assert resp.status_code == 400 and "matrices" in resp.json()


# --- who may call what -------------------------------------------------------------------------

@pytest.fixture
def targets(tiny):  # noqa: F811
    (matrix,) = proxy_matrices_compute(dataset=tiny, proxies=["bow"])
    return {"dataset": tiny.pk, "matrix": matrix.pk, "run": make_run(tiny, TINY_RUN).pk}


ADMIN_ONLY = [
    ("post", "/api/v1/datasets/{dataset}/proxies/", {"proxy": "bow"}),
    ("post", "/api/v1/runs/{run}/proxy-ndcg/", {"matrix": 0}),
    ("post", "/api/v1/datasets/{dataset}/proxy-analysis/", {"matrices": [0]}),
]
READABLE = [
    ("get", "/api/v1/datasets/{dataset}/proxies/"),
    ("get", "/api/v1/proxy-matrices/{matrix}/download/"),
]


@pytest.mark.parametrize("method,url,body", ADMIN_ONLY)
@pytest.mark.parametrize("role", [None, "rater", "researcher"])
def test_admin_only_endpoints(as_role, targets, role, method, url, body):
    resp = getattr(as_role(role), method)(url.format(**targets), body, format="json")
    assert resp.status_code in ((401, 403) if role is None else (403,))
    assert Job.objects.count() == 0


@pytest.mark.parametrize("method,url", READABLE)
def test_readable_by_admins_and_researchers_only(as_role, targets, method, url):
    for role, allowed in (("admin", True), ("researcher", True), ("rater", False), (None, False)):
        resp = getattr(as_role(role), method)(url.format(**targets))
        assert (resp.status_code == 200) == allowed, (role, resp.status_code)
    assert Artefact.objects.count() == 1


def test_syn_over_rest_takes_the_modes_synset_source_unless_one_is_named(as_role, run_jobs, tiny):  # noqa: F811
    """The API once defaulted synsets to wordnet, so paper mode could never pick the paper's
    source; now an omitted value means the mode's choice, recorded with its reason."""
    admin = as_role("admin")
    with run_jobs():
        resp = admin.post(f"/api/v1/datasets/{tiny.pk}/proxies/", {"proxy": "syn", "mode": "paper"}, format="json")
    (made,) = finished(resp).result["artefacts"]
    params = Artefact.objects.get(pk=made["id"]).params
    assert params["synsets"] == "wordnet" and params["synsets_reason"].startswith("paper mode on a dataset that is not")
    with run_jobs():
        resp = admin.post(f"/api/v1/datasets/{tiny.pk}/proxies/", {"proxy": "syn", "mode": "modern", "synsets": "wordnet"},
                          format="json")
    (made,) = finished(resp).result["artefacts"]
    assert Artefact.objects.get(pk=made["id"]).params["synsets_reason"] == "chosen explicitly"
