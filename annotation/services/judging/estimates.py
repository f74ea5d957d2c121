"""The `judging_estimates` report: each run's C@1/5/10, AP and nDCG@10 estimated from a pool's
labels so far, with 95% intervals where the pool's design allows them (issue 15, part 3; issue 35).

Inputs for annotation/analysis/judging/estimates.estimate_metrics: the pool's runs' top-k lists,
every decided pair's label (a pair with no majority counts as judged not relevant, FIRE's
convention), each judged pair's inclusion probability (PooledPair.inclusion_probability as the
queue stored it; a sampled pool's from its SampledDocument), and the original positives, relevant
without judging. Pairs not decided yet are the ones the estimator stands in for.

An interval needs known inclusion probabilities (services/judging/design.py decides, once, for
every report): a `sampled` or `active` pool, a sampled pool, or a census. Any other pool (bandit,
move-to-front, shallow-first, an order stopped early) gets no estimate and no interval: the report
says why and gives each run's measures under "unjudged = not relevant" and "unjudged = relevant"
(annotation/analysis/judging/bounds.py) and the strategy to use next time.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

from annotation.models import Pool, PooledPair, SampledDocument
from annotation.selectors.pools import PAIR_COUNT_WORDS
from annotation.selectors.reports import pool_pairs, pool_runs
from annotation.services.judging.design import Design, counts_in_words, design_of_pool
from annotation.services.judging.inputs import (dataset_external_ids, original_positives, refuse_moment_pool,
                                                runs_rankings)

MEASURES = ("C@1", "C@5", "C@10", "AP", "nDCG@10")


def pool_inclusion_probabilities(*, pool: Pool) -> dict[int, float]:
    """Pair id -> its inclusion probability: the one the queue stored with it, or for a sampled
    pool (built with strata) the one its document was drawn with."""
    rows = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL).values_list("id", "inclusion_probability")
    out = dict(rows.order_by().iterator(chunk_size=20_000))
    drawn = SampledDocument.objects.filter(pool=pool, pair__isnull=False).values_list("pair_id", "inclusion_probability")
    out.update(drawn.order_by().iterator(chunk_size=20_000))
    return out


def pool_design_labels(*, pool: Pool, pairs, decided, captions, clips, known) -> tuple[dict, dict, dict]:
    """(judged, inclusion, verdicts): (caption, clip) external ids -> the decided label (no majority:
    not relevant) and its pair's inclusion probability, for every decided pair that is not an
    original positive; and the resolved pairs' labels only (a verdict; what the scenarios of a pool
    without a design count as known)."""
    pis = pool_inclusion_probabilities(pool=pool)
    judged: dict[tuple[str, str], bool] = {}
    inclusion: dict[tuple[str, str], float] = {}
    verdicts: dict[tuple[str, str], bool] = {}
    for pair, caption, clip, resolved, is_decided in zip(pairs.id.tolist(), pairs.caption.tolist(), pairs.clip.tolist(),
                                                         pairs.resolved.tolist(), decided.tolist()):
        key = (captions[caption], clips[clip])
        if not is_decided or key[1] in known.get(key[0], ()):
            continue
        judged[key] = resolved == 1
        inclusion[key] = float(pis[pair])
        if resolved >= 0:
            verdicts[key] = resolved == 1
    return judged, inclusion, verdicts


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
    verdicts: dict            # resolved pairs only (not original positives): the label
    design: Design            # known inclusion probabilities or not, and why (services/judging/design.py)
    depth: int                # the ranks of each run read (at most the pool's depth)


def pool_design(*, pool: Pool, depth: int | None = None) -> PoolDesign:
    refuse_moment_pool(pool)
    captions, clips = dataset_external_ids(pool.dataset_id)
    runs = pool_runs(pool=pool)
    depth = depth or pool.depth
    rankings = runs_rankings(runs, depth, captions, clips)
    pairs = pool_pairs(pool=pool)
    queries = {q for lists in rankings.values() for q in lists}
    known = original_positives(dataset_id=pool.dataset_id, queries=queries, captions=captions, clips=clips)
    decided = (pairs.resolved >= 0) | (pairs.state == PooledPair.State.DISAGREEMENT)
    judged, inclusion, verdicts = pool_design_labels(pool=pool, pairs=pairs, decided=decided, captions=captions,
                                                     clips=clips, known=known)
    return PoolDesign(captions, clips, list(runs), rankings, pairs, queries, known, decided, judged, inclusion,
                      verdicts, design_of_pool(pool), depth)


def estimator_counts(design: PoolDesign) -> dict:
    """The counts both estimate reports give, beside pool_pair_counts' (the pool page's, the
    release's): what the estimator reads. `labels_used` is every decided pair that is not an original
    positive: the resolved ones plus the disagreements, counted not relevant (FIRE's convention);
    original positives count as relevant without a label, so they are not among them."""
    pairs = design.pairs
    disagreements = int((pairs.state == PooledPair.State.DISAGREEMENT).sum())
    return {**design.design.counts, "labels_used": len(design.judged), "resolved_labels_used": len(design.verdicts),
            "disagreements_counted_not_relevant": disagreements,
            "original_positives_known": sum(len(v) for v in design.known.values()),
            "sampled_with_probability_below_1": int(sum(1 for v in design.inclusion.values() if v < 1)),
            "runs": len(design.runs), "queries": len(design.queries)}


#: The counts in words (the reports' design tables; the JSON keeps the keys).
COUNT_WORDS = PAIR_COUNT_WORDS | {
    "labels_used": "labels the estimator uses (decided pairs that are not original positives: resolved pairs and "
                   "disagreements)",
    "resolved_labels_used": "of which resolved pairs (a verdict)",
    "disagreements_counted_not_relevant": "disagreements (no majority), counted not relevant (FIRE's convention)",
    "original_positives_known": "original positives of the queries, relevant without a label",
    "sampled_with_probability_below_1": "labels of pairs drawn with inclusion probability below 1",
    "runs": "runs", "queries": "queries (captions any run ranks)",
}


def counts_note(counts: dict) -> str:
    """Why the estimator's labels and the pool's resolved pairs differ, in words."""
    return (f"{counts_in_words(counts)}. The estimator uses {counts['labels_used']} labels: "
            f"{counts['resolved_labels_used']} resolved pairs and {counts['disagreements_counted_not_relevant']} "
            f"disagreements counted not relevant; the {counts['original_positives']} pooled original positives count "
            "as relevant without a label, so they are not among them.")


#: The estimator named where the design allows none.
NO_ESTIMATOR = ("none: the pairs' inclusion probabilities are unknown, so nothing is estimated; the scenarios "
                "'unjudged = not relevant' and 'unjudged = relevant' instead")


def scenario_rows(design: PoolDesign, measures) -> list[dict]:
    """Per run and measure, the two scenarios for the pairs without a verdict (analysis/judging/bounds.py)."""
    from dataclasses import asdict

    from annotation.analysis.judging.bounds import unjudged_scenarios

    return [asdict(b) for b in unjudged_scenarios(design.rankings, design.verdicts, known_relevant=design.known,
                                                  measures=measures, cut=design.depth)]


def cut_note(depth: int, measures) -> str:
    """The estimates read each run's top `depth`: what that means for a cutoff above it."""
    above = [m for m in measures if m != "AP" and int(m.split("@")[1]) > depth]
    if not above:
        return f"Each run is read to depth {depth}."
    return (f"Each run is read to depth {depth} (the pool's ranks): {', '.join(above)} here "
            f"{'is' if len(above) == 1 else 'are'} over the top {depth} only, not the top K its name says.")


def judging_estimates_compute(*, pool: Pool, params: dict, progress: Callable | None = None) -> dict:
    """The report's result: per run and measure the estimate with its interval, adjacent pairs of
    the ranking with P(ordered right), judgments needed for the target width, and the counts; where
    the pool's design gives no interval, no estimates, the reason and the two scenarios instead."""
    from annotation.analysis.judging.bounds import BOUNDS_NOTE
    from annotation.analysis.judging.estimates import estimate_metrics

    step = progress or (lambda done, total=None, message="": None)
    step(1, 3)
    design = pool_design(pool=pool, depth=params.get("depth"))
    confidence = params.get("confidence", 0.95)
    step(2, 3)
    estimates, ranking, estimator, conventions = [], [], NO_ESTIMATOR, {}
    if design.design.intervals:
        report = estimate_metrics(design.rankings, design.judged, design.inclusion, known_relevant=design.known,
                                  measures=MEASURES, target_width=params.get("target_width"), confidence=confidence)
        estimates = [asdict(r) for r in report.runs]
        ranking = [{"measure": measure, "better": better, "worse": worse, "p_ordered_right": p}
                   for measure, (better, worse, p) in zip(report.ranking_measures or [None] * len(report.ranking),
                                                          report.ranking)]
        estimator, conventions = report.estimator, report.conventions
    step(3, 3)
    counts = estimator_counts(design)
    what = design.design
    return {
        "estimator": estimator, "design": what.reason, "design_of_pool": what.to_dict(),
        "intervals": what.intervals, "next_time": what.next_time,
        "conventions": conventions, "bounds_note": BOUNDS_NOTE,
        "confidence": confidence, "target_width": params.get("target_width"),
        "runs": [r.name for r in design.runs], "measures": list(MEASURES),
        "estimates": estimates, "ranking": ranking,
        "bounds": scenario_rows(design, MEASURES),
        "counts": counts,
        "depth": design.depth, "cut": cut_note(design.depth, MEASURES),
        "note": (f"Design: {what.reason}. " + (f"Next time: {what.next_time}. " if what.next_time else "")
                 + counts_note(counts) + " " + cut_note(design.depth, MEASURES)),
    }
