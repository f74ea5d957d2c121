"""Issue 14 item 1: a pool built through POST pools/build/ (the admin page's form) can bring
training and gold pairs, copied from another pool of the dataset or from a known-pairs CSV,
checked before the job starts."""
from __future__ import annotations

import io

import pytest

from annotation.models import Job, Pool, PooledPair
from annotation.services.pools.build import known_pairs_add
from annotation.services.queue.leases import lease_next
from annotation.services.accounts.raters import memberships_grant
from tests.factories import make_pool_with_runs, make_rater

pytestmark = pytest.mark.django_db

KNOWN = [
    {"caption": "q1", "clip": "v2", "answer": "relevant", "role": "training", "explanation": "all there"},
    {"caption": "q2", "clip": "v5", "answer": "not_relevant", "role": "training", "explanation": "wrong shape"},
    {"caption": "q3", "clip": "v4", "answer": "relevant", "role": "gold"},
]


def csv_upload(text: str, name: str = "known.csv"):
    upload = io.BytesIO(text.encode())
    upload.name = name
    return upload


def build(admin, pool, runs, run_jobs, **extra):
    body = {"dataset": pool.dataset_id, "name": extra.pop("name", "with training"), "runs": [r.pk for r in runs],
            "depth": 2} | extra
    fmt = "multipart" if "known_pairs_file" in body else "json"
    with run_jobs():
        response = admin.post("/api/v1/pools/build/", body, format=fmt)
    return response


def test_build_copies_training_and_gold_from_another_pool(as_role, run_jobs):
    source, runs = make_pool_with_runs()
    known_pairs_add(pool=source, items=KNOWN)
    admin = as_role("admin")
    response = build(admin, source, runs, run_jobs, known_pairs_from=source.pk)
    assert response.status_code == 202, response.json()
    job = admin.get(response["Location"]).json()
    assert job["status"] == "succeeded", job
    assert (job["result"]["training_pairs"], job["result"]["gold_pairs"]) == (2, 1)
    pool = Pool.objects.get(pk=job["result"]["pool_id"])
    copied = {(p.role, p.caption.external_id, p.clip.external_id, p.known_answer, p.explanation)
              for p in PooledPair.objects.filter(pool=pool, role__in=["training", "gold"]).select_related("caption", "clip")}
    assert copied == {(i["role"], i["caption"], i["clip"], i["answer"], i.get("explanation", "")) for i in KNOWN}
    # A new rater starts on the training queue, not on real pairs.
    rater = make_rater()
    memberships_grant(pool=pool, users=[rater])
    assert lease_next(pool=pool, rater=rater).mode == "training"


def test_build_reads_a_known_pairs_csv_in_multipart(as_role, run_jobs):
    source, runs = make_pool_with_runs()
    admin = as_role("admin")
    text = ("caption,clip,answer,role,explanation\n"
            "q1,v2,relevant,training,every element is there\n"
            "q2,v5,not_relevant,training,the shape differs\n"
            "q3,v4,relevant,\n")  # role left empty: gold, as on the pool page's upload
    response = build(admin, source, runs, run_jobs, known_pairs_file=csv_upload(text), training_pass_mark="0.5")
    assert response.status_code == 202, response.json()
    job = admin.get(response["Location"]).json()
    assert job["status"] == "succeeded", job
    pool = Pool.objects.get(pk=job["result"]["pool_id"])
    assert pool.training_pass_mark == 0.5
    assert dict(PooledPair.objects.filter(pool=pool, role="training").values_list("caption__external_id", "explanation")) == {
        "q1": "every element is there", "q2": "the shape differs"}
    assert list(PooledPair.objects.filter(pool=pool, role="gold").values_list("caption__external_id", "known_answer")) == [
        ("q3", "relevant")]


def test_a_bad_csv_is_a_400_naming_file_line_and_field_and_no_job_or_pool(as_role, run_jobs):
    source, runs = make_pool_with_runs()
    admin = as_role("admin")
    text = "caption,clip,answer,role\nq1,v2,relevant,training\nq9,v2,relevant,gold\nq2,v3,maybe,training\n"
    jobs_before, pools_before = Job.objects.count(), Pool.objects.count()
    response = build(admin, source, runs, run_jobs, known_pairs_file=csv_upload(text, "mine.csv"))
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert {(e["file"], e["line"], e["field"]) for e in errors} == {("mine.csv", 3, "caption"), ("mine.csv", 4, "answer")}
    assert (Job.objects.count(), Pool.objects.count()) == (jobs_before, pools_before)


def test_copy_source_must_be_a_pool_of_the_same_dataset_with_known_pairs(as_role, run_jobs):
    source, runs = make_pool_with_runs()
    foreign, _ = make_pool_with_runs()  # a second dataset
    known_pairs_add(pool=foreign, items=KNOWN)
    admin = as_role("admin")
    response = build(admin, source, runs, run_jobs, known_pairs_from=foreign.pk)
    assert response.status_code == 400 and "another dataset" in str(response.json())
    empty = build(admin, source, runs, run_jobs, known_pairs_from=source.pk)
    assert empty.status_code == 400 and "no training or gold pairs" in str(empty.json())
    both = build(admin, source, runs, run_jobs, known_pairs_from=foreign.pk, known_pairs_file=csv_upload("caption,clip,answer\nq1,v1,relevant\n"))
    assert both.status_code == 400 and "not both" in str(both.json())
    assert not Pool.objects.filter(name="with training").exists()


def test_build_without_known_pairs_still_works_in_json(as_role, run_jobs):
    source, runs = make_pool_with_runs()
    admin = as_role("admin")
    response = build(admin, source, runs, run_jobs)
    job = admin.get(response["Location"]).json()
    assert job["status"] == "succeeded" and (job["result"]["training_pairs"], job["result"]["gold_pairs"]) == (0, 0)
