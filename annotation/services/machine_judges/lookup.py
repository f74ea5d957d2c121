"""Which machine judge a request means: by id, or a pool's or judgment set's only one."""
from __future__ import annotations

from annotation.models import MachineJudge
from annotation.models.judgment_sets import JudgmentSet
from annotation.services.machine_judges.errors import MachineJudgeError


def machine_judge_get(*, judge_id: int) -> MachineJudge:
    try:
        return MachineJudge.objects.select_related("dataset", "pool", "judgment_set").get(pk=judge_id)
    except MachineJudge.DoesNotExist as exc:
        raise MachineJudgeError(f"no machine judge with id {judge_id}") from exc


def judge_named(judges, judge_id: int | None, where: str) -> MachineJudge:
    """The judge `judge_id` among `judges`, or their only one when no id is given."""
    if judge_id is not None:
        if isinstance(judge_id, bool) or not isinstance(judge_id, int):
            raise MachineJudgeError(f"the parameter 'judge' must be a machine judge's id, got {judge_id!r}")
        judge = judges.filter(pk=judge_id).first()
        if judge is None:
            raise MachineJudgeError(f"{where} has no machine judge with id {judge_id}")
        return judge
    found = list(judges[:2])
    if len(found) != 1:
        raise MachineJudgeError(f"{where} has {'no' if not found else 'several'} machine judges; "
                                f"name one with the parameter 'judge'")
    return found[0]


def judgment_set_machine_judge(*, judgment_set: JudgmentSet, judge_id: int | None = None) -> MachineJudge:
    """The set's judge `judge_id`, or its only machine judge."""
    return judge_named(MachineJudge.objects.filter(judgment_set=judgment_set).select_related("dataset", "judgment_set"),
                        judge_id, f"judgment set '{judgment_set.name}'")
