"""Machine judges over REST: an admin uploads (a job, Idempotency-Key honoured), admins and
researchers read, others are refused; a bad file fails its job whole with its lines and fields;
the machine_judge report of a pool's judge and of a judgment set's runs as a job."""
from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile
import pytest

from annotation.models import Job, MachineJudge, MachineJudgment, Report
from annotation.models.judgment_sets import ImportedJudgment, JudgmentSet
from tests.annotation.services.machine_judges.world import MACHINE, resolve_by_hand, small_pool

pytestmark = pytest.mark.django_db


def _csv(labels=MACHINE, extra: str = "") -> SimpleUploadedFile:
    rows = ["query,item,label,score,model,prompt"]
    rows += [f"{q},{i},{v},0.5,gpt-judge,v1" for (q, i), v in labels.items()]
    return SimpleUploadedFile("judge.csv", ("\n".join(rows) + "\n" + extra).encode(), content_type="text/csv")


def _upload(client, url: str, run_jobs, **fields):
    """Posts an upload and runs its job; returns (response, job)."""
    with run_jobs():
        response = client.post(url, fields, format="multipart")
    job = Job.objects.get(pk=response.data["id"]) if response.status_code in (200, 202) else None
    return response, job


def test_admin_uploads_as_a_job_researcher_reads_others_are_refused(as_role, run_jobs):
    pool, _ = small_pool()
    url = f"/api/v1/pools/{pool.pk}/machine-judges/"
    for role in (None, "rater", "researcher"):
        response = as_role(role).post(url, {"file": _csv(), "name": "gpt"}, format="multipart")
        assert response.status_code == 403, role
    assert not MachineJudge.objects.exists() and not Job.objects.exists()
    response, job = _upload(as_role("admin"), url, run_jobs, file=_csv(), name="gpt")
    assert response.status_code == 202, response.content
    assert response.data["kind"] == "import_machine_judgments" and response["Location"] == response.data["status_url"]
    assert job.status == Job.Status.SUCCEEDED, (job.message, job.errors)
    judge = MachineJudge.objects.get(pk=job.result["judge_id"])
    assert job.result["url"] == f"/api/v1/machine-judges/{judge.pk}/"
    assert judge.kind == "machine" and judge.pool_id == pool.pk and judge.model_name == "gpt-judge"
    assert judge.counts["relevant"] == 4 and judge.source_name == "judge.csv"
    researcher = as_role("researcher")
    listed = researcher.get(f"/api/v1/machine-judges/?pool={pool.pk}")
    assert [j["id"] for j in listed.data["results"]] == [judge.pk]
    assert researcher.get(f"/api/v1/machine-judges/{judge.pk}/").data["name"] == "gpt"
    for role in (None, "rater"):
        assert as_role(role).get(f"/api/v1/machine-judges/{judge.pk}/").status_code == 403
        assert as_role(role).get("/api/v1/machine-judges/").status_code == 403


def test_bad_upload_fails_its_job_whole_with_lines_and_fields(as_role, run_jobs):
    pool, _ = small_pool()
    admin = as_role("admin")
    url = f"/api/v1/pools/{pool.pk}/machine-judges/"
    response, job = _upload(admin, url, run_jobs, name="bad",
                            file=_csv(extra="q1,v9,relevant,0.5,gpt-judge,v1\nq2,v6,sure,x,gpt-judge,v1\n"))
    assert response.status_code == 202
    assert job.status == Job.Status.FAILED
    shown = admin.get(f"/api/v1/jobs/{job.pk}/").data
    where = {(e["file"], e["line"], e["field"]) for e in shown["errors"]}
    assert where == {("judge.csv", 7, "item"), ("judge.csv", 8, "label"), ("judge.csv", 8, "score")}
    assert not MachineJudge.objects.exists() and not MachineJudgment.objects.exists()
    # What can be refused before the file is read is a 400, and no job.
    _upload(admin, url, run_jobs, file=_csv(), name="gpt")
    jobs = Job.objects.count()
    again = admin.post(url, {"file": _csv(), "name": "gpt"}, format="multipart")
    assert again.status_code == 400 and "already has a machine judge named 'gpt'" in again.data["detail"]
    assert Job.objects.count() == jobs


def test_a_retried_upload_with_the_same_idempotency_key_returns_the_first_job(as_role, run_jobs):
    pool, _ = small_pool()
    admin = as_role("admin")
    url = f"/api/v1/pools/{pool.pk}/machine-judges/"
    with run_jobs():
        first = admin.post(url, {"file": _csv(), "name": "gpt"}, format="multipart", HTTP_IDEMPOTENCY_KEY="mj-1")
    with run_jobs():
        # The judge exists by now: without the key this would be refused as a taken name.
        second = admin.post(url, {"file": _csv(), "name": "gpt"}, format="multipart", HTTP_IDEMPOTENCY_KEY="mj-1")
    assert (first.status_code, second.status_code) == (202, 200)
    assert second.data["id"] == first.data["id"]
    assert MachineJudge.objects.count() == 1 and Job.objects.filter(kind="import_machine_judgments").count() == 1


def test_upload_onto_a_judgment_set(as_role, run_jobs):
    pool, _ = small_pool()
    dataset = pool.dataset
    js = JudgmentSet.objects.create(dataset=dataset, name="qrels", source_format="qrels", checksum="y" * 64)
    ImportedJudgment.objects.create(judgment_set=js, dataset=dataset, caption=dataset.captions.get(external_id="q1"),
                                    clip=dataset.clips.get(external_id="v3"), label="relevant")
    response, job = _upload(as_role("admin"), f"/api/v1/judgment-sets/{js.pk}/machine-judges/", run_jobs,
                            file=_csv({("q1", "v3"): "not_relevant"}), name="on set")
    assert response.status_code == 202, response.content
    assert job.status == Job.Status.SUCCEEDED, (job.message, job.errors)
    judge = MachineJudge.objects.get(pk=job.result["judge_id"])
    assert judge.judgment_set_id == js.pk and judge.pool_id is None


def _judge_id(admin, url, run_jobs, **fields) -> int:
    _, job = _upload(admin, url, run_jobs, **fields)
    assert job.status == Job.Status.SUCCEEDED, (job.message, job.errors)
    return job.result["judge_id"]


def test_machine_judge_report_through_the_reports_api(as_role, run_jobs):
    pool, _ = small_pool()
    resolve_by_hand(pool)
    admin = as_role("admin")
    judge = _judge_id(admin, f"/api/v1/pools/{pool.pk}/machine-judges/", run_jobs, file=_csv(), name="gpt")
    with run_jobs():
        response = admin.post(f"/api/v1/pools/{pool.pk}/reports/",
                              {"kind": "machine_judge", "params": {"judge": judge, "n_boot": 50}}, format="json")
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
    judge = _judge_id(admin, f"/api/v1/judgment-sets/{judgment_set.pk}/machine-judges/", run_jobs,
                      file=_csv(SET_MACHINE), name="vlm")
    url = f"/api/v1/judgment-sets/{judgment_set.pk}/machine-judge-report/"
    for role in (None, "rater", "researcher"):
        assert as_role(role).post(url, {"judge": judge}, format="json").status_code == 403, role
    assert not Job.objects.filter(kind="report_machine_judge").exists()
    with run_jobs():
        response = admin.post(url, {"judge": judge, "n_boot": 50, "depth": 3}, format="json")
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


def test_judgment_set_machine_judge_report_refuses_up_front(as_role, run_jobs):
    from tests.annotation.services.machine_judges.world import SET_MACHINE, small_set

    pool, _ = small_pool()
    judgment_set = small_set(pool.dataset)
    admin = as_role("admin")
    url = f"/api/v1/judgment-sets/{judgment_set.pk}/machine-judge-report/"
    none_yet = admin.post(url, {}, format="json")
    assert none_yet.status_code == 400 and "has no machine judges" in none_yet.data["detail"]
    pool_judge = _judge_id(admin, f"/api/v1/pools/{pool.pk}/machine-judges/", run_jobs, file=_csv(), name="pool one")
    other = admin.post(url, {"judge": pool_judge}, format="json")  # a pool's judge is not the set's
    assert other.status_code == 400 and f"no machine judge with id {pool_judge}" in other.data["detail"]
    _judge_id(admin, f"/api/v1/judgment-sets/{judgment_set.pk}/machine-judges/", run_jobs, file=_csv(SET_MACHINE),
              name="vlm")
    bad = admin.post(url, {"confidence": 1.5}, format="json")
    assert bad.status_code == 400 and "confidence" in bad.data  # the field named, as every out-of-range number is
    assert admin.post("/api/v1/judgment-sets/999999/machine-judge-report/", {}, format="json").status_code == 404
    assert not Job.objects.filter(kind="report_machine_judge").exists()
