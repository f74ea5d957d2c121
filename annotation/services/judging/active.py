"""The "active" judging design's inputs: a machine judge's verdicts on a query's pool pairs, as
probabilities of relevance (annotation/analysis/machine_agreement.py relevance_probability), the
pool's allocation constants (services/judging/order.py active_scale_draw, stored
on the pool when the design is drawn) and each query's inclusion probabilities (active_design)."""
from __future__ import annotations

import numpy as np

from annotation.analysis.judging.strategies import StrategyParams, active_design
from annotation.analysis.machine_agreement import relevance_probability
from annotation.models import MachineJudgment, Pool, PooledPair

def pair_confidences(judge_id: int | None, caption_id: int, pair_ids) -> np.ndarray:
    """Per pair id (in the given order): the judge's probability that the pair is relevant; nan
    where it gave no verdict (the design then counts the pair as most uncertain, f = 0.5)."""
    pair_ids = [int(p) for p in pair_ids]
    out = np.full(len(pair_ids), np.nan)
    if judge_id is None or not pair_ids:
        return out
    clip_of = dict(PooledPair.objects.filter(pk__in=pair_ids).values_list("pk", "clip_id"))
    verdicts = {clip: (label, score) for clip, label, score in MachineJudgment.objects.filter(
        judge_id=judge_id, caption_id=caption_id, clip_id__in=set(clip_of.values())).values_list("clip_id", "label", "score")}
    for i, pair_id in enumerate(pair_ids):
        verdict = verdicts.get(clip_of.get(pair_id))
        if verdict is not None:
            label, score = verdict
            out[i] = float(relevance_probability(label == MachineJudgment.Label.RELEVANT,
                                                 np.nan if score is None else score))
    return out


def design_known(pool: Pool, snapshot) -> list[int]:
    """The pairs of a query snapshot that the "active" design leaves to the convention (the
    caption's original positive is relevant): neither sampled nor counted, as the estimates and
    bench_ppi take them, and a run that lists one is settled (no leverage); none when the pool
    judges the original positives as a check on raters."""
    return [] if pool.include_original_positives else list(snapshot.originals)


def order_known(pool: Pool, snapshot) -> list[int] | None:
    """`known` for query_order and prefix_inclusion_probabilities: the active design's (the order
    must leave out what the design left out); None for "sampled", whose stored designs were
    drawn without it (changing it would change running pools' inclusion probabilities)."""
    return design_known(pool, snapshot) if pool.judging_strategy == "active" else None


def active_inclusion(pool: Pool, caption_id: int, snapshot, params: StrategyParams, scale) -> np.ndarray:
    """The complete sample's inclusion probability of each pair of a query snapshot, at the pool's
    scale (services/judging/order.py active_scale_of)."""
    confidence = pair_confidences(pool.judging_machine_judge_id, caption_id, snapshot.pair_ids.tolist())
    return active_design(snapshot.run_lists, confidence, params=params, query_key=int(caption_id),
                         n_pairs=len(snapshot.pair_ids), known=design_known(pool, snapshot),
                         scale=(float(scale[0]), float(scale[1])))["pi"]
