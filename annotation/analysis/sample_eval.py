"""The measures NIST's ``sample_eval.pl`` prints for stratified (TRECVID) judgments, in NumPy.

Follows the TRECVID AVS version of the script (max result size 1,000 and precision ranks
5, 10, 15, 20, 30, 100, 200, 500, 1000 since 2016). Qrels are ``{topic: {shot: (stratum, rel)}}``
with ``rel`` >= 1 relevant (the grade is infNDCG's gain), 0 not relevant, -1 pooled but not
judged; a run is ``{topic: [shot ids in rank order]}`` (order them with :func:`trec_order`, the
script's tie rule). For each topic, with strata ``s`` (``N_s`` pooled, ``n_s`` judged, ``r_s``
relevant) and the run cut at ``max_result_size`` ranks:

* **infAP**: xinfAP, :func:`annotation.analysis.infap.xinfap_arrays` (formula there), multiplied
  by ``R_hat / max_result_size`` when ``R_hat`` exceeds it (NIST's 2012 rule: a run of that size
  cannot retrieve more, so the sum of precisions is divided by the size instead of ``R_hat``).
* **inum_rel_ret at rank k**: ``sum_s D_s * (q_s + eps) / (m_s + 3 eps)`` over the run's ranks
  ``1..k`` (``D_s`` pooled shots of stratum s, ``m_s`` judged, ``q_s`` judged relevant; ``eps =
  1e-5``). A stratum whose shots in the run were all left unjudged counts a third of them as
  relevant, which is what the smoothing gives for 0/0. ``inum_rel_ret`` is its value at the last
  rank scored.
* **iP k**: ``inum_rel_ret at rank k / k``; past the end of the run, the last value ``/ k``.
  ("i" for inferred: it is not interpolated.)
* **infNDCG**: each relevant shot at rank k gains ``rel / log2(k + 1)``; a stratum's gain is
  scaled by ``D_s / m_s`` of the run (its own sampling rate among the shots it retrieved) and the
  sum is divided by the ideal DCG, which places ``R_hat_g`` (estimated relevant shots of grade g)
  shots per grade, highest grade first, and stops at ``max_result_size`` ranks.
* **inum_rel**: ``R_hat = sum_s r_s N_s / n_s``; **num_ret**: lines of the run for the topic.
* **iprec@rec**: the script's 11-point estimated interpolated precision, printed for ``all`` only.

``all``, as the script computes it: means of infAP, infNDCG, iP and iprec@rec over the topics
that are both in the run and in the qrels (a topic the run did not answer is skipped, not scored
0, and a run topic without qrels is ignored); inum_rel_ret is summed over those topics; inum_rel
is summed over **every** qrels topic; num_ret is the number of ranks scored (at most
``max_result_size`` per topic), summed over the scored topics.

Quirks kept on purpose because they move printed digits: the ideal DCG walks ranks from
``start + 1`` in steps of one while ``r <= start + R_hat_g`` with a real-valued ``start``, so a
fractional ``R_hat_g`` rounds down; grades are visited in descending *string* order; each grade
after the size limit still adds one term. ``max_result_size=None`` turns off the cut, the AP
scaling and the ideal-DCG limit (trec_eval's behaviour; the precision ranks then end at 1000).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .infap import SAMPLE_EVAL_EPSILON, xinfap_arrays
# Declared without NumPy in rank_order.py (a file-only `evaluate` of TREC qrels needs only them).
from .rank_order import TRECVID_MAX_RESULT_SIZE, trec_order

__all__ = [
    "SAMPLE_EVAL_PRECISION_RANKS",
    "TRECVID_MAX_RESULT_SIZE",
    "RECALL_LEVELS",
    "TopicPool",
    "TopicScores",
    "SampleEvalResult",
    "trec_order",
    "topic_pool",
    "sample_eval_topic",
    "sample_eval",
    "precision_ranks",
    "measure_names",
    "recall_names",
    "topic_sort_key",
]

#: sample_eval's ranks before the last one, which is the max result size (1000 in TRECVID).
SAMPLE_EVAL_PRECISION_RANKS = (5, 10, 15, 20, 30, 100, 200, 500)
RECALL_LEVELS = tuple(i / 10 for i in range(11))

StratifiedQrels = Mapping[str, Mapping[str, tuple[str, int]]]


def precision_ranks(max_result_size: int | None) -> tuple[int, ...]:
    return SAMPLE_EVAL_PRECISION_RANKS + (max_result_size or TRECVID_MAX_RESULT_SIZE,)


def measure_names(max_result_size: int | None) -> tuple[str, ...]:
    """Per-topic measure names, in the order the script prints them."""
    return ("infAP", "infNDCG", *(f"iP{k}" for k in precision_ranks(max_result_size)),
            "inum_rel_ret", "inum_rel", "num_ret")


def recall_names() -> tuple[str, ...]:
    return tuple(f"iprec@rec{level:4.2f}" for level in RECALL_LEVELS)


@dataclass(frozen=True)
class TopicPool:
    """One topic's pool: strata in a fixed order and their counts, and the estimates they give."""

    strata: tuple[str, ...]
    index: dict[str, int]
    pooled: np.ndarray  # N_s
    judged: np.ndarray  # n_s
    relevant: np.ndarray  # r_s
    relevant_per_grade: dict[int, np.ndarray]  # judged shots of each grade >= 1, per stratum

    @property
    def r_hat(self) -> float:
        return self._estimate(self.relevant)

    def _estimate(self, counts: np.ndarray) -> float:
        has = self.judged > 0
        return float((counts[has] * self.pooled[has] / self.judged[has]).sum())

    def ideal_dcg(self, max_result_size: int | None) -> float:
        total = 0.0
        start = 0.0
        for grade in sorted(self.relevant_per_grade, key=str, reverse=True):
            expected = self._estimate(self.relevant_per_grade[grade])
            r = start + 1
            while r <= start + expected:
                total += grade / (math.log(r + 1) / math.log(2))
                if max_result_size is not None and r >= max_result_size:
                    break
                r += 1
            start += expected
        return total


def topic_pool(shots: Mapping[str, tuple[str, int]]) -> TopicPool:
    strata = tuple(dict.fromkeys(s for s, _ in shots.values()))
    index = {s: i for i, s in enumerate(strata)}
    size = len(strata)
    pooled, judged, relevant = (np.zeros(size, dtype=np.int64) for _ in range(3))
    grades: dict[int, np.ndarray] = {}
    for stratum, rel in shots.values():
        i = index[stratum]
        pooled[i] += 1
        if rel >= 0:
            judged[i] += 1
        if rel >= 1:
            relevant[i] += 1
            grades.setdefault(rel, np.zeros(size, dtype=np.int64))[i] += 1
    return TopicPool(strata, index, pooled, judged, relevant, grades)


@dataclass(frozen=True)
class TopicScores:
    values: dict[str, float]  # measure name -> value (num_ret is a whole number)
    recall_precisions: np.ndarray  # this topic's contribution to each iprec@rec level
    ranks_scored: int
    r_hat: float


def _recall_precisions(est: np.ndarray, r_hat: float) -> np.ndarray:
    # The script's walk: from the deepest rank up, keep the best precision seen; a recall level
    # not yet reached at this rank takes it, one level per rank; levels left take the best overall.
    out = np.zeros(len(RECALL_LEVELS))
    cuts = [level * r_hat for level in RECALL_LEVELS]
    final = float(est[-1]) if est.size else 0.0
    c = len(cuts) - 1
    while c >= 0 and cuts[c] > final:
        c -= 1
    best = 0.0
    for rank in range(est.size, 0, -1):
        best = max(best, float(est[rank - 1]) / rank)
        if c >= 0 and cuts[c] > est[rank - 1]:
            out[c] += best
            c -= 1
    while c >= 0:
        out[c] += best
        c -= 1
    return out


def sample_eval_topic(
    ranked: Sequence[str],
    shots: Mapping[str, tuple[str, int]],
    *,
    pool: TopicPool | None = None,
    max_result_size: int | None = TRECVID_MAX_RESULT_SIZE,
    epsilon: float = SAMPLE_EVAL_EPSILON,
) -> TopicScores:
    """All of sample_eval's per-topic measures for one ranked list (shot ids, best first)."""
    pool = pool or topic_pool(shots)
    num_ret = len(ranked)
    scored = ranked if max_result_size is None else ranked[:max_result_size]
    depth = len(scored)
    st = np.full(depth, -1, dtype=np.int64)
    rel = np.full(depth, -1, dtype=np.int64)
    for i, shot in enumerate(scored):
        entry = shots.get(shot)
        if entry is not None:
            st[i] = pool.index[entry[0]]
            rel[i] = entry[1]
    S = len(pool.strata)
    r_hat = pool.r_hat
    ap, _ = xinfap_arrays(st, rel, pool.pooled, pool.judged, pool.relevant, epsilon=epsilon,
                          max_result_size=max_result_size)

    in_pool = st[:, None] == np.arange(S)[None, :]
    is_judged = in_pool & (rel >= 0)[:, None]
    is_rel = in_pool & (rel >= 1)[:, None]
    D = np.cumsum(in_pool, axis=0)
    m = np.cumsum(is_judged, axis=0)
    q = np.cumsum(is_rel, axis=0)
    den = m + 3 * epsilon
    # With epsilon=0 a stratum with nothing judged yet has no estimate (0/0); it then adds nothing.
    ratio = np.divide(q + epsilon, den, out=np.zeros(den.shape), where=den > 0)
    est = (D * ratio).sum(axis=1) if depth else np.zeros(0)
    rel_ret = float(est[-1]) if depth else 0.0

    values: dict[str, float] = {"infAP": ap}
    ranks = np.arange(1, depth + 1, dtype=float)
    gains = np.where(rel >= 1, rel, 0) / (np.log(ranks + 1) / np.log(2))
    gain = np.zeros(S)
    np.add.at(gain, st[rel >= 1], gains[rel >= 1])
    pooled_ret = float(D[-1].sum()) if depth else 0.0
    ideal = pool.ideal_dcg(max_result_size)
    ndcg = 0.0
    if depth and pooled_ret and ideal:
        d_final, m_final = D[-1].astype(float), m[-1].astype(float)
        has = m_final > 0
        dcg = float(((d_final[has] / pooled_ret) * gain[has] / m_final[has]).sum())
        ndcg = pooled_ret * dcg / ideal
    values["infNDCG"] = ndcg
    for k in precision_ranks(max_result_size):
        values[f"iP{k}"] = (float(est[k - 1]) if k <= depth else rel_ret) / k
    values["inum_rel_ret"] = rel_ret
    values["inum_rel"] = r_hat
    values["num_ret"] = num_ret
    return TopicScores(values, _recall_precisions(est, r_hat), depth, r_hat)


@dataclass(frozen=True)
class SampleEvalResult:
    per_topic: dict[str, dict[str, float]]  # topics scored, in the script's order
    all: dict[str, float]  # the `all` rows, iprec@rec levels included
    topics_unanswered: tuple[str, ...]  # qrels topics absent from the run: skipped
    topics_without_qrels: tuple[str, ...]  # run topics absent from the qrels: ignored
    max_result_size: int | None
    names: tuple[str, ...] = field(default=())


def topic_sort_key(topic: str):
    """The script sorts topics numerically (TRECVID topic ids are numbers); others by text."""
    try:
        return (0, float(topic), topic)
    except ValueError:
        return (1, 0.0, topic)


def sample_eval(
    run: Mapping[str, Sequence[str]],
    qrels: StratifiedQrels,
    *,
    max_result_size: int | None = TRECVID_MAX_RESULT_SIZE,
    epsilon: float = SAMPLE_EVAL_EPSILON,
) -> SampleEvalResult:
    """Per-topic and `all` values of one run, as sample_eval.pl computes them (module docstring).

    Raises ValueError when no topic of the run is in the qrels (the script divides by zero).
    """
    for topic, ranked in run.items():
        if len(set(ranked)) != len(ranked):
            raise ValueError(f"topic {topic!r}: a shot appears twice in the ranked list")
    pools = {topic: topic_pool(shots) for topic, shots in qrels.items()}
    scored = sorted((t for t in run if t in qrels and run[t]), key=topic_sort_key)
    if not scored:
        raise ValueError("no topic of the run is in the judgments: nothing to average")
    names = measure_names(max_result_size)
    per_topic: dict[str, dict[str, float]] = {}
    recall_sum = np.zeros(len(RECALL_LEVELS))
    ranks_scored = 0
    for topic in scored:
        scores = sample_eval_topic(run[topic], qrels[topic], pool=pools[topic], max_result_size=max_result_size,
                                   epsilon=epsilon)
        per_topic[topic] = scores.values
        recall_sum += scores.recall_precisions
        ranks_scored += scores.ranks_scored
    n = len(scored)
    mean = lambda name: sum(v[name] for v in per_topic.values()) / n  # noqa: E731
    all_values: dict[str, float] = {"infAP": mean("infAP"), "infNDCG": mean("infNDCG")}
    all_values.update({name: float(x) / n for name, x in zip(recall_names(), recall_sum)})
    for k in precision_ranks(max_result_size):
        all_values[f"iP{k}"] = mean(f"iP{k}")
    all_values["inum_rel_ret"] = sum(v["inum_rel_ret"] for v in per_topic.values())
    all_values["inum_rel"] = sum(p.r_hat for p in pools.values())
    all_values["num_ret"] = ranks_scored
    unanswered = tuple(sorted((t for t in qrels if t not in per_topic), key=topic_sort_key))
    orphan = tuple(sorted((t for t in run if t not in qrels), key=topic_sort_key))
    return SampleEvalResult(per_topic, all_values, unanswered, orphan, max_result_size, names)
