"""A registered machine judge run as a job against a real OpenAI-compatible server (tests/judge_server.py,
a process that decides demo captions from the frames' pixels): agreement with the demo's truth,
both dialects, retries, malformed answers, a server that dies, the cache and the budget."""
from __future__ import annotations

import pytest

from annotation.demo.scenes import SCENES
from annotation.models import Job, JudgeCall, Label, MachineJudge, MachineJudgment
from annotation.demo.load import demo_load
from annotation.services.machine_judges.operations import machine_judge_run_start
from annotation.services.jobs.recovery import job_retry
from tests.annotation.demo_truth import true_answer
from tests.factories import make_user

from .judge_world import agreement, endpoint_for, judge_server, mini_pool  # noqa: F401 - judge_server is a fixture

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def _run(endpoint, pool) -> Job:
    job = machine_judge_run_start(endpoint=endpoint, pool=pool, created_by=make_user("admin"))
    job.refresh_from_db()
    return job


def _judge(job) -> MachineJudge:
    return MachineJudge.objects.get(pk=job.result["judge_id"])


def test_a_run_over_the_demo_pool_agrees_with_the_pixels_and_a_rerun_sends_nothing(judge_server):
    pool = demo_load()["pool"]
    labels_before = Label.objects.count()
    endpoint = endpoint_for(judge_server, concurrency=8)
    job = _run(endpoint, pool)
    assert job.status == "succeeded", job.message
    judge = _judge(job)
    pairs = pool.pairs.filter(role="pool").count()
    assert judge.pool == pool and judge.endpoint == endpoint and judge.kind == "machine"
    assert judge.counts["judged"] == pairs and judge.counts["errors"] == 0
    # Computed against the caption words and the scenes, not against what the server said.
    assert agreement(judge) >= 0.95
    assert set(judge.judgments.values_list("score_source", flat=True)) == {"logprob"}
    relevant = judge.judgments.filter(label="relevant")
    assert relevant.exists() and all(0.5 < j.score <= 1 for j in relevant)
    assert all(0 <= j.score < 0.5 for j in judge.judgments.filter(label="not_relevant"))
    assert Label.objects.count() == labels_before  # machine verdicts are never labels
    stats = judge_server.stats()
    assert stats["requests"] == pairs and set(stats["by_pair"].values()) == {1}
    assert judge.counts["requests"] == pairs and judge.counts["tokens"] > 0
    assert job.progress_done == job.progress_total == pairs

    again = _run(endpoint, pool)
    assert again.status == "succeeded", again.message
    assert judge_server.stats()["requests"] == pairs  # every pair came from the cache
    second = _judge(again)
    assert second.counts["cached"] == pairs and second.counts["requests"] == 0
    assert (sorted(second.judgments.values_list("caption_id", "clip_id", "label", "score"))
            == sorted(judge.judgments.values_list("caption_id", "clip_id", "label", "score")))


def test_ollama_dialect_has_no_logprobs_so_the_stated_confidence_is_the_score(judge_server):
    pool = mini_pool()
    job = _run(endpoint_for(judge_server, model="demo-vl+ollama"), pool)
    assert job.status == "succeeded", job.message
    judge = _judge(job)
    assert judge.counts["judged"] == 12 and agreement(judge) == 1.0
    assert set(judge.judgments.values_list("score_source", flat=True)) == {"stated"}
    # The server states 0.97 when it could read every claim: P(relevant) is 0.97 or 0.03.
    assert {round(j.score, 2) for j in judge.judgments.all()} <= {0.97, 0.03, 0.7, 0.3}


def test_429_with_retry_after_and_503_are_retried(judge_server):
    pool = mini_pool()
    job = _run(endpoint_for(judge_server, model="demo-vl+429=2+500=1", max_retries=2), pool)
    assert job.status == "succeeded", job.message
    judge = _judge(job)
    assert judge.counts["judged"] == 12 and judge.counts["errors"] == 0
    stats = judge_server.stats()
    assert stats["requests"] == 12 + 3 and stats["answered"] == 12
    assert sorted(JudgeCall.objects.filter(job=job).values_list("requests", flat=True)) == [1] * 9 + [2] * 3
    assert judge.counts["requests"] == 15


def test_malformed_answers_are_recorded_as_errors_and_the_run_goes_on(judge_server):
    pool = mini_pool()
    job = _run(endpoint_for(judge_server, model="demo-vl+malformed=3+badbody=5"), pool)
    assert job.status == "succeeded", job.message
    judge = _judge(job)
    errors = JudgeCall.objects.filter(job=job, status="error")
    assert errors.exists() and judge.counts["errors"] == errors.count()
    assert judge.counts["judged"] == 12 - errors.count() == judge.judgments.count()
    messages = {e.error.split(":")[0] for e in errors}
    assert messages <= {"malformed answer", "the answer is not JSON"}
    assert len(job.result["errors_listed"]) == errors.count()
    assert judge_server.stats()["requests"] == 12  # not retried: temperature 0 says the same again


def test_an_answer_that_never_comes_times_out_as_that_pair_s_error(judge_server):
    pool = mini_pool(clips=("demo01", "demo04"), captions=("cap01", "cap04"))
    job = _run(endpoint_for(judge_server, model="demo-vl+hang=2", timeout_seconds=2, max_retries=0), pool)
    assert job.status == "succeeded", job.message
    errors = list(JudgeCall.objects.filter(job=job, status="error").values_list("error", flat=True))
    assert errors and all("no answer within the deadline of 2 s" in e for e in errors)
    assert _judge(job).counts["judged"] == 4 - len(errors)


def test_a_server_that_dies_fails_the_job_and_a_retry_sends_only_what_was_not_answered(judge_server):
    from tests.judge_server import JudgeServerProcess

    pool = mini_pool()
    endpoint = endpoint_for(judge_server, model="demo-vl+die-after=5", concurrency=1, max_retries=1)
    job = _run(endpoint, pool)
    assert job.status == "failed" and "stopped answering" in job.message
    kept = JudgeCall.objects.filter(job=job, status="ok").count()
    assert kept == 5  # committed as they came, although the job failed
    assert not MachineJudge.objects.filter(job=job).exists()

    # The server comes back at the same URL (the cache is keyed by the endpoint that answered: a
    # server elsewhere would be asked everything again).
    second = JudgeServerProcess(port=judge_server.port)
    try:
        endpoint.model = "demo-vl"
        endpoint.save()
        # The cache is keyed by model too: the new server must answer under the same name.
        JudgeCall.objects.filter(job=job).update(model="demo-vl")
        job_retry(job=job, requested_by=make_user("admin"))
        job.refresh_from_db()
        assert job.status == "succeeded", job.message
        assert second.stats()["requests"] == 12 - 5
        judge = _judge(job)
        assert judge.counts["judged"] == 12 and judge.counts["cached"] == 5 and agreement(judge) == 1.0
    finally:
        second.stop()


def test_the_budget_stops_the_run_cleanly_and_keeps_what_was_answered(judge_server):
    pool = mini_pool()
    job = _run(endpoint_for(judge_server, concurrency=1, max_requests=3), pool)
    assert job.status == "succeeded", job.message
    judge = _judge(job)
    assert judge_server.stats()["requests"] == 3
    assert judge.counts["judged"] == 3 and judge.counts["unjudged"] == 9
    assert judge.counts["stopped"] == "the budget of 3 requests is spent"
    by_tokens = _run(endpoint_for(judge_server, concurrency=1, max_tokens=1500, frames_per_clip=2), mini_pool())
    # One request with 2 frames spends 540 prompt tokens and some completion: the third crosses 1500.
    assert _judge(by_tokens).counts["judged"] == 3
    assert "tokens is spent" in _judge(by_tokens).counts["stopped"]


def test_demo_truth_is_what_the_server_is_checked_against():
    # The agreement above is only meaningful if the truth has both answers in the pool.
    answers = {true_answer(t, s.clip_id) for t in ("a red shape moves across the screen",) for s in SCENES}
    assert answers == {"relevant", "not_relevant"}


def test_a_moment_pool_s_span_is_what_is_sampled_and_one_pair_over_two_spans_is_refused(judge_server):
    from annotation.models import PooledPair

    pool = mini_pool(clips=("demo01",), captions=("cap01", "cap13"))
    PooledPair.objects.filter(pool=pool).update(start=1.0, end=3.0)
    endpoint = endpoint_for(judge_server)
    job = _run(endpoint, pool)
    assert job.status == "succeeded", job.message
    assert set(JudgeCall.objects.filter(job=job).values_list("sampling", flat=True)) == {"even:4@1.000-3.000;jpeg:w336q4"}
    pair = PooledPair.objects.filter(pool=pool).first()
    PooledPair.objects.create(pool=pool, caption_id=pair.caption_id, clip_id=pair.clip_id, start=0.0, end=1.0)
    refused = _run(endpoint, pool)
    assert refused.status == "failed" and "pooled over several spans" in refused.message


def test_a_judgment_set_s_pairs_are_judged(judge_server):
    from annotation.models.judgment_sets import ImportedJudgment, JudgmentSet

    pool = mini_pool(clips=("demo01", "demo08"), captions=("cap01", "cap08"))
    judgment_set = JudgmentSet.objects.create(dataset=pool.dataset, name="published", source_format="qrels",
                                              checksum="0" * 64)
    ImportedJudgment.objects.bulk_create([
        ImportedJudgment(judgment_set=judgment_set, dataset=pool.dataset, caption=p.caption, clip=p.clip, label="relevant")
        for p in pool.pairs.select_related("caption", "clip")[:3]])
    job = machine_judge_run_start(endpoint=endpoint_for(judge_server), judgment_set=judgment_set,
                                  created_by=make_user("admin"))
    job.refresh_from_db()
    assert job.status == "succeeded", job.message
    judge = _judge(job)
    assert judge.judgment_set == judgment_set and judge.pool is None
    assert judge.counts["judged"] == 3 and agreement(judge) == 1.0


def test_a_budget_spent_by_the_last_pair_stopped_nothing(judge_server):
    job = _run(endpoint_for(judge_server, concurrency=1, max_requests=4), mini_pool(clips=("demo01", "demo04"),
                                                                                     captions=("cap01", "cap13")))
    assert job.status == "succeeded", job.message
    assert _judge(job).counts["judged"] == 4 and _judge(job).counts["stopped"] == ""
