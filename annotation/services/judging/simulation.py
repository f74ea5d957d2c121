"""Replaying a fully judged pool or judgment set under each judging strategy (issue 15, part 4).

The analysis (annotation/analysis/judging/simulation.py) works on plain inputs: each run's ranked
lists, the truth of every pooled pair, and the original positives that count as relevant without
being judged. This module loads those inputs from the database, checks that the truth is complete
enough to replay, runs the simulation, and stores it as a `judging_simulation` report with its
parameters, library versions, the curves as CSV and the four charts as SVG files (Artefacts).

Truth rules, stated in every report:

- a pool must be fully judged: every pair resolved. A pair with no majority ("disagreement")
  counts as not relevant, FIRE's convention; any other pair (open, escalated, set aside) stops the
  simulation with the count, because replaying it would have to invent a label;
- a judgment set is read as it was imported (the file and options it keeps). Pairs the runs' top-k
  pools that the set does not judge count as not relevant, trec_eval's convention, and the report
  says how many: refusing would make every published qrels file (which judges only its own pool)
  unusable with a new run, and the count tells the reader how much the figures lean on it. A set
  that judges none of the pooled pairs is refused;
- the benchmark's original positives stay relevant whatever raters say (FIRE's convention) and
  are known without judging: they are passed as `known_relevant`, not as pairs to judge.
"""
from __future__ import annotations

import hashlib
import math
import tempfile
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import numpy as np
from django.db import transaction
from django.db.models import Count

from annotation.analysis.judging.settings import JUDGING_PARAMS
from annotation.analysis.params import Param, ParamInvalid, params_clean
from annotation.models import Artefact, Job, Pool, PooledPair, Report, Run
from annotation.provenance import report_versions
from annotation.models.judgment_sets import JudgmentSet
from annotation.selectors.reports import pool_pairs, pool_runs
from annotation.services.operations.operation import refusal_naming
from annotation.services.judging.inputs import (SimulationError, dataset_external_ids, original_positives,
                                                refuse_moment_pool, runs_rankings)
from annotation.services.reports.kinds.judging_simulation import KIND as JUDGING_SIMULATION
from annotation.services.reports.create import report_save
from annotation.storage import stored_file_delete, stored_file_open, stored_file_write
from annotation.services.storage.job_files import job_output_relative

STRATEGY_NAMES = ("pool_order", "shallow_first", "move_to_front", "bandit", "sampled")
MEASURES = ("C@1", "C@5", "C@10", "AP", "nDCG@10")
BANDIT_VARIANTS = ("mm_ns", "thompson")
CHART_NAMES = ("relevant_found", "metric_error", "kendall_tau", "ci_coverage")
CHART_TITLES = {"relevant_found": "Relevant pairs found against judgments spent",
                "metric_error": "Each run's metric error against judgments spent",
                "kendall_tau": "Kendall's tau of the system ranking against judgments spent",
                "ci_coverage": "Coverage of the 95% intervals against judgments spent"}
CSV_NAME = "curves.csv"
ARTEFACT_AREA = "exports"  # the storage area report files live in (annotation/storage)
ARTEFACT_KINDS = ("judging_curves_csv", "judging_chart_svg")
#: Judgment formats whose pairs are caption-clip verdicts (moment ground truth is about spans).
_PAIR_FORMATS = ("qrels", "sample_eval", "fire_json", "rater_labels", "pool")
MAX_REPLAYS = 10_000
MAX_DEPTH = 1000


@dataclass
class JudgingInputs:
    """The contract's plain inputs, and where they came from."""

    rankings: dict[str, dict[str, list[str]]]  # run name -> query -> ranked items
    truth: dict[tuple[str, str], bool]  # (query, item) -> relevant, for every pair to judge
    known_relevant: dict[str, set[str]]  # query -> original positives (relevant without judging)
    source: dict  # what was replayed: pool or judgment set, runs, depth
    counts: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# inputs


def _pooled_pairs(rankings: dict[str, dict[str, list[str]]]) -> set[tuple[str, str]]:
    return {(query, item) for lists in rankings.values() for query, items in lists.items() for item in items}


def refuse_unfinished_pool(pool: Pool) -> None:
    """Raises SimulationError naming how many pairs, in which states, have no resolved label."""
    decided = (PooledPair.State.RESOLVED, PooledPair.State.DISAGREEMENT)
    pairs = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL)
    lacking = dict(pairs.exclude(state__in=decided).values_list("state").annotate(n=Count("id")).order_by("state"))
    if lacking:
        labels = dict(PooledPair.State.choices)
        words = ", ".join(f"{n} {'open' if state == PooledPair.State.OPEN else labels.get(state, state).lower()}"
                          for state, n in lacking.items())
        raise SimulationError(f"pool '{pool.name}' is not fully judged: {sum(lacking.values())} of {pairs.count()} "
                              f"pairs lack a resolved label ({words}); a simulation replays known labels, so finish "
                              f"judging (or decide the escalated pairs) first")


def pool_simulation_inputs(*, pool: Pool) -> JudgingInputs:
    """A fully judged pool's runs, truth and original positives (see the module docstring)."""
    refuse_moment_pool(pool)
    refuse_unfinished_pool(pool)
    pairs = pool_pairs(pool=pool)
    captions, clips = dataset_external_ids(pool.dataset_id)
    runs = pool_runs(pool=pool)
    if not runs:
        raise SimulationError(f"pool '{pool.name}' has no runs")
    rankings = runs_rankings(runs, pool.depth, captions, clips)
    pooled = _pooled_pairs(rankings)
    known = original_positives(dataset_id=pool.dataset_id, queries={q for q, _ in pooled}, captions=captions, clips=clips)
    labels = {(captions[q], clips[c]): bool(r == 1) for q, c, r in zip(pairs.caption.tolist(), pairs.clip.tolist(),
                                                                       pairs.resolved.tolist())}
    truth, unjudged = {}, 0
    for key in pooled:
        if key[1] in known.get(key[0], ()):
            truth[key] = True  # the engine wants every pooled pair; it knows not to judge this one
            continue
        if key not in labels:
            unjudged += 1
        truth[key] = labels.get(key, False)
    disagreements = int((pairs.state == PooledPair.State.DISAGREEMENT).sum())
    inputs = JudgingInputs(rankings=rankings, truth=truth, known_relevant=known,
                           source={"pool_id": pool.pk, "pool": pool.name, "depth": pool.depth,
                                   "runs": [{"id": r.pk, "name": r.name, "checksum": r.checksum} for r in runs]})
    inputs.counts = _counts(inputs) | {"disagreements_as_not_relevant": disagreements,
                                       "unjudged_as_not_relevant": unjudged}
    if disagreements:
        inputs.notes.append(f"{disagreements} pair(s) with no majority count as not relevant (FIRE's convention).")
    if unjudged:
        inputs.notes.append(f"{unjudged} pair(s) of the runs' top-{pool.depth} are not in the pool and count as not "
                            f"relevant.")
    return inputs


def _counts(inputs: JudgingInputs) -> dict:
    known = {(q, i) for q, items in inputs.known_relevant.items() for i in items} & set(inputs.truth)
    return {"runs": len(inputs.rankings), "queries": len({q for lists in inputs.rankings.values() for q in lists}),
            "pairs_to_judge": len(inputs.truth) - len(known),
            "relevant_to_find": sum(inputs.truth.values()) - len(known), "original_positives_known": len(known)}


def _read_judgment_set(judgment_set: JudgmentSet) -> dict[str, dict[str, int]]:
    """{caption external id: {clip external id: grade}}; -1 = pooled, not judged (sample_eval)."""
    # Imported here: the evaluation package pulls in pytrec_eval, which only this path needs.
    from annotation.services.evaluation.errors import EvaluationError
    from annotation.services.evaluation.registry import JUDGMENT_FORMATS
    from annotation.services.judgment_sets.scoring import _write_dataset_tables, judgment_set_reading

    if judgment_set.source_format not in _PAIR_FORMATS:
        raise SimulationError(f"judgment set '{judgment_set.name}' is {judgment_set.source_format} moment ground "
                              f"truth: judging strategies replay caption-clip verdicts")
    try:
        path, fmt, options = judgment_set_reading(judgment_set)
        with tempfile.TemporaryDirectory(prefix="rejudge-simulate-") as folder:
            # FIRE names queries by their text: the dataset's captions map them back to ids.
            options |= _write_dataset_tables(judgment_set, judgment_set.source_format, Path(folder), False)
            judgments = JUDGMENT_FORMATS[fmt].read(path, **options)
    except EvaluationError as exc:
        raise SimulationError(str(exc)) from exc
    out: dict[str, dict[str, int]] = {}
    for query, docs in judgments.qrels.items():
        out[query] = {doc: (value[1] if isinstance(value, tuple) else int(value)) for doc, value in docs.items()}
    return out


def judgment_set_simulation_inputs(*, judgment_set: JudgmentSet, runs: Sequence[Run], depth: int = 10,
                                   with_originals: bool = False) -> JudgingInputs:
    """Stored runs' top `depth` of the set's dataset, judged by the set (see the module docstring)."""
    if not runs:
        raise SimulationError("name at least one stored run of the dataset")
    foreign = [run.name for run in runs if run.dataset_id != judgment_set.dataset_id]
    if foreign:
        raise SimulationError(f"run '{foreign[0]}' belongs to another dataset than judgment set '{judgment_set.name}'")
    moment = [run.name for run in runs if run.kind != Run.Kind.CLIP]
    if moment:
        raise SimulationError(f"run '{moment[0]}' is a moment run: judging strategies replay clip runs")
    if not 1 <= depth <= MAX_DEPTH:
        raise SimulationError(f"depth must be between 1 and {MAX_DEPTH}, got {depth}")
    grades = _read_judgment_set(judgment_set)
    captions, clips = dataset_external_ids(judgment_set.dataset_id)
    rankings = runs_rankings(runs, depth, captions, clips)
    pooled = _pooled_pairs(rankings)
    known = (original_positives(dataset_id=judgment_set.dataset_id, queries={q for q, _ in pooled}, captions=captions,
                        clips=clips) if with_originals else {})
    truth, unjudged = {}, 0
    for query, item in pooled:
        if item in known.get(query, ()):
            truth[(query, item)] = True  # the engine wants every pooled pair; it knows not to judge this one
            continue
        grade = grades.get(query, {}).get(item, -1)
        unjudged += grade < 0
        truth[(query, item)] = grade >= 1
    if truth and unjudged == len(truth):
        raise SimulationError(f"judgment set '{judgment_set.name}' judges none of the {len(truth)} pairs the runs' "
                              f"top-{depth} lists pool: nothing to replay (do the runs' caption and clip ids match "
                              f"the set's?)")
    inputs = JudgingInputs(rankings=rankings, truth=truth, known_relevant=known,
                           source={"judgment_set_id": judgment_set.pk, "judgment_set": judgment_set.name,
                                   "judgment_set_format": judgment_set.source_format,
                                   "judgment_set_checksum": judgment_set.checksum, "depth": depth,
                                   "with_originals": with_originals,
                                   "runs": [{"id": r.pk, "name": r.name, "checksum": r.checksum} for r in runs]})
    inputs.counts = _counts(inputs) | {"unjudged_as_not_relevant": int(unjudged)}
    if unjudged:
        share = unjudged / len(truth)
        inputs.notes.append(f"{unjudged} of the {len(truth)} pooled pairs ({share:.1%}) are not judged by "
                            f"'{judgment_set.name}' and count as not relevant (trec_eval's convention).")
    return inputs


# --------------------------------------------------------------------------------------------
# parameters


DEFAULT_CHECKPOINTS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
_RULES = ("remaining_relevant_below", "misses_in_a_row", "query_budget", "pool_budget")

#: Every simulation parameter, declared once: the job, the API (request fields and OpenAPI text),
#: the `simulate_judging` command and the stored report read these.
SIMULATION_PARAMS: dict[str, Param] = {
    "strategies": Param(list, list(STRATEGY_NAMES), "the judging strategies to replay (default: every one)",
                        items=str, choices=STRATEGY_NAMES, what="strategy", unique_sorted=False,
                        max_items=len(STRATEGY_NAMES)),
    "replays": Param(int, 200, "seeded repeats of each strategy", 1, MAX_REPLAYS),
    "seed": Param(int, 0, "seed of the first replay", 0, 2**32 - 1),
    "checkpoints": Param(list, list(DEFAULT_CHECKPOINTS), "shares of the pool's judgments at which the curves are "
                         "read", 0, 1, open_low=True, items=float, max_items=100),
    # The settings a pool's judging takes too: the same declarations (analysis/judging/settings.py).
    **{name: JUDGING_PARAMS[name] for name in ("warmup_depth", "sample_rate", "top_stratum_depth", "bandit_variant")},
    "measure": Param(str, "C@10", "the measure whose error and ranking the curves follow", choices=MEASURES),
    # A pool's stopping rules under the names the simulation's reports have always stored.
    "remaining_relevant_below": JUDGING_PARAMS["stop_remaining_below"],
    "misses_in_a_row": JUDGING_PARAMS["stop_misses_in_a_row"],
    **{name: JUDGING_PARAMS[name] for name in ("query_budget", "pool_budget")},
}


def _listed(value):
    """The command line's comma-separated text as a list; an empty value is the default."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()] or None
    return value if value != [] else None


def simulation_params_clean(params: dict | None) -> dict:
    """Every simulation parameter checked against SIMULATION_PARAMS, defaults filled in (stored with
    the report). Raises SimulationError naming the parameter (`param`)."""
    given = dict(params or {}) if isinstance(params, dict) or params is None else params
    if isinstance(given, dict):
        for name in ("strategies", "checkpoints"):
            if name in given:
                given[name] = _listed(given[name])
        if isinstance(given.get("checkpoints"), list):
            try:
                given["checkpoints"] = [float(c) if isinstance(c, str) else c for c in given["checkpoints"]]
            except ValueError:
                raise _refused(ParamInvalid(f"'checkpoints' must be numbers separated by commas, got "
                                            f"{params['checkpoints']!r}", param="checkpoints")) from None
    try:
        return params_clean(SIMULATION_PARAMS, given, owner="judging simulations")
    except ParamInvalid as exc:
        raise _refused(exc) from None


def _refused(exc: ParamInvalid) -> SimulationError:
    return refusal_naming(SimulationError(str(exc)), exc.param)


# --------------------------------------------------------------------------------------------
# running and storing


def analysis_versions() -> dict[str, str]:
    versions = report_versions()
    try:
        versions["rejudge"] = metadata.version("rejudge")
    except metadata.PackageNotFoundError:
        pass
    return versions


def simulation_summary(result) -> dict:
    """The report's JSON: every curve per strategy at each checkpoint, run by run where it is per run."""
    def values(array):
        return [None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v
                for v in np.asarray(array, dtype=float).tolist()]

    per_strategy = []
    for s, strategy in enumerate(result.strategies):
        coverage = np.asarray(result.ci_coverage[s], dtype=float)  # (C, R)
        with np.errstate(all="ignore"):
            coverage_mean = (np.nanmean(coverage, axis=1) if np.isfinite(coverage).any()
                             else np.full(coverage.shape[0], np.nan))
        per_strategy.append({
            "strategy": strategy,
            "share_for_90": values([result.share_for_90[s]])[0],
            "judged_share": values(result.judged_share[s]),
            "relevant_found": values(result.relevant_found[s]),
            "relevant_found_sd": values(result.relevant_found_sd[s]),
            "metric_error_max": values(result.metric_error_max[s]),
            "metric_error": {run: values(result.metric_error[s][:, r]) for r, run in enumerate(result.runs)},
            "kendall_tau": values(result.kendall_tau[s]),
            "kendall_tau_sd": values(result.kendall_tau_sd[s]),
            "ci_coverage": {run: values(coverage[:, r]) for r, run in enumerate(result.runs)},
            "ci_coverage_mean": values(coverage_mean),
            "stop_reasons": (result.stop_reasons[s] if s < len(result.stop_reasons) else {}),
        })
    return {"strategies": list(result.strategies), "checkpoints": values(result.checkpoints),
            "runs": list(result.runs), "measure": result.measure, "replays": int(result.replays),
            "n_pairs": int(result.n_pairs), "n_relevant": int(result.n_relevant),
            "full_values": dict(zip(result.runs, values(result.full_values))), "per_strategy": per_strategy,
            "analysis_params": result.params}


def judging_simulation_run(*, inputs: JudgingInputs, params: dict, progress: Callable | None = None):
    """Runs the analysis simulation with checked parameters; returns its SimulationResult."""
    from annotation.analysis.judging.simulation import simulate
    from annotation.analysis.judging.stopping import StoppingRules
    from annotation.analysis.judging.strategies import StrategyParams

    strategy_params = StrategyParams(warmup_depth=params["warmup_depth"], seed=params["seed"],
                                     bandit_variant=params["bandit_variant"], sample_rate=params["sample_rate"],
                                     top_stratum_depth=params["top_stratum_depth"])
    rules = None
    if any(params.get(name) is not None for name in _RULES):
        rules = StoppingRules(**{name: params.get(name) for name in _RULES})
    if not inputs.truth:
        raise SimulationError("the runs pool no pair to judge: nothing to replay")
    # The analysis reports (message, fraction done); jobs and the console count (done, total, message).
    report = (lambda message, fraction: progress(round(1000 * fraction), 1000, message)) if progress else None
    return simulate(inputs.rankings, inputs.truth, strategies=params["strategies"], replays=params["replays"],
                    seed=params["seed"], checkpoints=params["checkpoints"], params=strategy_params, rules=rules,
                    known_relevant=inputs.known_relevant, measure=params["measure"], progress=report)


def _write_artefact(*, dataset_id: int, report: Report, folder: Path, name: str, text: str, kind: str,
                    content_type: str, job: Job | None, written: list[str]) -> Artefact:
    relative = (job_output_relative(job_id=job.pk, name=f"report-{report.pk}-{name}") if job
                else folder / name).as_posix()
    data = text.encode()
    with stored_file_write(ARTEFACT_AREA, relative) as out:
        out.write(data)
    written.append(relative)
    return Artefact.objects.create(report=report, dataset_id=dataset_id, kind=kind, name=name, path=relative,
                                   content_type=content_type, size=len(data), sha256=hashlib.sha256(data).hexdigest(),
                                   params={"report_id": report.pk}, job=job)


def judging_report_file(*, report: Report, name: str) -> tuple[Artefact, bytes] | None:
    """A file of a judging simulation report by its name (curves.csv, relevant_found.svg...), or
    None when the report has no such file."""
    artefact = Artefact.objects.filter(report=report, name=name, kind__in=ARTEFACT_KINDS).first()
    if artefact is None:
        return None
    with stored_file_open(ARTEFACT_AREA, artefact.path) as handle:
        return artefact, handle.read()


def judging_simulation_store(*, dataset_id: int, pool: Pool | None, inputs: JudgingInputs, params: dict, result,
                             summary: dict, job: Job | None = None, created_by=None) -> Report:
    """The report (params, versions, summary) with the curves CSV and the four SVG charts as files.

    No file outlives its row: a failure removes what was written, and a job's files sit in its own
    folder, which the job's clean-up empties if the transaction dies with the worker."""
    from annotation.analysis.judging.simulation import curves_svg
    from annotation.formats.judging_curves import curves_csv

    what = inputs.source.get("pool") or inputs.source.get("judgment_set")
    written: list[str] = []
    try:
        with transaction.atomic():
            report = report_save(
                kind=JUDGING_SIMULATION.name, dataset_id=dataset_id, pool=pool, job=job, created_by=created_by,
                title=f"{JUDGING_SIMULATION.title}: {what}", params=params | {"source": inputs.source},
                versions=analysis_versions(),
                result=summary | {"counts": inputs.counts, "notes": inputs.notes,
                                  "files": [CSV_NAME, *(f"{c}.svg" for c in CHART_NAMES)]})
            folder = Path("judging_simulations") / f"{report.pk}-{uuid.uuid4().hex[:8]}"
            common = {"dataset_id": dataset_id, "report": report, "folder": folder, "job": job, "written": written}
            _write_artefact(name=CSV_NAME, text=curves_csv(result), kind="judging_curves_csv",
                            content_type="text/csv; charset=utf-8", **common)
            charts = curves_svg(result)
            for chart in CHART_NAMES:
                _write_artefact(name=f"{chart}.svg", text=charts[chart], kind="judging_chart_svg",
                                content_type="image/svg+xml", **common)
        return report
    except BaseException:
        for name in written:
            stored_file_delete(ARTEFACT_AREA, name)
        raise


def judging_simulation_create(*, pool: Pool | None = None, judgment_set: JudgmentSet | None = None,
                              runs: Sequence[Run] = (), depth: int = 10, with_originals: bool = False,
                              params: dict | None = None, job: Job | None = None, created_by=None,
                              progress: Callable | None = None) -> Report:
    """Loads the inputs, simulates and stores the report (the job's and the command's one call)."""
    clean = simulation_params_clean(params)
    if (pool is None) == (judgment_set is None):
        raise SimulationError("simulate either a pool or a judgment set")
    if pool is not None:
        inputs = pool_simulation_inputs(pool=pool)
        dataset_id = pool.dataset_id
    else:
        inputs = judgment_set_simulation_inputs(judgment_set=judgment_set, runs=runs, depth=depth,
                                                with_originals=with_originals)
        dataset_id = judgment_set.dataset_id
    result = judging_simulation_run(inputs=inputs, params=clean, progress=progress)
    return judging_simulation_store(dataset_id=dataset_id, pool=pool, inputs=inputs, params=clean, result=result,
                                    summary=simulation_summary(result), job=job,
                                    created_by=created_by)
