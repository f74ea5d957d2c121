"""A job in words, for the job cards of the pages and the API: what it does and to what ("Build a
pool: main", not "build_pool #5", where 5 is the job's id and not the pool's), and, for operations
that declare one, a summary of its result in a sentence instead of a dump of its fields."""
from __future__ import annotations

from annotation.models import Dataset, Job, JudgmentSet, Pool, RankingStudy, Release, Run
from annotation.services.operations.registry import OPERATIONS

#: Where a job's params (or its result) name the row it works on, most particular first.
_TARGETS = (("pool_id", Pool), ("judgment_set_id", JudgmentSet), ("run_id", Run), ("study_id", RankingStudy),
            ("release_id", Release), ("dataset_id", Dataset))


def _operation(job: Job):
    # A job's kind names the particular operation where the registered one takes several (a
    # pool report's "report_agreement", an export's "export_qrels"): its title is the particular one.
    return OPERATIONS.get(job.kind) or OPERATIONS.get(job.operation)


def job_target_name(job: Job) -> str | None:
    """The name of what the job makes or works on: the name it was given (a pool being built, a
    run being imported), else its target row's, else None."""
    params, result = job.params or {}, job.result if isinstance(job.result, dict) else {}
    if isinstance(params.get("name"), str) and params["name"].strip():
        return params["name"].strip()
    for key, model in _TARGETS:
        pk = params.get(key) or result.get(key)
        if isinstance(pk, int):
            found = model.objects.filter(pk=pk).values_list("name", flat=True).first()
            if found:
                return found
    return None


def job_title(job: Job) -> str:
    """The job in words: its operation's title and what it works on."""
    operation = _operation(job)
    what = operation.title if operation else job.kind.replace("_", " ").capitalize()
    target = job_target_name(job)
    return f"{what}: {target}" if target else what


def job_summary(job: Job) -> str | None:
    """The result of a job that succeeded, in a sentence, when its operation declares how to say it."""
    operation = _operation(job)
    if job.status != Job.Status.SUCCEEDED or not isinstance(job.result, dict) or operation is None:
        return None
    return operation.summary(job.result) if operation.summary else None
