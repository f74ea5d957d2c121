"""REST endpoints of moment pools, sampled pools and their reports: jobs with status URLs, reports as
JSON, CSV and an SVG chart, bad input refused with a reason, and only the roles allowed."""
from __future__ import annotations

import csv
import io

import pytest

from annotation.models import Job, MomentPoolDesign, Pool, PooledPair, Report
from annotation.services.pools.moments import moment_pool_create
from annotation.services.reports.kinds.infap import infap_report_create
from annotation.services.reports.kinds.moment_metrics import moment_metrics_report_create
from annotation.services.accounts.raters import memberships_grant
from annotation.services.pools.sampled import sampled_pool_create
from tests.annotation.services.pools.test_moment_pools import moment_run
from tests.annotation.services.pools.test_sampled_pools import clip_run, rankings
from tests.factories import label_pair, make_dataset, make_user, unique

pytestmark = pytest.mark.django_db

STRATA = [[1, 2, 1], [3, 10, 0.5], [11, 20, 0.25]]


def upload(name: str, content: bytes) -> io.BytesIO:
    f = io.BytesIO(content)
    f.name = name
    return f


def label_everything(pool, relevant=lambda pair: pair.clip.external_id in ("v3", "v6", "v9", "v12")) -> None:
    rater = make_user("rater")
    memberships_grant(pool=pool, users=[rater])
    for pair in PooledPair.objects.filter(pool=pool).select_related("clip"):
        label_pair(rater, pair, client_id=unique("c"), value="relevant" if relevant(pair) else "not_relevant")


@pytest.fixture
def moment_setting():
    dataset = make_dataset(clips=3, captions=2)
    a = moment_run(dataset, "A", [("q1", "v1", 0, 10), ("q1", "v2", 3, 4), ("q2", "v2", 0, 5)])
    b = moment_run(dataset, "B", [("q1", "v1", 1, 10), ("q2", "v2", 5, 10)])
    return dataset, a, b


@pytest.fixture
def sampled_setting():
    dataset = make_dataset(clips=30, captions=3)
    runs = [clip_run(dataset, name, rankings(shift)) for name, shift in (("A", 0), ("B", 1), ("C", 2))]
    pool = sampled_pool_create(dataset=dataset, name="deep", runs=runs, strata=STRATA, seed=5, redundancy=0)
    return dataset, runs, pool


# --- moment pools ----------------------------------------------------------------------------

def test_admin_builds_a_moment_pool_and_reads_its_spans(as_role, run_jobs, moment_setting):
    dataset, a, b = moment_setting
    admin = as_role("admin")
    with run_jobs():
        response = admin.post("/api/v1/moment-pools/", {"dataset": dataset.pk, "name": "mp", "runs": [a.pk, b.pk],
                                                         "depth": 10, "iou_threshold": 0.7, "redundancy": 0, "seed": 3},
                              format="json")
    assert response.status_code == 202
    job = admin.get(response["Location"]).json()
    assert job["status"] == "succeeded", job
    pool = Pool.objects.get(pk=job["result"]["pool_id"])
    assert job["result"]["spans"] == 4  # q1: v1 [0, 10] merged with [1, 10], v2 [3, 4]; q2: [0, 5] and [5, 10]
    assert MomentPoolDesign.objects.get(pool=pool).iou_threshold == 0.7 and pool.seed == 3

    design = admin.get(f"/api/v1/pools/{pool.pk}/moment-design/").json()
    assert (design["spans"], design["members"], design["merged_spans"]) == (4, 5, 1)
    spans = admin.get(f"/api/v1/pools/{pool.pk}/moment-spans/?caption=q1").json()["results"]
    merged = next(s for s in spans if s["clip_id"] == "v1")
    assert (merged["start"], merged["end"]) == (0, 10)
    assert [(m["run"], m["rank"], m["start"], m["end"]) for m in merged["members"]] == [("A", 1, 0, 10), ("B", 1, 1, 10)]


@pytest.mark.parametrize("change, message", [
    ({"iou_threshold": 0}, "iou_threshold"),
    ({"runs": "clip-run"}, "not a moment run"),
    ({"runs": [999_999]}, "do not exist"),
])
def test_moment_pool_requests_are_checked_before_a_job_starts(as_role, moment_setting, change, message):
    dataset, a, _ = moment_setting
    body = {"dataset": dataset.pk, "name": "mp", "runs": [a.pk]} | change
    if body["runs"] == "clip-run":
        body["runs"] = [clip_run(dataset, "plain", {"q1": ["v1"]}).pk]
    response = as_role("admin").post("/api/v1/moment-pools/", body, format="json")
    assert response.status_code == 400 and message in response.json()["detail"]
    assert not Job.objects.exists()


@pytest.mark.parametrize("line, problem", [(b"q1 Q0 v1 1 0.9 m 5 5\n", "zero-length"), (b"q1 Q0 v1 1 0.9 m 6 2\n", "inverted")])
def test_moment_runs_with_empty_or_inverted_spans_are_refused_at_upload(as_role, run_jobs, line, problem):
    dataset = make_dataset()
    admin = as_role("admin")
    content = b"q1 Q0 v2 1 0.95 m 0 4\n" + line.replace(b" 1 0.9 ", b" 2 0.9 ")
    with run_jobs():
        response = admin.post(f"/api/v1/datasets/{dataset.pk}/runs/import/", {"file": upload("m.trec", content)},
                              format="multipart")
    job = admin.get(response["Location"]).json()
    assert job["status"] == "failed"
    error = job["errors"][0]
    assert (error["file"], error["line"], error["field"]) == ("m.trec", 2, "end")
    assert problem in error["message"] and "is not after start" in error["message"]
    assert not dataset.runs.exists()


# --- sampled pools ---------------------------------------------------------------------------

def test_admin_builds_a_sampled_pool(as_role, run_jobs):
    dataset = make_dataset(clips=30, captions=3)
    runs = [clip_run(dataset, name, rankings(shift)) for name, shift in (("A", 0), ("B", 1))]
    admin = as_role("admin")
    with run_jobs():
        response = admin.post("/api/v1/sampled-pools/", {"dataset": dataset.pk, "name": "deep", "runs": [r.pk for r in runs],
                                                          "strata": STRATA, "seed": 9}, format="json")
    assert response.status_code == 202
    result = admin.get(response["Location"]).json()["result"]
    pool = Pool.objects.get(pk=result["pool_id"])
    assert result["judgments_saved"] == result["full_pool_size"] - result["sampled"] > 0
    assert PooledPair.objects.filter(pool=pool).count() == result["sampled"]
    design = admin.get(f"/api/v1/pools/{pool.pk}/sampled-design/").json()
    assert [(s["lo"], s["hi"], s["rate"]) for s in design["strata"]] == [(1, 2, 1.0), (3, 10, 0.5), (11, 20, 0.25)]
    assert sum(s["sampled"] for s in design["strata"]) == result["sampled"]
    assert design["strata"][0]["realized_rate"] == 1.0 and design["saved"] == result["judgments_saved"]


@pytest.mark.parametrize("strata, message", [
    ([[1, 10, 1], [20, 30, 0.5]], "contiguous"),
    ([[1, 10, 2]], "rate"),
    ([[1, 5000, 0.1]], "deeper than 1000"),
])
def test_sampled_pool_strata_are_checked(as_role, sampled_setting, strata, message):
    dataset, runs, _ = sampled_setting
    response = as_role("admin").post("/api/v1/sampled-pools/", {"dataset": dataset.pk, "name": "x", "runs": [runs[0].pk],
                                                                 "strata": strata}, format="json")
    assert response.status_code == 400 and message in response.json()["detail"]


def test_strata_need_three_numbers(as_role, sampled_setting):
    dataset, runs, _ = sampled_setting
    response = as_role("admin").post("/api/v1/sampled-pools/", {"dataset": dataset.pk, "name": "x", "runs": [runs[0].pk],
                                                                 "strata": [[1, 10]]}, format="json")
    assert response.status_code == 400 and "strata" in response.json()


# --- reports ---------------------------------------------------------------------------------

def test_infap_report_as_json_csv_and_chart(as_role, run_jobs, sampled_setting):
    _, runs, pool = sampled_setting
    label_everything(pool)
    admin = as_role("admin")
    with run_jobs():
        response = admin.post(f"/api/v1/pools/{pool.pk}/infap/", {}, format="json")
    assert response.status_code == 202
    report_id = admin.get(response["Location"]).json()["result"]["report_id"]
    assert [r["id"] for r in admin.get(f"/api/v1/pools/{pool.pk}/infap/").json()] == [report_id]
    report = admin.get(f"/api/v1/pools/{pool.pk}/infap/{report_id}/").json()
    assert report["kind"] == "infap" and report["result"]["measure"] == "xinfAP"
    means = {row["run"]: row["mean"]["xinfAP"] for row in report["result"]["runs"]}

    listing = admin.get(f"/api/v1/pools/{pool.pk}/infap/{report_id}.csv")
    assert listing["Content-Type"].startswith("text/csv") and "attachment" in listing["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(listing.content.decode())))
    assert len(rows) == 3 * (3 + 1)  # three runs, three captions and the 'all' row each
    assert {r["run"]: float(r["xinfAP"]) for r in rows if r["caption"] == "all"} == pytest.approx(means, abs=1e-6)

    url = f"/api/v1/pools/{pool.pk}/query-chart.svg?report={report_id}&run={runs[1].pk}"
    chart = admin.get(url)
    assert chart.status_code == 200 and chart["Content-Type"] == "image/svg+xml"
    assert chart["Content-Disposition"].startswith("inline")
    svg = chart.content.decode()
    assert svg.count('class="run-score"') == 3 and svg.count('class="best-score"') == 3 and "B" in svg
    download = admin.get(url + "&download=1")
    assert download["Content-Disposition"] == f'attachment; filename="infap-{report_id}-run-{runs[1].pk}.svg"'
    assert admin.get(f"/api/v1/pools/{pool.pk}/query-chart.svg?report={report_id}&run=999999").status_code == 404
    assert admin.get(f"/api/v1/pools/{pool.pk}/query-chart.svg?run={runs[1].pk}").status_code == 400


def test_moment_metrics_report_as_json_and_csv(as_role, run_jobs, moment_setting):
    dataset, a, b = moment_setting
    pool = moment_pool_create(dataset=dataset, name="mp", runs=[a, b], redundancy=0)
    label_everything(pool, relevant=lambda pair: False)
    admin = as_role("admin")
    with run_jobs():
        response = admin.post(f"/api/v1/pools/{pool.pk}/moment-metrics/", {"ks": [1, 5]}, format="json")
    assert response.status_code == 202
    report_id = admin.get(response["Location"]).json()["result"]["report_id"]
    report = admin.get(f"/api/v1/pools/{pool.pk}/moment-metrics/{report_id}/").json()
    assert report["result"]["columns"] == ["R@1 IoU=0.5", "R@5 IoU=0.5", "R@1 IoU=0.7", "R@5 IoU=0.7", "Video R@1",
                                           "Video R@5"]
    listing = admin.get(f"/api/v1/pools/{pool.pk}/moment-metrics/{report_id}.csv").content.decode()
    rows = list(csv.reader(io.StringIO(listing)))
    assert rows[0] == ["run_id", "run", "positives", *report["result"]["columns"]]
    assert [(r[1], r[2]) for r in rows[1:]] == [("A", "corrected"), ("A", "original"), ("B", "corrected"), ("B", "original")]


def test_report_requests_are_checked(as_role, sampled_setting, moment_setting):
    _, runs, sampled = sampled_setting
    dataset, a, _ = moment_setting
    moments = moment_pool_create(dataset=dataset, name="mp", runs=[a])
    admin = as_role("admin")
    assert admin.post(f"/api/v1/pools/{sampled.pk}/moment-metrics/", {}, format="json").status_code == 404
    assert admin.post(f"/api/v1/pools/{moments.pk}/infap/", {}, format="json").status_code == 404
    refused = admin.post(f"/api/v1/pools/{sampled.pk}/infap/", {"runs": [a.pk]}, format="json")
    assert refused.status_code == 400 and "do not exist" in refused.json()["detail"]
    refused = admin.post(f"/api/v1/pools/{moments.pk}/moment-metrics/", {"iou_thresholds": [0]}, format="json")
    assert refused.status_code == 400 and "iou_thresholds" in refused.json()
    other = infap_report_create(pool=sampled)
    assert admin.get(f"/api/v1/pools/{moments.pk}/infap/{other.pk}/").status_code == 404
    assert not Job.objects.exists()


# --- who may call what -----------------------------------------------------------------------

@pytest.fixture
def everything(sampled_setting, moment_setting):
    _, runs, sampled = sampled_setting
    dataset, a, _ = moment_setting
    moments = moment_pool_create(dataset=dataset, name="mp", runs=[a])
    infap = infap_report_create(pool=sampled)
    metrics = moment_metrics_report_create(pool=moments)
    reads = [f"/api/v1/pools/{moments.pk}/moment-design/", f"/api/v1/pools/{moments.pk}/moment-spans/",
             f"/api/v1/pools/{sampled.pk}/sampled-design/", f"/api/v1/pools/{moments.pk}/moment-metrics/",
             f"/api/v1/pools/{moments.pk}/moment-metrics/{metrics.pk}/",
             f"/api/v1/pools/{moments.pk}/moment-metrics/{metrics.pk}.csv", f"/api/v1/pools/{sampled.pk}/infap/",
             f"/api/v1/pools/{sampled.pk}/infap/{infap.pk}/", f"/api/v1/pools/{sampled.pk}/infap/{infap.pk}.csv",
             f"/api/v1/pools/{sampled.pk}/query-chart.svg?report={infap.pk}&run={runs[0].pk}"]
    writes = [("/api/v1/moment-pools/", {"dataset": dataset.pk, "name": "new", "runs": [a.pk]}),
              ("/api/v1/sampled-pools/", {"dataset": runs[0].dataset_id, "name": "new", "runs": [runs[0].pk],
                                          "strata": [[1, 10, 1]]}),
              (f"/api/v1/pools/{moments.pk}/moment-metrics/", {}), (f"/api/v1/pools/{sampled.pk}/infap/", {})]
    return reads, writes


@pytest.mark.parametrize("role, read, write", [
    (None, (401, 403), (401, 403)), ("rater", (403,), (403,)), ("researcher", (200,), (403,)), ("admin", (200,), (202,)),
])
def test_who_may_call_what(as_role, run_jobs, everything, role, read, write):
    reads, writes = everything
    client = as_role(role)
    for url in reads:
        assert client.get(url).status_code in read, url
    reports_before = Report.objects.count()
    for url, body in writes:
        with run_jobs():
            assert client.post(url, body, format="json").status_code in write, url
    if role != "admin":
        assert Report.objects.count() == reports_before and not Job.objects.exists()
    else:
        assert set(Job.objects.values_list("status", flat=True)) == {"succeeded"}
