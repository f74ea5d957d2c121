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

import numpy as np

from annotation.analysis.leaderboard import clip_per_query, judged_per_query
from annotation.analysis.retrieval_metrics import pairs_only_from

__all__ = ["qrels_without", "pool_bias_block", "pool_bias_summary", "pool_bias_rows"]

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


def _per_query(ranked: Ranked, qrels: Qrels, queries: Sequence[Hashable], measures: Sequence[str],
               cutoffs: Sequence[int]) -> tuple[dict[str, np.ndarray], dict[int, np.ndarray]]:
    return clip_per_query(ranked, qrels, queries, measures), judged_per_query(ranked, qrels, queries, cutoffs)


#: A run's values on its scored queries, as the leaderboard has them: (measure -> per-query
#: values, k -> per-query Judged@k), both in the order of the run's sorted scored queries.
Scored = tuple[Mapping[str, np.ndarray], Mapping[int, np.ndarray]]


def _without(ranked: Ranked, qrels: Qrels, removed: Sequence[Pair], queries: Sequence[Hashable], scored: Scored,
             measures: Sequence[str], cutoffs: Sequence[int]) -> Scored:
    """The run's values against ``qrels`` without ``removed``: only the queries that lost a pair are
    scored again (a query's values depend on its own qrels and ranking alone), the others keep
    their values with every pair."""
    with_all, judged_with = scored
    touched = {q for q, _ in removed}
    at = [i for i, q in enumerate(queries) if q in touched]
    if not at:
        return with_all, judged_with
    rescored = [queries[i] for i in at]
    loo = qrels_without({q: qrels[q] for q in rescored}, removed)
    values, judged = _per_query(ranked, loo, rescored, measures, cutoffs)
    without = {m: v.copy() for m, v in with_all.items()}
    judged_without = {k: v.copy() for k, v in judged_with.items()}
    for m in measures:
        without[m][at] = values[m]
    for k in cutoffs:
        judged_without[k][at] = judged[k]
    return without, judged_without


def pool_bias_block(runs: Mapping[Hashable, Ranked], qrels: Qrels, provenance: Mapping[Pair, Collection[Hashable]],
                    *, measures: Sequence[str], cutoffs: Sequence[int], keep: Collection[Pair] = (),
                    scored: Mapping[Hashable, Scored] | None = None) -> dict:
    """``pool_bias_rows`` on one block of queries, per query: ``{run: {"pairs_removed",
    "relevant_removed", "with": {m: values}, "without": {m: values}, "judged_with": {k: values},
    "judged_without": {k: values}}}``, the values in the order of the run's scored queries (sorted).
    Every figure of a query depends on that query's qrels, ranking and provenance alone, so blocks
    of queries computed apart and joined by ``pool_bias_summary`` give the figures of the whole.
    ``scored``: each run's values against ``qrels`` already computed (the leaderboard's corrected
    values, which are the With side), so only the Without side is computed here."""
    kept = set(keep)
    judged = [(q, c) for q, clips in qrels.items() for c in clips if (q, c) not in kept]
    own = pairs_only_from(provenance, judged)
    out = {}
    for name, ranked in runs.items():
        removed = own.get(name, [])
        queries = sorted(q for q in ranked if q in qrels)
        with_all, judged_with = (scored[name] if scored is not None and name in scored
                                 else _per_query(ranked, qrels, queries, measures, cutoffs))
        without, judged_without = _without(ranked, qrels, removed, queries, (with_all, judged_with), measures,
                                           cutoffs)
        out[name] = {"pairs_removed": len(removed), "relevant_removed": sum(1 for q, c in removed if qrels[q][c] > 0),
                     "queries": len(queries), "with": with_all, "without": without, "judged_with": judged_with,
                     "judged_without": judged_without}
    return out


def pool_bias_summary(blocks: Sequence[Mapping], *, measures: Sequence[str], cutoffs: Sequence[int]) -> dict:
    """The blocks of ``pool_bias_block`` (in query order) joined: ``{run: {"pairs_removed",
    "relevant_removed", "queries", "with": {m: mean}, "without": {m: mean}, "difference": {m: with -
    without}, "judged_with": {k: Judged@k}, "judged_without": {k: ...}}}``, every mean over the run's
    scored queries (None for no query)."""
    out = {}
    for name in (blocks[0] if blocks else {}):
        parts = [block[name] for block in blocks]

        def means(side: str, keys) -> dict:
            joined = {key: np.concatenate([part[side][key] for part in parts]) for key in keys}
            return {key: (float(v.mean()) if v.size else None) for key, v in joined.items()}

        with_all, without = means("with", measures), means("without", measures)
        out[name] = {"pairs_removed": sum(p["pairs_removed"] for p in parts),
                     "relevant_removed": sum(p["relevant_removed"] for p in parts),
                     "queries": sum(p["queries"] for p in parts),
                     "with": with_all, "without": without,
                     "difference": {m: (with_all[m] - without[m] if with_all[m] is not None else None)
                                    for m in measures},
                     "judged_with": means("judged_with", cutoffs), "judged_without": means("judged_without", cutoffs)}
    return out


def pool_bias_rows(runs: Mapping[Hashable, Ranked], qrels: Qrels, provenance: Mapping[Pair, Collection[Hashable]],
                   *, measures: Sequence[str], cutoffs: Sequence[int], keep: Collection[Pair] = ()) -> dict:
    """Every run of ``runs`` (name -> caption -> clips in rank order) left out in turn. ``provenance``:
    pair -> the runs that contributed it (a judged pair with none, e.g. from another source, stays
    for every run); ``keep``: pairs never removed (original positives, pairs other sources judged).
    Returns ``{run: {"pairs_removed", "relevant_removed", "queries", "with": {m: mean}, "without":
    {m: mean}, "difference": {m: with - without}, "judged_with": {k: Judged@k}, "judged_without":
    {k: ...}}}``: both sides averaged over the same queries (the judged queries the run answered)."""
    block = pool_bias_block(runs, qrels, provenance, measures=measures, cutoffs=cutoffs, keep=keep)
    return pool_bias_summary([block], measures=measures, cutoffs=cutoffs)
