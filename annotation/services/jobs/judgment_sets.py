"""Judgment-set work started from the API or the pages, as background jobs: scoring stored runs
against a set, the agreement of a rater_labels set, a set taken from a pool's labels, and a
machine judge of the set measured against its verdicts.

Each start checks the request first (a mistake gets a 400, not a failed job), then creates the job
and queues it once the transaction commits.
"""
from __future__ import annotations

from django.db import transaction

from annotation.models import Job, Pool, Run
from annotation.models.judgment_sets import JudgmentSet
from annotation.services.evaluation import CONVENTIONS, EvaluationError
from annotation.services.jobs import task_names
from annotation.services.jobs.dispatch import job_enqueue
from annotation.services.jobs.lifecycle import job_create
from annotation.services.judgment_sets.agreement import LEVELS, AgreementOptionsError
from annotation.services.judgment_sets.imports import REPEAT_RULES
from annotation.services.judgment_sets.scoring import stored_runs_check
from annotation.services.machine_judges.lookup import judgment_set_machine_judge
from annotation.services.reports.create import report_job_start
from annotation.services.reports.kinds.evaluation import KIND as EVALUATION
from annotation.services.reports.kinds.judgment_set_agreement import KIND as JUDGMENT_SET_AGREEMENT
from annotation.services.reports.kinds.machine_judge import KIND as MACHINE_JUDGE
from annotation.services.reports.kinds.machine_judge import machine_judge_set_params_clean


@transaction.atomic
def evaluation_start(*, judgment_set: JudgmentSet, run_ids: list[int], conventions: str | None,
                     measures: list[str] | None, created_by) -> Job:
    runs = {run.pk: run for run in Run.objects.filter(pk__in=run_ids, dataset_id=judgment_set.dataset_id)}
    missing = [pk for pk in run_ids if pk not in runs]
    if not run_ids or missing:
        raise EvaluationError(f"run {missing[0]} is not a run of this dataset" if missing else "name at least one run")
    stored_runs_check(judgment_set=judgment_set, runs=list(runs.values()))
    if conventions and conventions not in CONVENTIONS:
        raise EvaluationError(f"unknown conventions '{conventions}' (choose from {', '.join(CONVENTIONS)})")
    return report_job_start(kind=EVALUATION.name, job_kind="evaluate", params={
        "judgment_set_id": judgment_set.pk, "run_ids": list(run_ids), "conventions": conventions, "measures": measures},
        task=task_names.EVALUATE_JUDGMENT_SET, created_by=created_by)


@transaction.atomic
def judgment_set_agreement_start(*, judgment_set: JudgmentSet, level: str, binarize_at: float | None,
                                 repeats: str | None, created_by) -> Job:
    if judgment_set.source_format != JudgmentSet.Format.RATER_LABELS:
        raise AgreementOptionsError(f"judgment set '{judgment_set.name}' is {judgment_set.source_format}: agreement "
                                    f"needs raw multi-rater labels (a rater_labels set)")
    if level not in LEVELS:
        raise AgreementOptionsError(f"level must be one of {', '.join(LEVELS)}")
    if repeats and repeats not in REPEAT_RULES:
        raise AgreementOptionsError(f"repeats must be one of {', '.join(REPEAT_RULES)}")
    return report_job_start(kind=JUDGMENT_SET_AGREEMENT.name, job_kind="judgment_set_agreement", params={
        "judgment_set_id": judgment_set.pk, "level": level, "binarize_at": binarize_at, "repeats": repeats},
        task=task_names.JUDGMENT_SET_AGREEMENT, created_by=created_by)


@transaction.atomic
def judgment_set_from_pool_start(*, pool: Pool, name: str | None, originals: bool, created_by) -> Job:
    if name and JudgmentSet.objects.filter(dataset_id=pool.dataset_id, name=name).exists():
        raise EvaluationError(f"judgments named '{name}' already exist in '{pool.dataset.name}'")
    job = job_create(kind="judgment_set_from_pool", params={"pool_id": pool.pk, "name": name, "originals": originals},
                     created_by=created_by)
    return job_enqueue(job=job, task=task_names.JUDGMENT_SET_FROM_POOL)


@transaction.atomic
def machine_judge_set_report_start(*, judgment_set: JudgmentSet, judge_id: int | None, params: dict | None,
                                   created_by) -> Job:
    """Raises MachineJudgeError (no such judge on the set) or ReportError (a bad parameter)."""
    judge = judgment_set_machine_judge(judgment_set=judgment_set, judge_id=judge_id)
    clean = machine_judge_set_params_clean(judge=judge, params=params)
    return report_job_start(kind=MACHINE_JUDGE.name, job_kind="report_machine_judge", params={
        "judgment_set_id": judgment_set.pk, "judge_id": judge.pk, "kind": MACHINE_JUDGE.name, "params": clean},
        task=task_names.MACHINE_JUDGE_SET_REPORT, created_by=created_by)
