"""The machine-judges area's background operations (services/operations/): importing an uploaded
file of machine judgments, measuring a judgment set's machine judge against the set's verdicts (a
pool's judge is a pool report), and running a registered judge (JudgeEndpoint) over a pool or a
judgment set. Each is declared once here: the parameters a caller chooses, the check that refuses
a request before a job exists (a mistake is a 400, not a failed job), and the run.

A judge's run works in two phases (`phases`): it asks the judge outside the job's transaction,
each answer committed as it arrives (a failed run keeps its answers, and a run started again does
not pay for them twice), then stores the verdicts with the job. The command line runs it in its
own process, as a job all the same (`machine_judge_run_here`)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from django.urls import reverse

from annotation.analysis.params import REQUIRED, Param
from annotation.formats.machine_judgments import FILE_FORMATS
from annotation.models import Dataset, Job, JudgeEndpoint, MachineJudge, Pool
from annotation.models.judgment_sets import JudgmentSet
from annotation.services.jobs import task_names
from annotation.services.machine_judges.errors import MachineJudgeError
from annotation.services.machine_judges.imports import machine_judge_import, machine_judge_import_check
from annotation.services.machine_judges.lookup import judgment_set_machine_judge
from annotation.services.machine_judges.reports import machine_judge_report_create
from annotation.services.machine_judges.runner.run import JudgeRunError, MachineJudgeRunJob, judge_run_check
from annotation.services.operations.operation import Operation, refusal_naming
from annotation.services.operations.start import operation_job, operation_run_here, operation_start
from annotation.services.reports.kinds.machine_judge import KIND as MACHINE_JUDGE_REPORT
from annotation.services.reports.kinds.machine_judge import judge_depth
from annotation.services.storage.uploads import upload_local_path, upload_store


def _pool_or_set(pool: Pool | None, judgment_set: JudgmentSet | None, refusal: Callable[[], Exception]):
    if (pool is None) == (judgment_set is None):
        raise refusal()
    return pool if pool is not None else judgment_set


def _target_ids(target) -> dict:
    return {"pool_id": target.pk if isinstance(target, Pool) else None,
            "judgment_set_id": target.pk if isinstance(target, JudgmentSet) else None}


# --- import a file of machine judgments ----------------------------------------------------------

IMPORT_PARAMS = {
    "name": Param(str, "", "the machine judge's name, unique in the dataset (blank: the file's name)", max_length=200),
    "file_format": Param(str, "", "the file's format (blank: from the file name or its first character)",
                         choices=FILE_FORMATS),
    "model": Param(str, "", "the model's name, if the file has no model column", max_length=300),
    "prompt": Param(str, "", "prompt or version, if the file has no prompt column", max_length=300),
}


def _import_check(*, target, params: dict) -> dict:
    pool, judgment_set = (target, None) if isinstance(target, Pool) else (None, target)
    try:
        name = machine_judge_import_check(dataset=target.dataset, name=params["name"], pool=pool,
                                          judgment_set=judgment_set)
    except MachineJudgeError as exc:
        # The target is one of the dataset's own, so what is left to refuse is the name (none, or taken).
        exc.param = "name"
        raise
    return params | {"name": name}


def _import_pack(target, params: dict) -> dict:
    return {"dataset_id": target.dataset_id, **_target_ids(target), **params}


def _import_run(job: Job, progress) -> dict:
    p = job.params
    pool = Pool.objects.get(pk=p["pool_id"]) if p.get("pool_id") else None
    judgment_set = JudgmentSet.objects.get(pk=p["judgment_set_id"]) if p.get("judgment_set_id") else None
    with upload_local_path(params=p) as path:
        judge = machine_judge_import(dataset=Dataset.objects.get(pk=p["dataset_id"]), path=path, name=p["name"],
                                     pool=pool, judgment_set=judgment_set, file_format=p.get("file_format") or None,
                                     source_name=p.get("source_name") or "", model_name=p.get("model") or "",
                                     prompt_version=p.get("prompt") or "", created_by=job.created_by,
                                     progress=progress)
    return {"judge_id": judge.pk, "name": judge.name, "model_name": judge.model_name, "counts": judge.counts,
            "url": reverse("api:machine-judge-detail", args=[judge.pk])}


MACHINE_JUDGMENTS_IMPORT = Operation(
    name="import_machine_judgments", title="Import machine judgments", params=IMPORT_PARAMS, check=_import_check,
    pack=_import_pack, run=_import_run, target=(Pool, JudgmentSet), error=MachineJudgeError,
    legacy_task=task_names.IMPORT_MACHINE_JUDGMENTS)


def machine_judgments_import_start(*, uploaded_file, name: str | None, pool: Pool | None = None,
                                   judgment_set: JudgmentSet | None = None, file_format: str | None = None,
                                   model_name: str = "", prompt_version: str = "", created_by,
                                   idempotency_key: str | None = None) -> tuple[Job, bool]:
    """Stores an upload of machine judgments and queues its import as a machine judge of the pool
    or the judgment set. A wrong target or a name already taken is refused (MachineJudgeError)
    before anything is stored; problems in the file fail the job with their lines and fields."""
    target = _pool_or_set(pool, judgment_set, lambda: MachineJudgeError(
        "attach the machine judge to a pool or to a judgment set (one of them)"))
    # Without a name the file's own stands in, cut to the declared length as the check cuts a name.
    name = name or (uploaded_file.name or "")[:IMPORT_PARAMS["name"].max_length]
    return operation_start(
        MACHINE_JUDGMENTS_IMPORT, target=target,
        params={"name": name, "file_format": file_format or None, "model": model_name, "prompt": prompt_version},
        inputs=lambda: {"upload": upload_store(uploaded_file=uploaded_file), "source_name": uploaded_file.name},
        created_by=created_by, idempotency_key=idempotency_key)


# --- a judgment set's machine judge against the set's verdicts -----------------------------------

#: The report kind's parameters; a set has no pool, so its judge's runs are ranked at the depth
#: the kind gives a judge without a pool, and no judge named means the set's only one.
SET_REPORT_PARAMS = dict(MACHINE_JUDGE_REPORT.params) | {
    "judge": replace(MACHINE_JUDGE_REPORT.params["judge"],
                     description="the machine judge's id (null: the set's only machine judge)"),
    "depth": replace(MACHINE_JUDGE_REPORT.params["depth"], default=judge_depth(None))}


def _set_report_check(*, target: JudgmentSet, params: dict) -> dict:
    try:
        judge = judgment_set_machine_judge(judgment_set=target, judge_id=params["judge"])
    except MachineJudgeError as exc:
        exc.param = "judge"
        raise
    return params | {"judge": judge.pk}


def _set_report_pack(target: JudgmentSet, params: dict) -> dict:
    return {"judgment_set_id": target.pk, "judge_id": params["judge"], "kind": MACHINE_JUDGE_REPORT.name,
            "params": params}


def _set_report_run(job: Job, progress) -> dict:
    p = job.params
    judge = MachineJudge.objects.select_related("dataset", "judgment_set").get(pk=p["judge_id"])
    report = machine_judge_report_create(judge=judge, params=p["params"], created_by=job.created_by, job=job,
                                         progress=progress)
    return {"report_id": report.pk, "kind": report.kind, "url": reverse("api:report-detail", args=[report.pk])}


MACHINE_JUDGE_SET_REPORT = Operation(
    name="machine_judge_set_report", title="Measure a judgment set's machine judge", params=SET_REPORT_PARAMS,
    check=_set_report_check, pack=_set_report_pack, run=_set_report_run, target=JudgmentSet,
    job_kind="report_machine_judge", error=MachineJudgeError, legacy_task=task_names.MACHINE_JUDGE_SET_REPORT)


def machine_judge_set_report_start(*, judgment_set: JudgmentSet, judge_id: int | None, params: dict | None,
                                   created_by) -> Job:
    """Raises MachineJudgeError (no such judge on the set, or a bad parameter, named)."""
    return operation_job(MACHINE_JUDGE_SET_REPORT, target=judgment_set,
                         params=dict(params or {}) | {"judge": judge_id}, created_by=created_by)


# --- run a registered judge ----------------------------------------------------------------------

class JudgeRunRefused(JudgeRunError, ValueError):
    """A run refused before its job exists (callers catching JudgeRunError catch it too)."""


def _one_target() -> JudgeRunRefused:
    return JudgeRunRefused("name a pool or a judgment set (one of them)")


RUN_PARAMS = {"endpoint_id": Param(int, REQUIRED, "the registered judge (GET /judge-endpoints/)", 1)}


def _run_check(*, target, params: dict) -> dict:
    endpoint = JudgeEndpoint.objects.filter(pk=params["endpoint_id"]).first()
    if endpoint is None:
        raise refusal_naming(JudgeRunRefused("no registered judge has this id"), "endpoint_id")
    try:
        judge_run_check(endpoint)
    except JudgeRunError as exc:
        raise JudgeRunRefused(str(exc)) from exc
    # Its name too, for the job page and the error of a run whose judge was removed since.
    return params | {"endpoint": endpoint.name}


def _run_pack(target, params: dict) -> dict:
    return {"endpoint_id": params["endpoint_id"], "endpoint": params["endpoint"], **_target_ids(target)}


def _run_phases() -> tuple[Callable, Callable]:
    """(ask, store) sharing one run: what `ask` heard, `store` stores."""
    run = MachineJudgeRunJob()

    def store(job: Job, progress) -> dict:
        result = run.store(job, progress)
        return result | {"url": reverse("api:machine-judge-detail", args=[result["judge_id"]])}

    return run.ask, store


def _run_both(job: Job, progress) -> dict:
    """Both phases in one call; the runner calls them apart (`phases`), asking outside the job's
    transaction."""
    ask, store = _run_phases()
    ask(job, progress)
    return store(job, progress)


def _count(n, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def _run_summary(result: dict) -> str:
    """A run's result (runner/run.py _store) in words, for its job card."""
    get = lambda key: result.get(key) or 0  # noqa: E731 - a run stopped early has no count of some
    parts = [f"{result.get('name', 'The machine judge')} judged {get('judged'):,} of {_count(get('pairs'), 'pair')}: "
             f"{get('relevant'):,} relevant, {get('not_relevant'):,} not relevant."]
    parts.append(f"{_count(get('answered'), 'answer')} from the judge, {get('cached'):,} from the cache; "
                 f"{_count(get('errors'), 'error')}; {_count(get('requests'), 'request')}, "
                 f"{_count(get('tokens'), 'token')}; {float(get('seconds')):.1f} s.")
    if result.get("stopped"):
        parts.append(f"Stopped: {result['stopped']} ({get('unjudged'):,} pairs not judged).")
    return " ".join(parts)


MACHINE_JUDGE_RUN = Operation(
    name="run_machine_judge", title="Run a machine judge", params=RUN_PARAMS, check=_run_check, pack=_run_pack,
    run=_run_both, phases=_run_phases, target=(Pool, JudgmentSet), job_kind="machine_judge_run",
    summary=_run_summary, error=JudgeRunRefused, legacy_task=task_names.RUN_MACHINE_JUDGE)


def machine_judge_run_start(*, endpoint: JudgeEndpoint | None = None, endpoint_id: int | None = None,
                            pool: Pool | None = None, judgment_set: JudgmentSet | None = None, created_by=None) -> Job:
    """Queues the run of the judge (`endpoint`, or its id as a request gives it) for a worker.
    Raises JudgeRunRefused (a JudgeRunError)."""
    target = _pool_or_set(pool, judgment_set, _one_target)
    return operation_job(MACHINE_JUDGE_RUN, target=target,
                         params={"endpoint_id": endpoint.pk if endpoint is not None else endpoint_id},
                         created_by=created_by)


def machine_judge_run_here(*, endpoint: JudgeEndpoint, pool: Pool | None = None,
                           judgment_set: JudgmentSet | None = None, created_by=None, progress=None) -> Job:
    """Runs it in this process (the CLI), as a job all the same: the job page shows it, its
    answers are cached under it, and an admin can retry it on a worker."""
    target = _pool_or_set(pool, judgment_set, _one_target)
    return operation_run_here(MACHINE_JUDGE_RUN, target=target, params={"endpoint_id": endpoint.pk},
                              created_by=created_by, progress=progress)


OPERATIONS = (MACHINE_JUDGMENTS_IMPORT, MACHINE_JUDGE_SET_REPORT, MACHINE_JUDGE_RUN)
