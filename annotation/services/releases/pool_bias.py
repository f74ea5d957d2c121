"""A release's pool bias (issue 38; docs/methodology.md, "Pool bias"): every run of the release's
leaderboard scored against the same qrels the leaderboard used, with and without the pairs only it
contributed (its pool provenance), and Judged@K against the leave-one-out qrels. The computation is
annotation/analysis/pool_bias.py; this module reads the pool's runs and provenance, and says why a
release has no such table when it cannot have one.
"""
from __future__ import annotations

from annotation.analysis.leaderboard import clip_measure_names, judged_cutoffs, measure_label
from annotation.analysis.pool_bias import pool_bias_block, pool_bias_summary
from annotation.models import Pool
from annotation.selectors.reports import CaptionBlocks, pool_provenance_rows, pool_runs
from annotation.services.reports.kinds.corrected_leaderboard import ScoredBlock, VerdictRows

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


class ReleasePoolBias:
    """The pool-bias table of `pool`'s runs, computed beside the release's leaderboard: its
    `add` is the leaderboard's `each_block` (corrected_leaderboard.ScoredBlock), so the verdicts and
    the runs' rankings are read once, and the With side is the leaderboard's own corrected values
    on the same queries (same qrels, same cut). Per block it reads the pool's provenance (and the
    pairs the release's other sources judged, `elsewhere_rows`, which stay for every run) and
    computes the Without side (analysis/pool_bias.py: pool_bias_block, pool_bias_summary)."""

    def __init__(self, *, pool: Pool, ks: list[int], elsewhere_rows: VerdictRows | None = None) -> None:
        self.pool = pool
        self.names = clip_measure_names(ks)
        self.cutoffs = judged_cutoffs(ks)
        self.runs = pool_runs(pool=pool)
        self.proposals = CaptionBlocks(pool_provenance_rows(pool=pool))
        self.elsewhere = CaptionBlocks(elsewhere_rows()) if elsewhere_rows else None
        self.blocks: list[dict] = []

    def add(self, block: ScoredBlock) -> None:
        keep = {(q, c) for q, clips in block.original.items() for c in clips}
        if self.elsewhere is not None:
            keep |= {(q, c) for q, c, _ in self.elsewhere.upto(block.last)}
        provenance: dict[tuple[int, int], set[int]] = {}
        for q, c, run_id in self.proposals.upto(block.last):
            provenance.setdefault((q, c), set()).add(run_id)
        self.blocks.append(pool_bias_block({run.pk: block.ranked[run.pk] for run in self.runs}, block.corrected,
                                           provenance, measures=self.names, cutoffs=self.cutoffs, keep=keep,
                                           scored={run.pk: block.scored[run.pk] for run in self.runs}))

    def table(self, *, depth: int | None) -> dict:
        """The table, runs cut at `depth` as the leaderboard cut them (its measures' names say it)."""
        names, cutoffs = self.names, self.cutoffs
        blocks = self.blocks or [  # a dataset without captions: every run scores nothing
            pool_bias_block({run.pk: {} for run in self.runs}, {}, {}, measures=names, cutoffs=cutoffs)]
        rows = pool_bias_summary(blocks, measures=names, cutoffs=cutoffs)
        labels = {m: measure_label(m, depth) for m in names}
        judged_labels = {k: measure_label(f"Judged@{k}", depth) for k in cutoffs}
        out_runs = []
        for run in self.runs:
            row = rows[run.pk]
            out_runs.append({"run": run.name, "run_id": run.pk, "pairs_removed": row["pairs_removed"],
                             "relevant_removed": row["relevant_removed"], "queries_scored": row["queries"],
                             **{side: {labels[m]: row[side][m] for m in names}
                                for side in ("with", "without", "difference")},
                             **{side: {judged_labels[k]: row[side][k] for k in cutoffs}
                                for side in ("judged_with", "judged_without")}})
        return {"pool": self.pool.name, "measures": [labels[m] for m in names],
                "judged_measures": list(judged_labels.values()), "runs": out_runs, "conventions": POOL_BIAS_CONVENTIONS}
