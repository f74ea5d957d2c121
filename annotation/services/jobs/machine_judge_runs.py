"""Starting a run of a registered machine judge (JudgeEndpoint) over a pool or a judgment set, as a
background job (annotation/services/machine_judges/runner/run.py does the work), and a machine judge
of a judgment set measured against the set's verdicts."""
from __future__ import annotations

from django.db import transaction

from annotation.models import Job, JudgeEndpoint, Pool
from annotation.models.judgment_sets import JudgmentSet
from annotation.services.jobs import task_names
from annotation.services.jobs.dispatch import job_enqueue
from annotation.services.jobs.lifecycle import job_create, job_execute
from annotation.services.machine_judges.lookup import judgment_set_machine_judge
from annotation.services.machine_judges.runner.run import JudgeRunError, MachineJudgeRunJob, judge_run_check
from annotation.services.reports.create import report_job_start
from annotation.services.reports.kinds.machine_judge import KIND as MACHINE_JUDGE
from annotation.services.reports.kinds.machine_judge import machine_judge_set_params_clean

JOB_KIND = "machine_judge_run"


def _job(endpoint, pool, judgment_set, created_by) -> Job:
    if (pool is None) == (judgment_set is None):
        raise JudgeRunError("name a pool or a judgment set (one of them)")
    judge_run_check(endpoint)
    params = {"endpoint_id": endpoint.pk, "endpoint": endpoint.name,
              "pool_id": pool.pk if pool is not None else None,
              "judgment_set_id": judgment_set.pk if judgment_set is not None else None}
    return job_create(kind=JOB_KIND, params=params, created_by=created_by)


@transaction.atomic
def machine_judge_run_start(*, endpoint: JudgeEndpoint, pool: Pool | None = None,
                            judgment_set: JudgmentSet | None = None, created_by=None) -> Job:
    """Queues the run for a worker."""
    return job_enqueue(job=_job(endpoint, pool, judgment_set, created_by), task=task_names.RUN_MACHINE_JUDGE)


def machine_judge_run_here(*, endpoint: JudgeEndpoint, pool: Pool | None = None, judgment_set: JudgmentSet | None = None,
                           created_by=None, progress=None) -> Job:
    """Runs it in this process (the CLI), as a job all the same: the job page shows it, its
    answers are cached under it, and an admin can retry it on a worker."""
    job = _job(endpoint, pool, judgment_set, created_by)
    job.task_name = task_names.RUN_MACHINE_JUDGE
    job.save(update_fields=["task_name"])

    def both_reporting(phase):
        def call(job, report):
            def both(done, total=None, message=""):
                report(done, total, message)
                if progress:
                    progress(done, total, message)
            return phase(job, both)
        return call

    run = MachineJudgeRunJob()
    return job_execute(job_id=job.pk, work=both_reporting(run.store), outside=both_reporting(run.ask))


@transaction.atomic
def machine_judge_set_report_start(*, judgment_set: JudgmentSet, judge_id: int | None, params: dict | None,
                                   created_by) -> Job:
    """Raises MachineJudgeError (no such judge on the set) or ReportError (a bad parameter)."""
    judge = judgment_set_machine_judge(judgment_set=judgment_set, judge_id=judge_id)
    clean = machine_judge_set_params_clean(judge=judge, params=params)
    return report_job_start(kind=MACHINE_JUDGE.name, job_kind="report_machine_judge", params={
        "judgment_set_id": judgment_set.pk, "judge_id": judge.pk, "kind": MACHINE_JUDGE.name, "params": clean},
        task=task_names.MACHINE_JUDGE_SET_REPORT, created_by=created_by)
