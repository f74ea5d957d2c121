"""The pools area's background operations (services/operations/): building a pool from runs'
top-k pairs, adding a run to a pool, recomputing a large pool's judging order after its settings
changed, and building a moment pool or a sampled pool of deep runs. Each is declared once here:
its parameters, the check that refuses a request before a job exists (a mistake is a 400, not a
failed job), and the run that calls the service."""
from __future__ import annotations

from annotation.analysis.params import REQUIRED, Param
from annotation.models import Dataset, Job, Pool, PoolRun, Run
from annotation.services.deletes import delete_operation
from annotation.services.jobs import task_names
from annotation.services.judging import pool_judging_refresh
from annotation.services.judging.plan import JudgingError, active_judge_check, judging_settings_check
from annotation.services.operations.operation import Operation, refusal_naming
from annotation.services.operations.start import operation_job
from annotation.services.pools.build import (PoolError, known_pairs_add, pool_add_run, pool_create,
                                             unplayable_clips_check)
from annotation.services.pools.moments import MOMENT_POOL_PARAMS, moment_pool_create, moment_request_check
from annotation.services.pools.sampled import STRATA, sampled_pool_create, sampled_request_check, strata_validate

# --- build a pool ------------------------------------------------------------------------------

BUILD_PARAMS = {
    "name": Param(str, REQUIRED, "the pool's name, unique in its dataset", max_length=200),
    "run_ids": Param(list, REQUIRED, "ids of the runs of the dataset whose top-k pairs are pooled", 1, None,
                     unique_sorted=False),
    "depth": Param(int, 10, "k: each run's top-k clips per caption are pooled", 1, 1000),
    "include_original_positives": Param(bool, False, "also pool the dataset's original positive pairs"),
    "redundancy": Param(float, 0.1, "share of pairs asked of two raters (agreement is measured on them)", 0, 1),
    "seed": Param(int, 0, "seed of the random draws (redundant pairs, order)", 0, 2**62),
    "gold_rate": Param(float, 0.0, "share of a rater's pairs that are gold pairs with a known answer", 0, 1),
    "training_pass_mark": Param(float, 0.8, "share of training pairs a rater must answer right", 0, 1),
    "lease_seconds": Param(int, 300, "how long a rater holds a pair before it goes back to the queue", 10, 24 * 3600),
    "broken_reports_limit": Param(int, 3, "reports of a broken pair that take it out of the queue", 1, 100),
    "skip_unplayable": Param(bool, False, "leave out the clips that failed the media check (without it they refuse "
                             "the build); the build's result names them"),
    "judging": Param(dict, None, "the judging strategy and stopping rules by name (strategy, warmup_depth, "
                     "bandit_variant, sample_rate, top_stratum_depth, query_budget, pool_budget, "
                     "stop_remaining_below, stop_misses_in_a_row, machine_judge)"),
}


def _build_check(*, target: Dataset, params: dict) -> None:
    runs = list(Run.objects.filter(pk__in=params["run_ids"], dataset=target))
    missing = sorted(set(params["run_ids"]) - {r.pk for r in runs})
    if missing:
        raise PoolError(f"runs {missing} do not exist in dataset '{target.name}'")
    if Pool.objects.filter(dataset=target, name=params["name"]).exists():
        raise PoolError(f"a pool named '{params['name']}' already exists for '{target.name}'")
    if any(r.kind == Run.Kind.MOMENT for r in runs):
        raise PoolError("moment runs need a moment pool")
    unplayable_clips_check(target, skip=params["skip_unplayable"], runs=runs, depth=params["depth"],
                           include_original_positives=params["include_original_positives"])
    if params["judging"]:
        try:
            fields = judging_settings_check(params["judging"], dataset=target)
            active_judge_check(fields.get("judging_strategy", "pool_order"), fields.get("judging_machine_judge"))
        except JudgingError as exc:
            raise refusal_naming(PoolError(str(exc)), "judging") from exc


def _build_run(job: Job, progress) -> dict:
    p = job.params
    dataset = Dataset.objects.get(pk=p["dataset_id"])
    runs = list(Run.objects.filter(pk__in=p["run_ids"], dataset=dataset))
    pool = pool_create(dataset=dataset, name=p["name"], runs=runs, depth=p.get("depth", 10),
                       include_original_positives=p.get("include_original_positives", False),
                       redundancy=p.get("redundancy", 0.1), seed=p.get("seed", 0), gold_rate=p.get("gold_rate", 0.0),
                       training_pass_mark=p.get("training_pass_mark", 0.8), lease_seconds=p.get("lease_seconds", 300),
                       broken_reports_limit=p.get("broken_reports_limit", 3), judging=p.get("judging"),
                       skip_unplayable=p.get("skip_unplayable", False), progress=progress)
    # Checked when the build was asked for (the build form's copy or CSV), so they fit this dataset.
    if p.get("known_pairs"):
        known_pairs_add(pool=pool, items=p["known_pairs"])
    return {"pool_id": pool.pk, "name": pool.name, "pairs": pool.pairs.filter(role="pool").count(),
            "double_labelled": pool.pairs.filter(role="pool", required_labels__gte=2).count(),
            "training_pairs": pool.pairs.filter(role="training").count(),
            "gold_pairs": pool.pairs.filter(role="gold").count(),
            "skipped_unplayable": {"count": len(pool.skipped_unplayable), "clip_ids": list(pool.skipped_unplayable)}}


POOL_BUILD = Operation(
    name="build_pool", title="Build a pool", params=BUILD_PARAMS, check=_build_check, run=_build_run,
    target=Dataset, target_field="dataset_id", error=PoolError, legacy_task=task_names.BUILD_POOL)


def pool_build_start(*, dataset: Dataset, name: str, run_ids: list[int], options: dict, created_by) -> Job:
    """Checks the request up front (so mistakes get a 400, not a failed job) and queues the build.
    `options`: the other declared parameters, and `known_pairs` (checked by the caller)."""
    options = dict(options)
    known = options.pop("known_pairs", None)
    return operation_job(POOL_BUILD, target=dataset, params={"name": name, "run_ids": list(run_ids), **options},
                         inputs=(lambda: {"known_pairs": known}) if known else None, created_by=created_by)


# --- add a run ---------------------------------------------------------------------------------

def _add_run_check(*, target: Pool, params: dict) -> None:
    run = Run.objects.filter(pk=params["run_id"]).first()
    if run is None:
        raise PoolError(f"run {params['run_id']} does not exist")
    if hasattr(target, "moment_design") or hasattr(target, "sampled_design"):
        # Their pairs come from span merging or stratified sampling; adding a run's plain top-k
        # would queue pairs outside the design (a 1,000-deep run would queue all its ranks).
        raise PoolError(f"pool '{target.name}' is a moment or sampled pool; build a new one to add runs")
    if run.dataset_id != target.dataset_id:
        raise PoolError(f"run '{run.name}' belongs to another dataset")
    if PoolRun.objects.filter(pool=target, run=run).exists():
        raise PoolError(f"run '{run.name}' is already in pool '{target.name}'")


def _add_run_run(job: Job, progress) -> dict:
    pool = Pool.objects.get(pk=job.params["pool_id"])
    run = Run.objects.get(pk=job.params["run_id"])
    added = pool_add_run(pool=pool, run=run)
    return {"pool_id": pool.pk, "run": run.name, "pairs_added": added}


POOL_ADD_RUN = Operation(
    name="pool_add_run", title="Add a run to a pool", run=_add_run_run, check=_add_run_check,
    params={"run_id": Param(int, REQUIRED, "id of a run of the pool's dataset; only its new pairs are queued", 1)},
    target=Pool, target_field="pool_id", error=PoolError, legacy_task=task_names.POOL_ADD_RUN)


def pool_add_run_start(*, pool: Pool, run: Run, created_by) -> Job:
    return operation_job(POOL_ADD_RUN, target=pool, params={"run_id": run.pk}, created_by=created_by)


# --- recompute the judging order ---------------------------------------------------------------

def _reorder_run(job: Job, progress) -> dict:
    """A large pool's new judging settings: every query's order and stop state recomputed."""
    pool = Pool.objects.get(pk=job.params["pool_id"])
    return {"pool_id": pool.pk, **pool_judging_refresh(pool=pool, design=job.params.get("design", False),
                                                       progress=progress)}


JUDGING_REORDER = Operation(
    name="judging_reorder", title="Recompute a pool's judging order", run=_reorder_run,
    params={"design": Param(bool, False, "the sampling design changed too: draw it again")},
    target=Pool, target_field="pool_id", error=PoolError, legacy_task=task_names.JUDGING_REORDER)


def judging_reorder_start(*, pool: Pool, design: bool, created_by) -> Job:
    """A large pool's recomputation after a judging settings change, as a job (services/judging
    pool_judging_refresh; the new settings already apply to every label from now on)."""
    return operation_job(JUDGING_REORDER, target=pool, params={"design": design}, created_by=created_by)


# --- build a moment pool, a sampled pool -------------------------------------------------------

def _request_runs(dataset: Dataset, run_ids: list[int]) -> list[Run]:
    """The named runs of the dataset, in the order asked (a run 'adds' what no run before it did)."""
    found = Run.objects.in_bulk(run_ids)
    runs = [found[pk] for pk in run_ids if pk in found and found[pk].dataset_id == dataset.pk]
    missing = sorted(set(run_ids) - {r.pk for r in runs})
    if missing:
        raise PoolError(f"runs {missing} do not exist in dataset '{dataset.name}'", param="run_ids")
    return runs


MOMENT_BUILD_PARAMS = {
    "name": BUILD_PARAMS["name"], "run_ids": BUILD_PARAMS["run_ids"], **MOMENT_POOL_PARAMS,
    "redundancy": BUILD_PARAMS["redundancy"], "seed": BUILD_PARAMS["seed"],
}


def _moment_build_check(*, target: Dataset, params: dict) -> None:
    moment_request_check(target, params["name"], _request_runs(target, params["run_ids"]), params["depth"],
                         params["iou_threshold"])


def _moment_build_run(job: Job, progress) -> dict:
    p = job.params
    dataset = Dataset.objects.get(pk=p["dataset_id"])
    pool = moment_pool_create(dataset=dataset, name=p["name"], runs=_request_runs(dataset, p["run_ids"]),
                              depth=p.get("depth", 10), iou_threshold=p.get("iou_threshold", 0.7),
                              redundancy=p.get("redundancy", 0.1), seed=p.get("seed", 0), progress=progress)
    return {"pool_id": pool.pk, "name": pool.name, "spans": pool.pairs.filter(role="pool").count(),
            "double_labelled": pool.pairs.filter(role="pool", required_labels__gte=2).count()}


MOMENT_POOL_BUILD = Operation(
    name="build_moment_pool", title="Build a moment pool", params=MOMENT_BUILD_PARAMS, check=_moment_build_check,
    run=_moment_build_run, target=Dataset, target_field="dataset_id", error=PoolError,
    legacy_task=task_names.BUILD_MOMENT_POOL)


SAMPLED_BUILD_PARAMS = {
    "name": BUILD_PARAMS["name"], "run_ids": BUILD_PARAMS["run_ids"], "strata": STRATA,
    "seed": BUILD_PARAMS["seed"], "redundancy": BUILD_PARAMS["redundancy"],
}


def _sampled_build_check(*, target: Dataset, params: dict) -> dict:
    sampled_request_check(target, params["name"], _request_runs(target, params["run_ids"]))
    return params | {"strata": strata_validate(params["strata"])}


def _sampled_build_run(job: Job, progress) -> dict:
    p = job.params
    dataset = Dataset.objects.get(pk=p["dataset_id"])
    pool = sampled_pool_create(dataset=dataset, name=p["name"], runs=_request_runs(dataset, p["run_ids"]),
                               strata=p["strata"], seed=p.get("seed", 0), redundancy=p.get("redundancy", 0.1),
                               progress=progress)
    design = pool.sampled_design
    return {"pool_id": pool.pk, "name": pool.name, "full_pool_size": design.full_pool_size,
            "sampled": design.sampled_count, "judgments_saved": design.judgments_saved}


SAMPLED_POOL_BUILD = Operation(
    name="build_sampled_pool", title="Build a sampled pool of deep runs", params=SAMPLED_BUILD_PARAMS,
    check=_sampled_build_check, run=_sampled_build_run, target=Dataset, target_field="dataset_id", error=PoolError,
    legacy_task=task_names.BUILD_SAMPLED_POOL)


#: Set-based, in the job's transaction (services/deletes.py); the pool's judgment sets and
#: submissions stay, no longer naming it.
POOL_DELETE = delete_operation(Pool, "pool_id", name="delete_pool")

OPERATIONS = (POOL_BUILD, POOL_ADD_RUN, JUDGING_REORDER, MOMENT_POOL_BUILD, SAMPLED_POOL_BUILD, POOL_DELETE)
