"""Jobs of machine judges: importing an uploaded file of machine judgments, measuring a judgment
set's machine judge against the set's verdicts (a pool's judge is a pool report), and running a
registered judge over a pool or a set."""
from __future__ import annotations

from celery import shared_task
from django.urls import reverse

from annotation.models import Dataset, MachineJudge, Pool
from annotation.models.judgment_sets import JudgmentSet
from annotation.services.jobs import job_execute, task_names
from annotation.services.machine_judges.imports import machine_judge_import
from annotation.services.machine_judges.reports import machine_judge_report_create
from annotation.services.machine_judges.runner.run import MachineJudgeRunJob
from annotation.services.storage.uploads import upload_local_path


@shared_task(name=task_names.IMPORT_MACHINE_JUDGMENTS)
def import_machine_judgments(job_id: int) -> None:
    def work(job, progress):
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

    job_execute(job_id=job_id, work=work)


@shared_task(name=task_names.MACHINE_JUDGE_SET_REPORT)
def machine_judge_set_report(job_id: int) -> None:
    def work(job, progress):
        p = job.params
        judge = MachineJudge.objects.select_related("dataset", "judgment_set").get(pk=p["judge_id"])
        report = machine_judge_report_create(judge=judge, params=p["params"], created_by=job.created_by, job=job,
                                             progress=progress)
        return {"report_id": report.pk, "kind": report.kind, "url": reverse("api:report-detail", args=[report.pk])}

    job_execute(job_id=job_id, work=work)


@shared_task(name=task_names.RUN_MACHINE_JUDGE)
def run_machine_judge(job_id: int) -> None:
    run = MachineJudgeRunJob()  # asks outside the job's transaction: a failed run keeps its answers

    def work(job, progress):
        result = run.store(job, progress)
        return result | {"url": reverse("api:machine-judge-detail", args=[result["judge_id"]])}

    job_execute(job_id=job_id, work=work, outside=run.ask)
