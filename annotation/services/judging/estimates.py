"""The `judging_estimates` report: each run's C@1/5/10, AP and nDCG@10 estimated from a pool's
labels so far, with 95% intervals (issue 15, part 3).

Inputs for annotation/analysis/judging/estimates.estimate_metrics: the pool's runs' top-k lists,
every resolved pair's label (a pair with no majority counts as judged not relevant, FIRE's
convention), each judged pair's inclusion probability as the queue stored it
(PooledPair.inclusion_probability: 1.0 for a pair every design judges, less for a pair a sampling
design drew), and the original positives, relevant without judging. Pairs not resolved yet are
the ones the estimator stands in for. The analysis names its estimator and design; the report
stores them with the parameters, the counts and the library versions.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

from annotation.models import Pool, PooledPair
from annotation.selectors.reports import pool_pairs, pool_runs
from annotation.services.judging.inputs import (dataset_external_ids, original_positives, refuse_moment_pool,
                                                runs_rankings)

MEASURES = ("C@1", "C@5", "C@10", "AP", "nDCG@10")


def pool_inclusion_probabilities(*, pool: Pool) -> dict[int, float]:
    """Pair id -> the inclusion probability the queue stored with it."""
    rows = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL).values_list("id", "inclusion_probability")
    return dict(rows.order_by().iterator(chunk_size=20_000))


def pool_design_labels(*, pool: Pool, pairs, decided, captions, clips, known) -> tuple[dict, dict]:
    """(judged, inclusion): (caption, clip) external ids -> the resolved label (no majority: not
    relevant) and the inclusion probability the queue stored, for every decided pair that is not an
    original positive."""
    pis = pool_inclusion_probabilities(pool=pool)
    judged: dict[tuple[str, str], bool] = {}
    inclusion: dict[tuple[str, str], float] = {}
    for pair, caption, clip, resolved, is_decided in zip(pairs.id.tolist(), pairs.caption.tolist(), pairs.clip.tolist(),
                                                         pairs.resolved.tolist(), decided.tolist()):
        key = (captions[caption], clips[clip])
        if not is_decided or key[1] in known.get(key[0], ()):
            continue
        judged[key] = resolved == 1
        inclusion[key] = float(pis[pair])
    return judged, inclusion


@dataclass(frozen=True)
class PoolDesign:
    """What an estimate of a pool's runs starts from: the runs' top-k lists, every decided pair's
    label with the inclusion probability the queue stored, and the original positives."""

    captions: dict
    clips: dict
    runs: list
    rankings: dict
    pairs: object
    queries: set
    known: dict
    decided: object           # per pair of `pairs`: resolved, or left without a majority
    judged: dict
    inclusion: dict


def pool_design(*, pool: Pool, depth: int | None = None) -> PoolDesign:
    refuse_moment_pool(pool)
    captions, clips = dataset_external_ids(pool.dataset_id)
    runs = pool_runs(pool=pool)
    rankings = runs_rankings(runs, depth or pool.depth, captions, clips)
    pairs = pool_pairs(pool=pool)
    queries = {q for lists in rankings.values() for q in lists}
    known = original_positives(dataset_id=pool.dataset_id, queries=queries, captions=captions, clips=clips)
    decided = (pairs.resolved >= 0) | (pairs.state == PooledPair.State.DISAGREEMENT)
    judged, inclusion = pool_design_labels(pool=pool, pairs=pairs, decided=decided, captions=captions, clips=clips,
                                           known=known)
    return PoolDesign(captions, clips, list(runs), rankings, pairs, queries, known, decided, judged, inclusion)


def judging_estimates_compute(*, pool: Pool, params: dict, progress: Callable | None = None) -> dict:
    """The report's result: per run and measure the estimate with its interval, adjacent pairs of
    the ranking with P(ordered right), judgments needed for the target width, and the counts."""
    from annotation.analysis.judging.estimates import estimate_metrics

    step = progress or (lambda done, total=None, message="": None)
    step(1, 3)
    design = pool_design(pool=pool, depth=params.get("depth"))
    runs, rankings, pairs, pooled_queries = design.runs, design.rankings, design.pairs, design.queries
    known, judged, inclusion = design.known, design.judged, design.inclusion
    step(2, 3)
    report = estimate_metrics(rankings, judged, inclusion, known_relevant=known, measures=MEASURES,
                              target_width=params.get("target_width"), confidence=params.get("confidence", 0.95))
    step(3, 3)
    to_judge = int((~pairs.is_original).sum()) if not pool.include_original_positives else int(pairs.id.size)
    counts = {"runs": len(runs), "queries": len(pooled_queries), "pool_pairs": int(pairs.id.size),
              "judged": len(judged), "not_judged_yet": int((~design.decided).sum()),
              "disagreements_as_not_relevant": int((pairs.state == PooledPair.State.DISAGREEMENT).sum()),
              "sampled_with_probability_below_1": int(sum(1 for v in inclusion.values() if v < 1)),
              "original_positives_known": sum(len(v) for v in known.values()), "pairs_to_judge": to_judge}
    return {
        "estimator": report.estimator, "design": report.design, "conventions": report.conventions,
        "confidence": params.get("confidence", 0.95), "target_width": params.get("target_width"),
        "runs": [r.name for r in runs], "measures": list(MEASURES),
        "estimates": [asdict(r) for r in report.runs],
        "ranking": [{"measure": measure, "better": better, "worse": worse, "p_ordered_right": p}
                    for measure, (better, worse, p) in zip(report.ranking_measures or [None] * len(report.ranking),
                                                           report.ranking)],
        "counts": counts,
        "note": (f"{report.estimator}; design: {report.design}. {counts['judged']} of {counts['pool_pairs']} pool "
                 f"pairs judged; pairs with no majority count as judged not relevant, original positives as "
                 f"relevant without judging."),
    }
