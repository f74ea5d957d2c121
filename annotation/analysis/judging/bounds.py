"""What can be said of a run's measures when the judged pairs are no probability sample (an
adaptive order such as bandit or move-to-front, or any order stopped before every pair has a
verdict): not an interval, but the two scenarios "every pair without a verdict is not relevant"
(trec_eval's convention) and "every pair without a verdict is relevant" (docs/methodology.md
section 6, "Intervals need a design").

For C@K the two scenarios bound the truth: C@K can only rise when a pair turns relevant. AP and
nDCG@K are normalised by the number of relevant pairs, which a pair outside the run's top K also
raises, so they can fall when a pair turns relevant: for them the two values are scenarios, and
the truth can lie outside them (the report says so, `BOUNDS_NOTE`).

The measures are the judging estimates' (annotation/analysis/judging/estimates.py) with every pair
counted at inclusion probability 1, i.e. evaluated exactly on the completed labels: the same
conventions (original positives relevant, queries any run ranks, a run without a list scores 0).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .estimates import _parse_measure, estimate_metrics, pooled_queries, str_pair_keys

__all__ = ["ScenarioBounds", "unjudged_scenarios", "BOUNDS_NOTE", "bounds_truth"]

BOUNDS_NOTE = ("C@K: the two scenarios bound the true value (C@K only rises when a pair turns relevant), when K is "
               "within the depth the runs were cut at (ranks below it are in neither scenario). AP and "
               "nDCG: scenarios only, not bounds (the number of relevant pairs in their denominator rises with "
               "every pair that turns relevant, also pairs outside the run's list, so the true value can lie "
               "outside them)")


@dataclass(frozen=True)
class ScenarioBounds:
    run: str
    measure: str
    unjudged_not_relevant: float   # every pair without a verdict counted not relevant
    unjudged_relevant: float       # every pair without a verdict counted relevant
    low: float                     # the smaller of the two
    high: float
    unjudged_pairs: int            # pairs without a verdict in the run's measured ranks (top K; AP: the list), over queries
    bounds_truth: bool             # True for C@K: the truth lies between low and high


def bounds_truth(measure: str, cut: int | None = None) -> bool:
    """Whether the two scenarios bound the measure's true value: C@K's do, when the runs' lists were
    not cut above K (ranks below a cut are in neither scenario, and could hold a relevant pair)."""
    kind, k = _parse_measure(measure)
    return kind == "C" and (cut is None or k <= cut)


def unjudged_scenarios(rankings: Mapping[str, Mapping[str, Sequence[str]]],   # run -> query -> ranked items
                       verdicts: Mapping[tuple[str, str], bool],               # (query, item) -> relevant
                       *, known_relevant: Mapping[str, set[str]] | None = None,
                       measures: Sequence[str] = ("C@1", "C@5", "C@10", "AP", "nDCG@10"),
                       cut: int | None = None) -> list[ScenarioBounds]:
    """Per run and measure (runs sorted by name, measures in order) the two scenarios. A pair
    without a verdict: any (query, item) a run ranks that is neither in ``verdicts`` nor a known
    relevant (original positive) item. ``cut``: the depth the lists were cut at, if any (then a
    C@K above it is a scenario, not a bound: bounds_truth)."""
    verdicts = str_pair_keys(verdicts, "verdict")
    known, _ = pooled_queries(rankings, known_relevant)
    unjudged: set[tuple[str, str]] = set()
    for per_query in rankings.values():
        for q, items in per_query.items():
            for item in items:
                key = (str(q), str(item))
                if key not in verdicts and key[1] not in known.get(key[0], ()):
                    unjudged.add(key)
    sides = {}
    for side, value in (("not", False), ("relevant", True)):
        labels = dict(verdicts) | {key: value for key in unjudged}
        report = estimate_metrics(rankings, labels, {}, known_relevant=known_relevant, measures=measures)
        sides[side] = {(e.run, e.measure): e.estimate for e in report.runs}
    out = []
    for run in sorted(rankings):
        lists = {str(q): list(dict.fromkeys(str(i) for i in items)) for q, items in rankings[run].items()}
        for measure in measures:
            kind, k = _parse_measure(measure)
            depth = None if kind == "AP" else k
            n_open = sum(1 for q, items in lists.items() for item in items[:depth] if (q, item) in unjudged)
            a, b = sides["not"][(run, measure)], sides["relevant"][(run, measure)]
            out.append(ScenarioBounds(run, measure, a, b, min(a, b), max(a, b), n_open, bounds_truth(measure, cut)))
    return out
