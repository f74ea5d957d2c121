"""The "active" judging design's inputs: a machine judge's verdicts on a query's pool pairs, as
probabilities of relevance (annotation/analysis/machine_agreement.py relevance_probability), the
pool's allocation constants (services/judging/order.py active_scale_draw, stored
on the pool when the design is drawn) and each query's inclusion probabilities (active_design)."""
from __future__ import annotations

import functools

import numpy as np
from django.db import connection

from annotation import prepared
from annotation.analysis.judging.strategies import StrategyParams, active_design
from annotation.analysis.machine_agreement import relevance_probability
from annotation.models import MachineJudgment, Pool, PooledPair

_READ_BATCH = 20_000  # pair ids per read


def snapshots_confidences(judge_id: int | None, snapshots: dict) -> dict[int, np.ndarray]:
    """Per caption id of `snapshots` (caption id -> its query snapshot): the judge's probability
    that each of the snapshot's pairs (in its order) is relevant; nan where it gave no verdict (the
    design then counts the pair as most uncertain, f = 0.5). Two reads for any number of queries."""
    out = {caption: np.full(len(snap.pair_ids), np.nan) for caption, snap in snapshots.items()}
    pair_ids = [int(p) for snap in snapshots.values() for p in snap.pair_ids.tolist()]
    if judge_id is None or not pair_ids:
        return out
    clip_of: dict[int, int] = {}
    for start in range(0, len(pair_ids), _READ_BATCH):
        clip_of.update(PooledPair.objects.filter(pk__in=pair_ids[start:start + _READ_BATCH]).values_list("pk", "clip_id"))
    verdicts = {(caption, clip): (label, score) for caption, clip, label, score in MachineJudgment.objects.filter(
        judge_id=judge_id, caption_id__in=list(snapshots)).values_list("caption_id", "clip_id", "label", "score")}
    for caption, snap in snapshots.items():
        for i, pair_id in enumerate(snap.pair_ids.tolist()):
            verdict = verdicts.get((caption, clip_of.get(pair_id)))
            if verdict is not None:
                label, score = verdict
                out[caption][i] = float(relevance_probability(label == MachineJudgment.Label.RELEVANT,
                                                              np.nan if score is None else score))
    return out


# One query's verdicts, by pair: what snapshots_confidences reads in two ORM queries (the pairs'
# clips, then the judge's verdicts on the caption), in one prepared statement. It runs on every
# label that judges a pair of an "active" pool (order.query_refresh), where building the two
# querysets cost more CPU than PostgreSQL's answer. A judge has one verdict per caption and clip
# (machinejudgment_unique_pair), so a pair has at most one row.
_QUERY_VERDICTS_SQL = """
SELECT pp.id, mj.label, mj.score
FROM {pair} pp JOIN {judgment} mj ON mj.judge_id = %(judge)s AND mj.caption_id = %(caption)s AND mj.clip_id = pp.clip_id
WHERE pp.id = ANY(%(pairs)s)
"""


@functools.cache
def _query_verdicts_sql() -> str:
    return _QUERY_VERDICTS_SQL.format(pair=PooledPair._meta.db_table, judgment=MachineJudgment._meta.db_table)


def query_confidences(judge_id: int | None, caption_id: int, snapshot) -> np.ndarray:
    """snapshots_confidences(judge_id, {caption_id: snapshot})[caption_id], in one statement."""
    out = np.full(len(snapshot.pair_ids), np.nan)
    pair_ids = [int(p) for p in snapshot.pair_ids.tolist()]
    if judge_id is None or not pair_ids:
        return out
    if connection.vendor != "postgresql":  # no arrays to bind elsewhere
        return snapshots_confidences(judge_id, {caption_id: snapshot})[caption_id]
    with connection.cursor() as cursor:
        prepared.execute(cursor, _query_verdicts_sql(), {"judge": judge_id, "caption": caption_id, "pairs": pair_ids})
        verdicts = {pair_id: (label, score) for pair_id, label, score in cursor.fetchall()}
    found = [(i, verdicts[pair_id]) for i, pair_id in enumerate(pair_ids) if pair_id in verdicts]
    if found:
        index = np.array([i for i, _ in found])
        relevant = np.array([label == MachineJudgment.Label.RELEVANT for _, (label, _) in found])
        score = np.array([np.nan if score is None else score for _, (_, score) in found], dtype=np.float64)
        out[index] = relevance_probability(relevant, score)
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


def active_inclusion(pool: Pool, caption_id: int, snapshot, params: StrategyParams, scale,
                     confidence=None) -> np.ndarray:
    """The complete sample's inclusion probability of each pair of a query snapshot, at the pool's
    scale (services/judging/order.py active_scale_of). `confidence`: the machine's, when the caller
    read a batch of queries' at once (snapshots_confidences)."""
    if confidence is None:
        confidence = query_confidences(pool.judging_machine_judge_id, caption_id, snapshot)
    return active_design(snapshot.run_lists, confidence, params=params, query_key=int(caption_id),
                         n_pairs=len(snapshot.pair_ids), known=design_known(pool, snapshot),
                         scale=(float(scale[0]), float(scale[1])))["pi"]
