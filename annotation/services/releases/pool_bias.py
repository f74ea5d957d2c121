"""A release's pool bias (issue 38; docs/methodology.md, "Pool bias"): every run of the release's
leaderboard scored against the same qrels the leaderboard used, with and without the pairs only it
contributed (its pool provenance), and Judged@K against the leave-one-out qrels. The computation is
annotation/analysis/pool_bias.py; this module reads the pool's runs and provenance, and says why a
release has no such table when it cannot have one.
"""
from __future__ import annotations

from annotation.analysis.leaderboard import clip_measure_names, judged_cutoffs, measure_label
from annotation.analysis.pool_bias import pool_bias_rows
from annotation.models import Pool
from annotation.selectors.reports import dataset_captions, pool_pairs, pool_provenance, pool_runs, run_trec_rankings

#: How the table was computed, in words: the datasheet, leaderboard.json and the page quote it.
POOL_BIAS_CONVENTIONS = (
    "Leave one run out (Zobel 1998): each pooled run scored against the leaderboard's qrels (With) and against "
    "the same qrels without the pairs only that run contributed to the pool, relevant or not (Without); "
    "Difference = With - Without, what a model outside the pool would lose on those measures. A caption's "
    "original positive and a pair another source of the release judged are never removed. Unjudged clips count "
    "as not relevant (trec_eval's convention), both sides are averaged over the same queries (the judged "
    "queries the run answered, as the leaderboard), and Judged@K is taken against the leave-one-out qrels.")

NO_POOL = ("This release is made from judgment sets alone: no pool provenance records which run proposed which "
           "pair, so no run can be left out (no pool-bias table).")
MOMENT_POOL = ("The leaderboard's pool is a moment pool: its verdicts are on spans that merge several runs' "
               "predictions, so a span has no single run to leave out (no pool-bias table).")
SAMPLED_POOL = ("The leaderboard's pool is judged by a probability sample: its corrected values are the design's "
                "estimates, and taking one run's pairs out of a sample is not leaving the run out of a complete "
                "pool (no pool-bias table).")
NO_RUNS = "The leaderboard has no runs (no pool-bias table)."


def no_leaderboard_reason(leaderboard_left_out: str) -> str:
    return f"No leaderboard, so no pool-bias table: {leaderboard_left_out}"


def release_pool_bias(*, pool: Pool, depth: int | None, ks: list[int], qrels: dict[int, dict[int, int]],
                      judged_elsewhere: dict[int, dict[int, int]] | None = None) -> dict:
    """The pool-bias table of `pool`'s runs against `qrels` (caption id -> clip id -> 0/1: what the
    leaderboard scored against), runs cut at `depth` as the leaderboard cut them.
    `judged_elsewhere`: the pairs the release's other sources judged, which stay for every run."""
    names = clip_measure_names(ks)
    cutoffs = judged_cutoffs(ks)
    caption_ids, _, originals = dataset_captions(dataset_id=pool.dataset_id)
    keep = {(q, c) for q, c in zip(caption_ids.tolist(), originals.tolist()) if c >= 0}
    keep |= {(q, c) for q, clips in (judged_elsewhere or {}).items() for c in clips}
    pairs = pool_pairs(pool=pool)
    pair_ids, run_ids, _ = pool_provenance(pool=pool)
    at = pairs.index_of(pair_ids)
    provenance: dict[tuple[int, int], set[int]] = {}
    for q, c, run_id in zip(pairs.caption[at].tolist(), pairs.clip[at].tolist(), run_ids.tolist()):
        provenance.setdefault((q, c), set()).add(run_id)
    runs = pool_runs(pool=pool)
    ranked = {run.pk: run_trec_rankings(run=run, depth=depth) for run in runs}
    rows = pool_bias_rows(ranked, qrels, provenance, measures=names, cutoffs=cutoffs, keep=keep)
    labels = {m: measure_label(m, depth) for m in names}
    judged_labels = {k: measure_label(f"Judged@{k}", depth) for k in cutoffs}
    out_runs = []
    for run in runs:
        row = rows[run.pk]
        out_runs.append({"run": run.name, "run_id": run.pk, "pairs_removed": row["pairs_removed"],
                         "relevant_removed": row["relevant_removed"], "queries_scored": row["queries"],
                         **{side: {labels[m]: row[side][m] for m in names}
                            for side in ("with", "without", "difference")},
                         **{side: {judged_labels[k]: row[side][k] for k in cutoffs}
                            for side in ("judged_with", "judged_without")}})
    return {"pool": pool.name, "measures": [labels[m] for m in names], "judged_measures": list(judged_labels.values()),
            "runs": out_runs, "conventions": POOL_BIAS_CONVENTIONS}
