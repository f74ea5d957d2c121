"""Machine judges over REST: an admin uploads, admins and researchers read, others are refused; a
bad file is refused whole with its lines and fields; the machine_judge report runs as a job."""
from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile
import pytest

from annotation.models import Job, MachineJudge, MachineJudgment, Report
from annotation.models.reports import ImportedJudgment, JudgmentSet
from tests.annotation.services.machine_judges.world import MACHINE, resolve_by_hand, small_pool

pytestmark = pytest.mark.django_db


def _csv(labels=MACHINE, extra: str = "") -> SimpleUploadedFile:
    rows = ["query,item,label,score,model,prompt"]
    rows += [f"{q},{i},{v},0.5,gpt-judge,v1" for (q, i), v in labels.items()]
    return SimpleUploadedFile("judge.csv", ("\n".join(rows) + "\n" + extra).encode(), content_type="text/csv")


def test_admin_uploads_researcher_reads_others_are_refused(as_role):
    pool, _ = small_pool()
    url = f"/api/v1/pools/{pool.pk}/machine-judges/"
    for role in (None, "rater", "researcher"):
        response = as_role(role).post(url, {"file": _csv(), "name": "gpt"}, format="multipart")
        assert response.status_code == 403, role
    assert not MachineJudge.objects.exists()
    response = as_role("admin").post(url, {"file": _csv(), "name": "gpt"}, format="multipart")
    assert response.status_code == 201, response.content
    body = response.data
    assert body["kind"] == "machine" and body["pool"] == pool.pk and body["model_name"] == "gpt-judge"
    assert body["counts"]["relevant"] == 4
    researcher = as_role("researcher")
    listed = researcher.get(f"/api/v1/machine-judges/?pool={pool.pk}")
    assert [j["id"] for j in listed.data["results"]] == [body["id"]]
    assert researcher.get(f"/api/v1/machine-judges/{body['id']}/").data["name"] == "gpt"
    for role in (None, "rater"):
        assert as_role(role).get(f"/api/v1/machine-judges/{body['id']}/").status_code == 403
        assert as_role(role).get("/api/v1/machine-judges/").status_code == 403


def test_bad_upload_is_refused_whole_with_lines_and_fields(as_role):
    pool, _ = small_pool()
    admin = as_role("admin")
    response = admin.post(f"/api/v1/pools/{pool.pk}/machine-judges/",
                          {"file": _csv(extra="q1,v9,relevant,0.5,gpt-judge,v1\nq2,v6,sure,x,gpt-judge,v1\n"),
                           "name": "bad"}, format="multipart")
    assert response.status_code == 400
    where = {(e["line"], e["field"]) for e in response.data["errors"]}
    assert where == {(7, "item"), (8, "label"), (8, "score")}
    assert not MachineJudgment.objects.exists()
    admin.post(f"/api/v1/pools/{pool.pk}/machine-judges/", {"file": _csv(), "name": "gpt"}, format="multipart")
    again = admin.post(f"/api/v1/pools/{pool.pk}/machine-judges/", {"file": _csv(), "name": "gpt"}, format="multipart")
    assert again.status_code == 400 and "already has a machine judge named 'gpt'" in again.data["detail"]


def test_upload_onto_a_judgment_set(as_role):
    pool, _ = small_pool()
    dataset = pool.dataset
    js = JudgmentSet.objects.create(dataset=dataset, name="qrels", source_format="qrels", checksum="y" * 64)
    ImportedJudgment.objects.create(judgment_set=js, dataset=dataset, caption=dataset.captions.get(external_id="q1"),
                                    clip=dataset.clips.get(external_id="v3"), label="relevant")
    response = as_role("admin").post(f"/api/v1/judgment-sets/{js.pk}/machine-judges/",
                                     {"file": _csv({("q1", "v3"): "not_relevant"}), "name": "on set"},
                                     format="multipart")
    assert response.status_code == 201, response.content
    assert response.data["judgment_set"] == js.pk and response.data["pool"] is None


def test_machine_judge_report_through_the_reports_api(as_role, run_jobs):
    pool, _ = small_pool()
    resolve_by_hand(pool)
    admin = as_role("admin")
    judge = admin.post(f"/api/v1/pools/{pool.pk}/machine-judges/", {"file": _csv(), "name": "gpt"},
                       format="multipart").data
    with run_jobs():
        response = admin.post(f"/api/v1/pools/{pool.pk}/reports/",
                              {"kind": "machine_judge", "params": {"judge": judge["id"], "n_boot": 50}}, format="json")
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.data["id"])
    assert job.status == Job.Status.SUCCEEDED, job.errors
    report = Report.objects.get(kind="machine_judge", pool=pool)
    detail = as_role("researcher").get(f"/api/v1/reports/{report.pk}/").data
    assert detail["result"]["kappa"]["kappa"] == pytest.approx(2 / 7)  # worked in test_machine_judge_report.py
    assert detail["result"]["system_ranking"]["tau"] == pytest.approx(-1.0)


def test_judgment_set_machine_judge_report_runs_as_a_job(as_role, run_jobs):
    from tests.annotation.services.machine_judges.world import SET_MACHINE, small_set

    pool, _ = small_pool()
    judgment_set = small_set(pool.dataset)
    admin = as_role("admin")
    judge = admin.post(f"/api/v1/judgment-sets/{judgment_set.pk}/machine-judges/",
                       {"file": _csv(SET_MACHINE), "name": "vlm"}, format="multipart").data
    url = f"/api/v1/judgment-sets/{judgment_set.pk}/machine-judge-report/"
    for role in (None, "rater", "researcher"):
        assert as_role(role).post(url, {"judge": judge["id"]}, format="json").status_code == 403, role
    assert not Job.objects.filter(kind="report_machine_judge").exists()
    with run_jobs():
        response = admin.post(url, {"judge": judge["id"], "n_boot": 50, "depth": 3}, format="json")
    assert response.status_code == 202, response.content
    assert response["Location"] == response.data["status_url"]
    job = Job.objects.get(pk=response.data["id"])
    assert job.status == Job.Status.SUCCEEDED, job.errors
    report = Report.objects.get(pk=job.result["report_id"])
    assert report.kind == "machine_judge" and report.pool_id is None
    assert report.params["judgment_set_id"] == judgment_set.pk and report.params["depth"] == 3
    detail = as_role("researcher").get(f"/api/v1/reports/{report.pk}/").data
    # Worked by hand in tests/annotation/services/machine_judges/test_machine_judge_set_report.py.
    assert detail["result"]["kappa"]["kappa"] == pytest.approx(1 / 6)
    assert detail["result"]["system_ranking"]["tau_ap"] == pytest.approx(1.0)


def test_judgment_set_machine_judge_report_refuses_up_front(as_role):
    from tests.annotation.services.machine_judges.world import SET_MACHINE, small_set

    pool, _ = small_pool()
    judgment_set = small_set(pool.dataset)
    admin = as_role("admin")
    url = f"/api/v1/judgment-sets/{judgment_set.pk}/machine-judge-report/"
    none_yet = admin.post(url, {}, format="json")
    assert none_yet.status_code == 400 and "has no machine judges" in none_yet.data["detail"]
    pool_judge = admin.post(f"/api/v1/pools/{pool.pk}/machine-judges/", {"file": _csv(), "name": "pool one"},
                            format="multipart").data
    other = admin.post(url, {"judge": pool_judge["id"]}, format="json")  # a pool's judge is not the set's
    assert other.status_code == 400 and f"no machine judge with id {pool_judge['id']}" in other.data["detail"]
    admin.post(f"/api/v1/judgment-sets/{judgment_set.pk}/machine-judges/", {"file": _csv(SET_MACHINE), "name": "vlm"},
               format="multipart")
    bad = admin.post(url, {"confidence": 1.5}, format="json")
    assert bad.status_code == 400 and "confidence" in bad.data["detail"]
    assert admin.post(f"/api/v1/judgment-sets/999999/machine-judge-report/", {}, format="json").status_code == 404
    assert not Job.objects.filter(kind="report_machine_judge").exists()
