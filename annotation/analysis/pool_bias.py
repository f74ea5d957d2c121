"""Pool bias by leave one run out (Zobel 1998; docs/methodology.md, "Pool bias"): each pooled run
scored against the release's qrels with and without the pairs only it contributed, so a reader sees
how much a model that was not in the pool would lose to the pairs nobody judged for it.

Plain functions over dicts and arrays; no Django. The scoring is the corrected leaderboard's
(annotation/analysis/leaderboard.py: trec_eval through ``clip_per_query``, ``judged_per_query``):

- a run's *own* pairs are the judged pairs whose only contributing run is this run
  (``retrieval_metrics.pairs_only_from``, the one home of that rule, which the metrics report's
  leave-one-run-out uses too), both relevant and not relevant ones; a caption's original positive
  is never removed (it was not the pool's to give);
- the leave-one-out qrels are the qrels without those pairs, and a clip without a verdict there
  counts as not relevant (trec_eval's convention, as the leaderboard scores);
- both sides are averaged over the same queries, the leaderboard's (the judged queries the run
  answered); a query left with no judgment scores 0, so "with" minus "without" compares like with
  like; Judged@K is taken against the leave-one-out qrels (how much of the top K a run outside the
  pool would find judged).
"""
from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Sequence

from annotation.analysis.leaderboard import clip_per_query, judged_per_query
from annotation.analysis.retrieval_metrics import pairs_only_from

__all__ = ["qrels_without", "leave_one_run_out_scores", "pool_bias_rows"]

Qrels = Mapping[Hashable, Mapping[Hashable, int]]
Ranked = Mapping[Hashable, Sequence[Hashable]]
Pair = tuple[Hashable, Hashable]


def qrels_without(qrels: Qrels, pairs: Collection[Pair]) -> dict[Hashable, dict[Hashable, int]]:
    """A copy of ``qrels`` without ``pairs`` (a query left with no judgment disappears)."""
    drop: dict[Hashable, set] = {}
    for q, c in pairs:
        drop.setdefault(q, set()).add(c)
    out = {}
    for q, judged in qrels.items():
        kept = {c: g for c, g in judged.items() if c not in drop.get(q, ())}
        if kept:
            out[q] = kept
    return out


def _means(ranked: Ranked, qrels: Qrels, queries: Sequence[Hashable], measures: Sequence[str],
           cutoffs: Sequence[int]) -> tuple[dict[str, float | None], dict[int, float | None]]:
    values = clip_per_query(ranked, qrels, queries, measures)
    judged = judged_per_query(ranked, qrels, queries, cutoffs)
    mean = (lambda v: float(v.mean())) if queries else (lambda v: None)
    return {m: mean(v) for m, v in values.items()}, {k: mean(v) for k, v in judged.items()}


def leave_one_run_out_scores(ranked: Ranked, qrels: Qrels, removed: Collection[Pair], queries: Sequence[Hashable],
                             measures: Sequence[str], cutoffs: Sequence[int]) -> dict:
    """One run with and without ``removed``: ``{"with": {m: mean}, "without": {m: mean},
    "difference": {m: with - without}, "judged_with": {k: Judged@k}, "judged_without": {k: ...}}``,
    every mean over ``queries`` (None for no query)."""
    with_all, judged_with = _means(ranked, qrels, queries, measures, cutoffs)
    loo = qrels_without(qrels, removed) if removed else qrels
    without, judged_without = _means(ranked, loo, queries, measures, cutoffs)
    difference = {m: (with_all[m] - without[m] if with_all[m] is not None else None) for m in measures}
    return {"with": with_all, "without": without, "difference": difference, "judged_with": judged_with,
            "judged_without": judged_without}


def pool_bias_rows(runs: Mapping[Hashable, Ranked], qrels: Qrels, provenance: Mapping[Pair, Collection[Hashable]],
                   *, measures: Sequence[str], cutoffs: Sequence[int], keep: Collection[Pair] = ()) -> dict:
    """Every run of ``runs`` (name -> caption -> clips in rank order) left out in turn. ``provenance``:
    pair -> the runs that contributed it (a judged pair with none, e.g. from another source, stays
    for every run); ``keep``: pairs never removed (original positives, pairs other sources judged).
    Returns ``{run: {"pairs_removed", "relevant_removed", "queries", **leave_one_run_out_scores}}``."""
    kept = set(keep)
    judged = [(q, c) for q, clips in qrels.items() for c in clips if (q, c) not in kept]
    own = pairs_only_from(provenance, judged)
    out = {}
    for name, ranked in runs.items():
        removed = own.get(name, [])
        queries = sorted(q for q in ranked if q in qrels)
        out[name] = {"pairs_removed": len(removed),
                     "relevant_removed": sum(1 for q, c in removed if qrels[q][c] > 0),
                     "queries": len(queries),
                     **leave_one_run_out_scores(ranked, qrels, removed, queries, measures, cutoffs)}
    return out
