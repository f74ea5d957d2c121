"""Issue 39, finding 6: a job's card names what the job works on ("Build a pool: main", not "Build
Pool #5" with 5 the job's id), and a machine judge's run reads as a sentence, not a dump of its
result's fields (the page's link to its report: tests/browser/test_admin_pages_issue39.py)."""
from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from annotation.models import Job
from tests.factories import make_pool_with_runs, make_user

pytestmark = pytest.mark.django_db

RUN_RESULT = {"judge_id": 3, "name": "vllm · job 9", "judged": 178, "relevant": 60, "not_relevant": 118,
              "score_sources": {"logprobs": 178}, "frames_per_clip": 8, "pairs": 180, "cached": 58, "answered": 122,
              "errors": 2, "unjudged": 2, "requests": 124, "tokens": 51234, "usage_ignored": 0, "stopped": "",
              "seconds": 12.34, "errors_listed": [], "notes": []}


def _jobs(pool):
    done = {"status": Job.Status.SUCCEEDED, "finished_at": timezone.now()}
    # Job ids come from a sequence the pool's own id is unlikely to match; make sure they differ.
    Job.objects.create(kind="ping", operation="ping")
    build = Job.objects.create(kind="build_pool", operation="build_pool", task_name="x", **done,
                               params={"dataset_id": pool.dataset_id, "name": pool.name, "run_ids": [1], "depth": 3},
                               result={"pool_id": pool.pk, "name": pool.name, "pairs": 180})
    report = Job.objects.create(kind="report_agreement", operation="compute_report", **done,
                                params={"pool_id": pool.pk, "kind": "agreement", "params": {}},
                                result={"report_id": 4, "kind": "agreement", "url": "/api/v1/reports/4/"})
    run = Job.objects.create(kind="machine_judge_run", operation="run_machine_judge", **done,
                             params={"endpoint_id": 1, "endpoint": "vllm", "pool_id": pool.pk, "judgment_set_id": None},
                             result=RUN_RESULT)
    return build, report, run


def test_job_cards_name_their_target_and_say_a_machine_judges_run_in_words():
    pool, _ = make_pool_with_runs()
    build, report, run = _jobs(pool)
    assert build.pk != pool.pk
    admin = Client()
    admin.force_login(make_user("admin"))

    overview = admin.get("/admin-ui/").content.decode()
    assert f">Build a pool: {pool.name}</a>" in overview
    assert f">Compute a report: Agreement: {pool.name}</a>" in overview
    assert f">Run a machine judge: {pool.name}</a>" in overview
    assert "build_pool #" not in overview and f"#{build.pk}" not in overview
    assert f">Build a pool: {pool.name}</a>" in admin.get("/").content.decode()  # the admin's home lists them too

    page = admin.get(f"/admin-ui/jobs/{build.pk}/").content.decode()
    assert f"<h1>Build a pool: {pool.name}</h1>" in page

    body = admin.get(f"/api/v1/jobs/{run.pk}/").json()
    assert body["title"] == f"Run a machine judge: {pool.name}"
    assert body["summary"] == ("vllm · job 9 judged 178 of 180 pairs: 60 relevant, 118 not relevant. 122 answers from "
                               "the judge, 58 from the cache; 2 errors; 124 requests, 51,234 tokens; 12.3 s.")
    assert admin.get(f"/api/v1/jobs/{build.pk}/").json()["summary"] is None  # said by its fields, as before
    Job.objects.filter(pk=run.pk).update(result=RUN_RESULT | {"stopped": "the budget of 124 requests is spent"})
    assert admin.get(f"/api/v1/jobs/{run.pk}/").json()["summary"].endswith(
        "Stopped: the budget of 124 requests is spent (2 pairs not judged).")
