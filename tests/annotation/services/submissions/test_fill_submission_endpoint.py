"""A submission's holes judged by a registered machine judge (a JudgeEndpoint) through the runner,
against the real OpenAI-compatible test server (tests/judge_server.py, which decides demo captions
from the frames' pixels): the release's pool judged by the endpoint, a submitted run whose holes
lie outside the pool, the endpoint asked for exactly those holes, its verdicts right by the demo's
truth, and a rescore that sends nothing again (the runner's cache)."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Job, JudgeCall, PooledPair, Submission
from annotation.services.machine_judges.operations import machine_judge_run_start
from annotation.services.releases.create import release_create
from annotation.services.submissions.operations import submission_fill_start, submission_start
from tests.annotation.demo_truth import true_answer
from tests.annotation.services.machine_judges.judge_world import endpoint_for, judge_server, mini_pool  # noqa: F401
from tests.factories import make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

CAPTIONS = ("cap01", "cap04", "cap08", "cap13")


def test_the_endpoint_is_asked_for_the_holes_and_a_rescore_asks_nothing_again(judge_server):
    pool = mini_pool(clips=("demo01", "demo04", "demo08"), captions=CAPTIONS)
    # The pool and so the release judge demo01 and demo04 only: every demo08 pair is a hole.
    PooledPair.objects.filter(pool=pool, clip__external_id="demo08").delete()
    for pair in PooledPair.objects.filter(pool=pool).select_related("caption", "clip"):
        PooledPair.objects.filter(pk=pair.pk).update(state=PooledPair.State.RESOLVED,
                                                     resolved_label=true_answer(pair.caption.text, pair.clip.external_id))
    release = release_create(pools=[pool], name="demo-holes", allow_unresolved=True)
    endpoint = endpoint_for(judge_server)
    run = machine_judge_run_start(endpoint=endpoint, pool=pool, created_by=make_user("admin"))
    run.refresh_from_db()
    assert run.status == Job.Status.SUCCEEDED, run.message
    assert judge_server.stats()["requests"] == 8

    lines = "".join(f"{q} Q0 {c} {r} {1 - r / 10:.1f} S\n" for q in CAPTIONS
                    for r, c in enumerate(("demo08", "demo01", "demo04"), start=1))
    submission, _ = submission_start(release=release, uploaded_file=SimpleUploadedFile("s.trec", lines.encode()),
                                     name="model-s", submitted_by=make_user("researcher"))
    submission.refresh_from_db()
    assert submission.job.status == Job.Status.SUCCEEDED, submission.job.message
    # A researcher's submission is filled from what the judge has: asking costs per pair.
    first = submission.summary["fill"]
    assert judge_server.stats()["requests"] == 8 and not JudgeCall.objects.filter(job=submission.job).exists()
    assert first["asked"]["pairs"] == 0 and "only a rescore an admin" in first["asked"]["error"]
    assert (first["machine_verdicts"], first["unanswered"]) == (0, 4)

    # An admin's rescore asks the endpoint for the holes, and only for them.
    job, created = submission_fill_start(submission=submission, created_by=make_user("admin"))
    job.refresh_from_db()
    assert created and job.status == Job.Status.SUCCEEDED, job.message
    submission.refresh_from_db()
    fill = submission.summary["fill"]
    assert fill["judge"]["name"] == f"{endpoint.name} · job {run.pk}" and "asked for the holes" in fill["judge"]["source"]
    assert fill["asked"]["pairs"] == 4 and fill["asked"]["answered"] == 4 and fill["asked"]["error"] == ""
    assert (fill["machine_verdicts"], fill["unanswered"]) == (4, 0)
    assert judge_server.stats()["requests"] == 8 + 4  # the holes only: the pool's pairs are not holes
    # Each answer was committed under the rescore's job as it arrived (the job's first phase).
    calls = JudgeCall.objects.filter(job=job, status=JudgeCall.Status.OK)
    assert sorted(calls.values_list("clip__external_id", flat=True)) == ["demo08"] * 4
    # The machine's verdicts are right by the demo's truth: C@1 is the share of captions demo08 shows.
    truth = {q: true_answer(text, "demo08") == "relevant"
             for q, text in release.dataset.captions.values_list("external_id", "text")}
    c1 = [v for k, v in fill["machine_filled"]["values"].items() if k.split(" ")[0] == "C@1"]
    assert c1 == [pytest.approx(sum(truth.values()) / 4)]
    assert fill["agreement"]["pairs_compared"] == 8

    again_job, created = submission_fill_start(submission=submission, created_by=make_user("admin"))
    again_job.refresh_from_db()
    assert created and again_job.status == Job.Status.SUCCEEDED, again_job.message
    assert judge_server.stats()["requests"] == 12  # every hole came from the cache
    submission.refresh_from_db()
    again = submission.summary["fill"]
    assert again["asked"]["cached"] == 4 and again["asked"]["answered"] == 0 and again["job_id"] == again_job.pk
    assert again["machine_filled"] == fill["machine_filled"]
    assert submission.status == Submission.Status.SCORED


def _example_release_with_an_endpoint_judge(tmp_path, **judge_fields):
    from annotation.models import JudgeEndpoint, MachineJudge
    from tests.annotation.services.reports.test_report_metrics import example_pool

    pool = example_pool(tmp_path)
    release = release_create(allow_unresolved=True, pools=[pool], name="example-fire")
    endpoint = JudgeEndpoint.objects.create(name="unreachable", base_url="http://127.0.0.1:9", model="demo-vl",
                                            prompt_version="v2", max_retries=0, timeout_seconds=2)
    fields = {"model_name": "demo-vl", "prompt_version": "v2", "source_name": "http://127.0.0.1:9"} | judge_fields
    MachineJudge.objects.create(dataset=pool.dataset, pool=pool, name="run", checksum="", endpoint=endpoint, **fields)
    return release


def _submit_s(release) -> Submission:
    from .test_score_submission import RUN_S, _trec

    submission, _ = submission_start(release=release, uploaded_file=SimpleUploadedFile("s.trec", _trec(RUN_S).encode()),
                                     name="model-s", submitted_by=make_user("admin"))
    submission.refresh_from_db()
    assert submission.job.status == Job.Status.SUCCEEDED, submission.job.message
    return submission


def test_holes_the_endpoint_cannot_answer_are_counted_and_stay_holes(tmp_path):
    # The example's clips have no video: every hole's frames fail, each that pair's error.
    fill = _submit_s(_example_release_with_an_endpoint_judge(tmp_path)).summary["fill"]
    assert fill["asked"]["pairs"] == 4 and fill["asked"].get("answered", 0) == 0
    assert (fill["machine_verdicts"], fill["unanswered"]) == (0, 4)
    assert fill["machine_filled"]["holes_left"] == 4
    assert fill["agreement"]["pairs_compared"] == 0 and fill["agreement"]["kappa"] is None


def test_an_endpoint_changed_since_the_judge_s_run_is_not_asked(tmp_path):
    fill = _submit_s(_example_release_with_an_endpoint_judge(tmp_path, model_name="older-model")).summary["fill"]
    assert fill["asked"]["pairs"] == 0 and "changed its model" in fill["asked"]["error"]
    assert not JudgeCall.objects.exists() and fill["unanswered"] == 4
