"""Estimates from a labelled random sample of a pool (annotation/analysis/sample_estimates.py).

The sample is either a simple random sample of the pool's pairs drawn with a seed (`sample_size`)
or, without one, every pair decided so far: the queue hands pairs out in a seeded random order, so
the pairs labelled first are themselves a random sample. Sampled pairs that have not resolved are
left out, which assumes they are missing at random (the report says how many).

For each run, over the pool pairs in its top `depth`: precision (the share that is relevant, i.e.
mean precision@depth when every caption has `depth` pairs) and its false negatives (relevant pairs
that are not the original clip), with Wilson intervals corrected for the finite pool. When every
pair of a run has resolved, the exact figure from the whole pool is shown beside the estimate.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from annotation.analysis.sample_estimates import (draw_sample, estimate_false_negatives, estimate_run_precision,
                                                  half_width_for_sample_size, required_sample_size)
from annotation.models import Pool
from annotation.selectors.reports import pool_pairs, pool_provenance, pool_runs


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
    if params["sample_size"] is None:
        drawn = np.flatnonzero(decided)
        design = "every pair resolved so far (the queue hands pairs out in seeded random order)"
    else:
        drawn = draw_sample(n_pairs, params["sample_size"], seed=params["seed"])
        design = f"simple random sample of {params['sample_size']} pairs (seed {params['seed']})"
    sample = drawn[decided[drawn]]
    sample_relevant = pairs.resolved[sample] == 1
    confidence = params["confidence"]
    names = [run.name for run in runs]
    estimates = estimate_run_precision(in_run_topk=in_topk, is_original=pairs.is_original, sample_idx=sample,
                                       sample_relevant=sample_relevant, run_names=names, confidence=confidence)
    for j, name in enumerate(names):
        mine = in_topk[:, j]
        complete = bool(mine.any() and decided[mine & ~pairs.is_original].all())
        exact = (pairs.is_original[mine] | (pairs.resolved[mine] == 1)).mean() if complete else None
        estimates[name]["full_pool_precision"] = float(exact) if exact is not None else None
    step(2, 3)

    overall = estimate_false_negatives(is_original=pairs.is_original, sample_idx=sample,
                                       sample_relevant=sample_relevant, confidence=confidence)
    unknown = int((~pairs.is_original).sum())
    sampled_unknown = int((~pairs.is_original[sample]).sum())
    savings = None
    if unknown:
        savings = required_sample_size(population_size=unknown, half_width=params["half_width"], confidence=confidence)
        savings["sample_half_width"] = (half_width_for_sample_size(sample_size=sampled_unknown, population_size=unknown,
                                                                   confidence=confidence) if sampled_unknown else None)
    step(3, 3)
    return {
        "design": design,
        "population": {"pairs": n_pairs, "original_pairs": n_pairs - unknown, "pairs_to_estimate": unknown},
        "sample": {"drawn": int(drawn.size), "resolved": int(sample.size), "left_out_unresolved": int(drawn.size - sample.size),
                   "non_original": sampled_unknown, "relevant": int(sample_relevant.sum())},
        "runs": names,
        "per_run": estimates,
        "false_negatives": overall.to_dict(),
        "savings": savings,
        "note": ("Precision is over each run's pool pairs within the depth (original clips count as relevant). "
                 "Savings: labelling a random sample of n_required pairs instead of all pairs_to_estimate gives an "
                 "interval of +/- half_width on a proportion (worst case p = 0.5); saved_pairs is the labelling "
                 "that spares."),
    }
