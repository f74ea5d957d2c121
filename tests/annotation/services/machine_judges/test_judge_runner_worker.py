"""A machine-judge run whose worker is SIGKILLed mid-run resumes on another worker without sending
any answered pair again (counted at the server), and the key appears in no worker log."""
from __future__ import annotations

import pytest

from annotation.models import Job, JudgeCall, MachineJudge
from annotation.services.machine_judges.operations import machine_judge_run_start
from tests.factories import make_user
from tests.worker_processes import job_workers_for

from .judge_world import agreement, endpoint_for, judge_server, mini_pool  # noqa: F401 - judge_server is a fixture

pytestmark = [pytest.mark.worker, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

TIMEOUT = 400  # seconds: a worker start, stale-after and the run, on a loaded machine, many times over
SECRET = "sk-worker-test-0a1b2c3d-never-logged"


def test_a_killed_worker_s_run_resumes_without_sending_answered_pairs_again(settings, tmp_path, judge_server,
                                                                             monkeypatch):
    monkeypatch.setenv("REJUDGE_JUDGE_KEY_WORKER", SECRET)  # the workers inherit the environment
    monkeypatch.setenv("REJUDGE_JUDGE_KEY_WORKER_HOSTS", f"http://127.0.0.1:{judge_server.port}")
    pool = mini_pool()
    endpoint = endpoint_for(judge_server, model="demo-vl+hold-after=5", concurrency=2, key_env="REJUDGE_JUDGE_KEY_WORKER")
    with job_workers_for(settings, tmp_path / "workers", max_attempts=2) as workers:
        workers.start_beat()
        workers.start_worker("worker1")
        job = machine_judge_run_start(endpoint=endpoint, pool=pool, created_by=make_user("admin"))
        # Five answers arrive and are committed; the next requests wait at the server.
        workers.wait_until(lambda: JudgeCall.objects.filter(job=job, status="ok").count() == 5
                           and judge_server.stats()["requests"] >= 6, timeout=TIMEOUT, what="five cached answers")
        answered_before = {k for k, v in judge_server.stats()["answered_by_pair"].items() if v}
        assert len(answered_before) == 5
        workers.kill("worker1")
        judge_server.release()
        workers.start_worker("worker2")
        workers.wait_until(lambda: Job.objects.get(pk=job.pk).is_finished, timeout=TIMEOUT, what="the job to finish")
        job.refresh_from_db()
        assert job.status == "succeeded" and job.attempts == 2, job.message
        stats = judge_server.stats()
        assert all(stats["by_pair"][key] == 1 for key in answered_before)  # never sent twice
        assert len(stats["by_pair"]) == 12
        judge = MachineJudge.objects.get(job=job)
        assert judge.counts["judged"] == 12 and judge.counts["cached"] == 5 and agreement(judge) == 1.0
        assert stats["authorization"] == [f"Bearer {SECRET}"]
        logs = workers.logs_tail(chars=10**7)
        assert "run_machine_judge" in logs and SECRET not in logs
