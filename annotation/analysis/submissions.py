"""A run submitted to a release, scored as the release's leaderboard scores its runs: the same
measures by the same functions (analysis/leaderboard.py: trec_eval's C@K, AP, nDCG@10 through
pytrec_eval, ir_measures' Judged@K), against the release's qrels.txt, with each top K's holes
(clips without a verdict) counted per query.

Plain functions over dicts; no Django. Query ids and clip ids are the files' (external) ids.
"""
from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

from annotation.analysis.leaderboard import (UNJUDGED, clip_measure_names, clip_per_query, interval_name,
                                             judged_cutoffs, judged_per_query, measure_label, run_cells)

__all__ = ["holes_per_query", "submission_measures"]


def holes_per_query(ranked: Mapping[Hashable, Sequence[Hashable]], qrels: Mapping[Hashable, Mapping[Hashable, int]],
                    k: int) -> dict[Hashable, list[Hashable]]:
    """Each answered query's holes: the clips among the run's first ``k`` (rank order, a repeat
    counted once, as Judged@K counts) that ``qrels`` gives no verdict. A query the qrels never
    judged has its whole top ``k`` as holes. Queries without a hole are left out."""
    out: dict[Hashable, list[Hashable]] = {}
    for q, clips in ranked.items():
        judged = qrels.get(q) or {}
        holes = [c for c in list(dict.fromkeys(clips))[:k] if c not in judged]
        if holes:
            out[q] = holes
    return out


def submission_measures(ranked: Mapping[Hashable, Sequence[Hashable]], qrels: Mapping[Hashable, Mapping[Hashable, int]],
                        *, ks: Sequence[int], holes_k: int, depth: int | None, replicates: int, seed: int,
                        confidence: float) -> dict:
    """The run's measures (means with bootstrap intervals), Judged@K and holes against ``qrels``.

    ``ranked``: query -> clips in trec_eval's order (score descending, ties by id descending).
    Queries as the leaderboard takes them (trec_eval's rule): the answered queries that ``qrels``
    judges; ``depth`` cuts the run first (the release's leaderboard cut, None: the whole run)."""
    if depth is not None:
        ranked = {q: list(dict.fromkeys(clips))[:depth] for q, clips in ranked.items()}
    names = clip_measure_names(ks)
    labels = {m: measure_label(m, depth) for m in names}
    cutoffs = judged_cutoffs(ks)
    queries = sorted(q for q in ranked if q in qrels)
    per_query = clip_per_query(ranked, qrels, queries, names)
    cells = run_cells({"corrected": {labels[m]: v for m, v in per_query.items()}}, replicates=replicates, seed=seed,
                      confidence=confidence)["corrected"]
    judged = judged_per_query(ranked, qrels, queries, cutoffs)
    holes = holes_per_query(ranked, qrels, holes_k)
    return {
        "measures": [labels[m] for m in names],
        "values": cells,
        "judged": {measure_label(f"Judged@{k}", depth): (float(v.mean()) if queries else None)
                   for k, v in judged.items()},
        "interval": interval_name(replicates=replicates, seed=seed, confidence=confidence),
        "depth": depth,
        "queries_answered": len(ranked),
        "queries_scored": len(queries),
        "queries_unjudged": sum(1 for q in ranked if q not in qrels),
        "holes": {"k": holes_k, "total": sum(len(h) for h in holes.values()), "queries_with_holes": len(holes),
                  "per_query": {str(q): len(h) for q, h in holes.items()}},
        "hole_pairs": [[str(q), str(c)] for q, clips in holes.items() for c in clips],
        "unjudged": UNJUDGED,
    }
