"""The judging simulation as a background operation (services/operations/): replaying a fully
judged pool, or stored runs against a judgment set, under each judging strategy. Its parameters
are declared once, in simulation.py (SIMULATION_PARAMS); the source's own (runs, depth,
originals) here. The check refuses a moment pool, an unfinished pool, runs of another dataset or
a moment judgment set before a job exists (a 400, not a failed job)."""
from __future__ import annotations

from collections.abc import Sequence

from django.urls import reverse

from annotation.analysis.params import Param
from annotation.models import Job, Pool, Run
from annotation.models.judgment_sets import JudgmentSet
from annotation.services.jobs import task_names
from annotation.services.judging.inputs import SimulationError, refuse_moment_pool
from annotation.services.judging.simulation import (_PAIR_FORMATS, MAX_DEPTH, SIMULATION_PARAMS,
                                                    judging_simulation_create, refuse_unfinished_pool,
                                                    simulation_params_clean)
from annotation.services.operations.operation import Operation, refusal_naming
from annotation.services.operations.start import operation_job

#: A judgment set's simulation also names the stored runs whose top-`depth` pool it replays.
SOURCE_PARAMS = {
    "run_ids": Param(list, [], "a judgment set's simulation: ids of stored runs of the dataset whose top-depth "
                     "pool is replayed", 1, None, unique_sorted=False, min_items=0, max_items=50),
    "depth": Param(int, 10, "a judgment set's simulation: each run's top-k pooled", 1, MAX_DEPTH),
    "with_originals": Param(bool, False, "a judgment set's simulation: the dataset's original positives count as "
                            "relevant without judging (FIRE's convention)"),
}
PARAMS = SIMULATION_PARAMS | SOURCE_PARAMS


def _check(*, target, params: dict) -> None:
    if isinstance(target, Pool):
        refuse_moment_pool(target)
        refuse_unfinished_pool(target)
        return
    run_ids = params["run_ids"]
    runs = list(Run.objects.filter(pk__in=list(run_ids), dataset_id=target.dataset_id))
    missing = sorted(set(run_ids) - {r.pk for r in runs})
    if not run_ids or missing:
        raise refusal_naming(SimulationError(f"run {missing[0]} is not a run of this dataset" if missing
                                             else "name at least one stored run of the dataset"), "run_ids")
    if target.source_format not in _PAIR_FORMATS:
        raise SimulationError(f"judgment set '{target.name}' is {target.source_format} moment "
                              f"ground truth: judging strategies replay caption-clip verdicts")


def _pack(target, params: dict) -> dict:
    simulation = {name: params[name] for name in SIMULATION_PARAMS}
    if isinstance(target, Pool):
        return {"pool_id": target.pk, "params": simulation}
    return {"judgment_set_id": target.pk, "run_ids": list(params["run_ids"]), "depth": params["depth"],
            "with_originals": params["with_originals"], "params": simulation}


def _run(job: Job, progress) -> dict:
    p = job.params
    if p.get("pool_id"):
        report = judging_simulation_create(pool=Pool.objects.get(pk=p["pool_id"]), params=p["params"], job=job,
                                           created_by=job.created_by, progress=progress)
    else:
        order = {pk: i for i, pk in enumerate(p["run_ids"])}
        runs = sorted(Run.objects.filter(pk__in=p["run_ids"]), key=lambda run: order[run.pk])
        report = judging_simulation_create(judgment_set=JudgmentSet.objects.get(pk=p["judgment_set_id"]),
                                           runs=runs, depth=p["depth"], with_originals=p["with_originals"],
                                           params=p["params"], job=job, created_by=job.created_by,
                                           progress=progress)
    return {"report_id": report.pk, "kind": report.kind, "url": reverse("api:report-detail", args=[report.pk]),
            "page": reverse("frontend:report-detail", args=[report.pk])}


JUDGING_SIMULATION = Operation(
    name="judging_simulation", title="Simulate judging strategies", params=PARAMS, check=_check, pack=_pack,
    run=_run, target=(Pool, JudgmentSet), error=SimulationError, legacy_task=task_names.JUDGING_SIMULATION)

OPERATIONS = (JUDGING_SIMULATION,)


def judging_simulation_start(*, pool: Pool | None = None, judgment_set: JudgmentSet | None = None,
                             run_ids: Sequence[int] = (), depth: int = 10, with_originals: bool = False,
                             params: dict | None = None, created_by=None) -> Job:
    """Checks the request (a mistake is a 400, not a failed job), then queues the simulation."""
    if (pool is None) == (judgment_set is None):
        raise SimulationError("simulate either a pool or a judgment set")
    simulation = simulation_params_clean(params)  # the command line's comma-separated forms too
    source = {} if pool is not None else {"run_ids": list(run_ids), "depth": depth, "with_originals": with_originals}
    return operation_job(JUDGING_SIMULATION, target=pool if pool is not None else judgment_set,
                         params=simulation | source, created_by=created_by)
