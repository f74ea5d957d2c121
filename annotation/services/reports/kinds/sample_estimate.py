"""The `sample_estimate` report kind: estimates from a labelled random sample of a pool
(annotation/analysis/sample_estimates.py).

The sample is either a simple random sample of the pool's pairs drawn with a seed (`sample_size`)
or, without one, every pair decided so far: under the `pool_order` strategy with no warm-up and no
per-query stopping rule the queue hands pairs out in one seeded random order, so the pairs labelled
first are themselves a random sample. Sampled pairs that have not resolved are left out, which
assumes they are missing at random (the report says how many). Any other order (bandit,
move-to-front, shallow-first, stopping rules that read answers) chooses pairs by rank or by what
raters answered: there neither premise holds, and the report is refused with the reason
(services/judging/design.py decides; a census, every pooled pair with a verdict, is always fine).

For each run, over the pool pairs in its top `depth`: precision (the share that is relevant, i.e.
mean precision@depth when every caption has `depth` pairs) and its false negatives (relevant pairs
that are not the original clip), with Wilson intervals corrected for the finite pool. When every
pair of a run has resolved, the exact figure from the whole pool is shown beside the estimate.

Pairs resolved from imported judgments (decided with no vote and not by an admin) were not drawn:
they are the pairs a published file happened to judge, often the runs' top ranks, so counting them
as part of a random sample would bias every estimate towards them. They are judged for certain
instead, inclusion probability 1: counted exactly, left out of the population the sample stands for, and
never drawn (analysis/sample_estimates.py has the formula). A published disagreement has no verdict
and stays with the pairs to estimate, as any unresolved pair does.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from annotation.analysis.sample_estimates import (draw_sample, estimate_false_negatives, estimate_run_precision,
                                                  half_width_for_sample_size, required_sample_size)
from annotation.models import Pool, PooledPair
from annotation.selectors.reports import pool_pairs, pool_provenance, pool_runs
from annotation.services.judging.design import CENSUS, design_of_pool
from annotation.services.reports.kind import Param, ReportError, ReportKind, pool_depth
from annotation.services.reports.tables import ReportTable, confidence_text, interval_words


def sample_estimate_compute(*, pool: Pool, params: dict, progress: Callable | None = None) -> dict:
    step = progress or (lambda done, total: None)
    pairs = pool_pairs(pool=pool)
    n_pairs = int(pairs.id.size)
    runs = pool_runs(pool=pool)
    column = {run.pk: j for j, run in enumerate(runs)}
    prov_pair, prov_run, _ = pool_provenance(pool=pool, depth=params["depth"])
    in_topk = np.zeros((n_pairs, len(runs)), dtype=bool)
    in_topk[pairs.index_of(prov_pair), [column[r] for r in prov_run.tolist()]] = True
    step(1, 3)

    decided = pairs.resolved >= 0
    census = pairs.from_imported & decided & ~pairs.is_original
    census_relevant = census & (pairs.resolved == 1)
    open_pairs = np.flatnonzero(~census)
    if params["sample_size"] is None:
        drawn = np.flatnonzero(decided & ~census)
        design = "every pair resolved so far (the queue hands pairs out in seeded random order)"
    else:
        size = min(params["sample_size"], int(open_pairs.size))
        # Positions among the pairs not judged by imports: without any, the same draw as always.
        drawn = open_pairs[draw_sample(int(open_pairs.size), size, seed=params["seed"])]
        design = f"simple random sample of {size} pairs (seed {params['seed']})"
        if census.any():
            design += (f" among the {open_pairs.size} not judged by imported judgments"
                       + (f" ({params['sample_size']} asked)" if size < params["sample_size"] else ""))
    if census.any():
        design += f"; {int(census.sum())} pairs resolved from imported judgments counted exactly (probability 1)"
    sample = drawn[decided[drawn]]
    pool_design = design_of_pool(pool)
    if not (pool_design.random_order or pool_design.kind == CENSUS):
        if params["sample_size"] is None:
            raise ReportError(
                f"sample_size: without one the report takes the pairs resolved so far as a random sample, but "
                f"{pool_design.chosen}: they are no random sample, so no interval is valid. Give sample_size to draw "
                f"a random sample and judge every pair of it; or, {pool_design.next_time}")
        if sample.size < drawn.size:
            raise ReportError(
                f"{drawn.size - sample.size} of the {drawn.size} pairs of the sample have no verdict, and "
                f"{pool_design.chosen}: the pairs left without one are not missing at random, so the sample gives no "
                f"valid interval. Judge every pair of the sample first (or draw a smaller one); or, "
                f"{pool_design.next_time}")
    sample_relevant = pairs.resolved[sample] == 1
    confidence = params["confidence"]
    names = [run.name for run in runs]
    estimates = estimate_run_precision(in_run_topk=in_topk, is_original=pairs.is_original, sample_idx=sample,
                                       sample_relevant=sample_relevant, run_names=names, confidence=confidence,
                                       census=census, census_relevant=census_relevant)
    for j, name in enumerate(names):
        mine = in_topk[:, j]
        complete = bool(mine.any() and decided[mine & ~pairs.is_original].all())
        exact = (pairs.is_original[mine] | (pairs.resolved[mine] == 1)).mean() if complete else None
        estimates[name]["full_pool_precision"] = float(exact) if exact is not None else None
    step(2, 3)

    overall = estimate_false_negatives(is_original=pairs.is_original, sample_idx=sample,
                                       sample_relevant=sample_relevant, domain=~census, confidence=confidence).to_dict()
    # The proportion is over the pairs left to estimate; the pool's totals add the census's relevant pairs.
    known_relevant = int(census_relevant.sum())
    overall |= {"census_relevant": known_relevant, "total": overall["total"] + known_relevant,
                "total_low": overall["total_low"] + known_relevant, "total_high": overall["total_high"] + known_relevant}
    unknown = int((~pairs.is_original & ~census).sum())
    sampled_unknown = int((~pairs.is_original[sample]).sum())
    savings = None
    if unknown:
        savings = required_sample_size(population_size=unknown, half_width=params["half_width"], confidence=confidence)
        savings["sample_half_width"] = (half_width_for_sample_size(sample_size=sampled_unknown, population_size=unknown,
                                                                   confidence=confidence) if sampled_unknown else None)
    step(3, 3)
    return {
        "design": design,
        "population": {"pairs": n_pairs, "original_pairs": int(pairs.is_original.sum()),
                       **({"judged_by_imports": int(census.sum()), "relevant_by_imports": known_relevant}
                          if census.any() else {}),
                       "pairs_to_estimate": unknown},
        "sample": {"drawn": int(drawn.size), "resolved": int(sample.size), "left_out_unresolved": int(drawn.size - sample.size),
                   "non_original": sampled_unknown, "relevant": int(sample_relevant.sum())},
        "runs": names,
        "per_run": estimates,
        "false_negatives": overall,
        "savings": savings,
        "note": ("Precision is over each run's pool pairs within the depth (original clips count as relevant; pairs "
                 "resolved from imported judgments are counted exactly, not estimated). "
                 "Savings: labelling a random sample of n_required pairs instead of all pairs_to_estimate gives an "
                 "interval of +/- half_width on a proportion (worst case p = 0.5); saved_pairs is the labelling "
                 "that spares."),
    }


def _interval(result: dict) -> str:
    """'95% Wilson interval (finite pool)', the level as the estimates stored it."""
    stored = [entry.get("confidence") for entry in result.get("per_run", {}).values() if isinstance(entry, dict)]
    level = confidence_text(next((c for c in stored if c is not None), None))
    return f"{level} Wilson interval (finite pool)".lstrip()


def sample_estimate_tables(result: dict) -> list[ReportTable]:
    columns = ["n_pairs", "n_original", "n_sampled", "precision", "precision_low", "precision_high",
               "full_pool_precision", "false_negatives", "false_negatives_low", "false_negatives_high"]
    fn = result["false_negatives"]
    sample_rows = [["design", result["design"]]]
    sample_rows += [[f"pool {k.replace('_', ' ')}", v] for k, v in result["population"].items()]
    sample_rows += [[f"sample {k.replace('_', ' ')}", v] for k, v in result["sample"].items()]
    sample_rows += [["false negatives in pool (estimate)", fn["total"]], ["false negatives low", fn["total_low"]],
                    ["false negatives high", fn["total_high"]]]
    if result["savings"]:
        sample_rows += [[k.replace("_", " "), v] for k, v in result["savings"].items()]
    return [
        ReportTable("runs", "Per run: precision of its pool pairs within the depth, and false negatives",
                    ["run"] + columns, [[run] + [result["per_run"][run][c] for c in columns] for run in result["runs"]],
                    words=interval_words(_interval(result), {"precision": "Precision",
                                                             "false_negatives": "False negatives"})),
        ReportTable("sample", "Sample and labelling saved", ["measure", "value"], sample_rows),
    ]


def sample_size_check(*, pool: Pool, params: dict) -> None:
    if params["sample_size"] is None:
        return
    n_pairs = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL).count()
    if params["sample_size"] > n_pairs:
        raise ReportError(f"sample_size {params['sample_size']} is larger than the pool ({n_pairs} pairs)",
                          param="sample_size")


KIND = ReportKind(
    name="sample_estimate",
    title="Estimates from a sample",
    params={
        "sample_size": Param(int, None, "pairs drawn at random (null: every pair decided so far)", 1, None,
                             nullable=True),
        "seed": Param(int, 0, "seed of the draw"),
        "confidence": Param(float, 0.95, "level of the Wilson intervals", 0, 1, open_interval=True),
        "half_width": Param(float, 0.05, "the interval half-width the sample size advice aims at", 0, 1,
                            open_interval=True),
        "depth": Param(int, pool_depth, "ranks of each run estimated (default: the pool's depth)", 1, 1000),
    },
    compute=sample_estimate_compute,
    check=sample_size_check,
    tables=sample_estimate_tables,
)
