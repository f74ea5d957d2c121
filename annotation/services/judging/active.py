"""The "active" judging design's inputs: a machine judge's verdicts on a query's pool pairs, as
probabilities of relevance (annotation/analysis/machine_agreement.py relevance_probability), the
pool's allocation constants (annotation/analysis/judging/strategies.py active_pool_scale, stored
on the pool when the design is drawn) and each query's inclusion probabilities (active_design)."""
from __future__ import annotations

import numpy as np

from annotation.analysis.judging.strategies import StrategyParams, active_design, active_pool_scale
from annotation.analysis.machine_agreement import relevance_probability
from annotation.models import MachineJudgment, Pool, PooledPair, PoolQuery

SCALE_BATCH = 500  # queries read per snapshot query when the pool's scale is drawn


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


def active_scale_draw(pool: Pool, params: StrategyParams) -> tuple[float, float]:
    """The pool's (c0, c1) from every query's pairs and the machine's verdicts (one allocation
    over the whole pool: a query whose runs the machine deems settled gets few judgments), stored
    on the pool. Called when the design is drawn (build, or a design setting changed before any
    label)."""
    from annotation.services.judging.order import queries_snapshots

    captions = list(PoolQuery.objects.filter(pool=pool).order_by("slot").values_list("caption_id", flat=True))

    def queries():
        for start in range(0, len(captions), SCALE_BATCH):
            batch = captions[start:start + SCALE_BATCH]
            snapshots = queries_snapshots(pool.pk, batch)
            for caption_id in batch:
                snap = snapshots.get(caption_id)
                if snap is None or not len(snap.pair_ids):
                    continue
                confidence = pair_confidences(pool.judging_machine_judge_id, caption_id, snap.pair_ids.tolist())
                yield snap.run_lists, len(snap.pair_ids), confidence, None

    scale = active_pool_scale(queries(), params=params)
    pool.judging_active_scale = [float(scale[0]), float(scale[1])]
    Pool.objects.filter(pk=pool.pk).update(judging_active_scale=pool.judging_active_scale)
    return scale


def active_inclusion(pool: Pool, caption_id: int, snapshot, params: StrategyParams) -> np.ndarray:
    """The complete sample's inclusion probability of each pair of a query snapshot, at the pool's
    stored scale (drawn now if the pool has none yet: a pool made active before scales were
    stored)."""
    scale = pool.judging_active_scale
    if scale is None:
        scale = active_scale_draw(pool, params)
    confidence = pair_confidences(pool.judging_machine_judge_id, caption_id, snapshot.pair_ids.tolist())
    return active_design(snapshot.run_lists, confidence, params=params, query_key=int(caption_id),
                         n_pairs=len(snapshot.pair_ids), scale=(float(scale[0]), float(scale[1])))["pi"]
