"""The ranking study's operations keep what jobs stored before the registry: a started build or
report has its old kind and parameters, and one queued by an older version under its old task
name (no operation) still runs, with the result it had."""
from __future__ import annotations

import pytest

from annotation.models import Job, RankingStudy, Report
from annotation.services.jobs import job_create, job_enqueue, task_names
from annotation.services.ranking.operations import ranking_report_start, ranking_study_start
from annotation.services.ranking.study import ranking_memberships_grant
from tests.annotation.services.ranking.helpers import make_benchmark, make_study, raters, submit

pytestmark = pytest.mark.django_db


def test_started_jobs_store_what_they_stored_before():
    dataset = make_benchmark()
    build = ranking_study_start(dataset=dataset, name="s", proxies=["bow"], n_clips=2)
    assert (build.kind, build.operation) == ("build_ranking_study", "build_ranking_study")
    assert build.params == {"dataset_id": dataset.pk, "name": "s", "proxies": ["bow"], "n_clips": 2, "seed": 0,
                            "mode": "modern", "synsets": "wordnet", "min_fraction": 0.25, "raters_per_task": 3,
                            "lease_seconds": 600}
    people = raters(3)
    study = make_study(dataset, n_clips=1, raters=people, name="rated")
    for rater in people:
        submit(rater, study.tasks.get())
    report = ranking_report_start(study=study, created_by=None)
    assert (report.kind, report.operation, report.params) == ("ranking_study_report", "ranking_study_report",
                                                              {"study_id": study.pk})


def test_jobs_queued_under_the_old_task_names_still_run(django_capture_on_commit_callbacks):
    dataset = make_benchmark()
    with django_capture_on_commit_callbacks(execute=True):
        build = job_create(kind="build_ranking_study", params={
            "dataset_id": dataset.pk, "name": "old", "proxies": ["bow"], "n_clips": 1, "seed": 0, "mode": "modern",
            "synsets": "wordnet", "min_fraction": 0.25, "raters_per_task": 3, "lease_seconds": 600})
        job_enqueue(job=build, task=task_names.BUILD_RANKING_STUDY)
    build.refresh_from_db()
    assert build.status == Job.Status.SUCCEEDED, build.message
    assert build.operation == "" and set(build.result) == {"study_id", "name", "tasks"}
    study = RankingStudy.objects.get(pk=build.result["study_id"])
    people = raters(3)
    ranking_memberships_grant(study=study, users=people)
    for rater in people:
        submit(rater, study.tasks.get())
    with django_capture_on_commit_callbacks(execute=True):
        report = job_create(kind="ranking_study_report", params={"study_id": study.pk})
        job_enqueue(job=report, task=task_names.RANKING_STUDY_REPORT)
    report.refresh_from_db()
    assert report.status == Job.Status.SUCCEEDED, report.message
    assert Report.objects.get(pk=report.result["report_id"]).kind == "human_proxy"
