"""The `machine_judge` report of any machine judge. A pool's judge is measured as a pool report
(through report_create, against the pool's resolved labels); a judgment set's judge has no pool,
so its report belongs to the dataset, measured against the set's verdicts, with the set named in
its parameters."""
from __future__ import annotations

from django.db import transaction

from annotation.models import MachineJudge, Report
from annotation.services.machine_judges.agreement import machine_judge_result
from annotation.services.reports.create import report_create, report_save
from annotation.services.reports.kinds.machine_judge import KIND, machine_judge_set_params_clean


def machine_judge_report_create(*, judge: MachineJudge, params: dict | None = None, created_by=None, job=None,
                                progress=None) -> Report:
    """Measures the judge against people and stores its `machine_judge` report."""
    if judge.pool_id is not None:
        return report_create(pool=judge.pool, kind=KIND.name, params=dict(params or {}) | {"judge": judge.pk},
                             created_by=created_by, job=job, progress=progress)
    clean = machine_judge_set_params_clean(judge=judge, params=params)
    result = machine_judge_result(judge=judge, depth=clean["depth"], n_boot=clean["n_boot"], seed=clean["seed"],
                                  confidence=clean["confidence"], calibration_bins=clean["calibration_bins"])
    with transaction.atomic():
        return report_save(kind=KIND.name, dataset_id=judge.dataset_id,
                           title=f"{KIND.title}: {judge.name} on {judge.judgment_set.name}",
                           params=clean | {"judgment_set_id": judge.judgment_set_id}, result=result, job=job,
                           created_by=created_by)
