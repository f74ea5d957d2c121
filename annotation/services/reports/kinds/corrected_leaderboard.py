"""The `corrected_leaderboard` report kind (issue 26): every run of a pool scored against the
dataset's original positives and against the corrected ones, each mean with a confidence interval
over queries, FIRE's `A (B + C)`, the ranks before and after and Kendall's tau-b per measure
(computation: annotation/analysis/leaderboard.py; docs/methodology.md section 6, "The corrected
leaderboard").

Corrected qrels are the pool's exported qrels (services/exports, format qrels): every resolved pool
pair (1 relevant, 0 not) and every caption's original clip as 1; so `evaluate --judgments-format
qrels --originals` on that file and the run files prints the same numbers: each run is scored whole
(every stored rank, in trec_eval's order: selectors/reports.run_trec_ranking_rows), a clip without a
verdict counts as not relevant, and Judged@K says how much of each top K had one; a depth cut
happens only when `depth` asks for it, and every measure's name then says it. A sampled pool (some pair
judged with inclusion probability below 1) does not have complete labels: its corrected values and
intervals are the judging estimates' (Horvitz-Thompson, annotation/analysis/judging/estimates.py),
not a bootstrap over labels that pretend to be complete. A moment pool is scored on its moments
(R@K at IoU 0.5 and 0.7, video R@K, mAP) from the moment_metrics report's inputs.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

import numpy as np
from django.db.models import Count, Q

from annotation.analysis.judged import JUDGED_THRESHOLD
from annotation.analysis.leaderboard import (CONVENTIONS, CSV_COLUMN_TITLES, MOMENT_CONVENTIONS,
                                             SHARED_CONVENTIONS, UNJUDGED, bootstrap_label, build_leaderboard, cell,
                                             clip_measure_names, clip_per_query, interval_label, interval_name, judged_cutoffs, judged_per_query,
                                             leaderboard_csv_rows, measure_label, moment_measure_names,
                                             moment_per_query, run_cells)
from annotation.models import MomentPoolDesign, Pool, PooledPair, Run
from annotation.selectors.reports import (CaptionBlocks, dataset_captions, pool_runs, pool_verdict_rows,
                                          run_trec_ranking_rows)
from annotation.services.judging.estimates import MEASURES as ESTIMATED_MEASURES
from annotation.services.judging.design import PROBABILITY_SAMPLE, design_of_pool
from annotation.services.judging.estimates import judging_estimates_compute
from annotation.services.reports.kind import Param, ReportError, ReportKind, depth_within_pool_check
from annotation.services.reports.kinds.judging_estimates import WordedTable
from annotation.services.reports.kinds.moment_metrics import moment_pool_inputs
from annotation.services.reports.runs import report_runs
from annotation.services.reports.tables import ReportTable

CORRECTED_LEADERBOARD = "corrected_leaderboard"
#: The IoU thresholds of a moment pool's R@K, as moment papers print them.
MOMENT_IOU_THRESHOLDS = (0.5, 0.7)


def _is_moment_pool(pool: Pool) -> bool:
    return MomentPoolDesign.objects.filter(pool=pool).exists()


def _is_sampled(pool: Pool) -> bool:
    """Judged by a probability sample (services/judging/design.py, the one place that decides it):
    its corrected values are the judging estimates. A census is scored exactly, and a pool judged in
    an adaptive order with pairs left over is scored with unjudged = not relevant, Judged@K beside."""
    return design_of_pool(pool).kind == PROBABILITY_SAMPLE


def pool_scored_by_design(pool: Pool) -> bool:
    """A pool whose corrected values come from its own design, not from verdicts alone: a moment pool
    (its spans) or a probability sample (the judging estimates)."""
    return _is_moment_pool(pool) or _is_sampled(pool)


def leaderboard_check(*, pool: Pool | None, params: dict) -> None:
    if pool is None:
        return
    if _is_moment_pool(pool):
        if _is_sampled(pool):
            raise ReportError(f"pool '{pool.name}' is a sampled moment pool: the judging estimates that stand in "
                              f"for its missing labels exist for clip pools only")
        return
    if _is_sampled(pool):
        depth_within_pool_check(pool=pool, params=params)  # its corrected values are the estimates
        missing = [m for m in clip_measure_names(params["ks"]) if m not in ESTIMATED_MEASURES]
        if missing:
            raise ReportError(f"pool '{pool.name}' is sampled: its corrected values are the judging estimates, "
                              f"which have {', '.join(ESTIMATED_MEASURES)}; not {', '.join(missing)}")


#: Captions scored at a time: the leaderboard holds the verdicts and rankings of one block, never
#: the whole pool (a FIRE-sized release's qrels as dicts were most of its memory, issue 40); every
#: per-query value is the same whatever the block, so the blocks' values joined are the whole's.
QUERY_BLOCK = 2_000

VerdictRows = Callable[[], Iterable[tuple[int, int, int]]]


Qrels = dict[int, dict[int, int]]


def qrels_blocks(pool: Pool, corrected_rows: VerdictRows | None = None) -> Iterator[tuple[int, Qrels, Qrels]]:
    """`(last caption id, original qrels, corrected qrels)` of each block of QUERY_BLOCK of the
    dataset's captions, in caption order, qrels as caption id -> clip id -> grade. The corrected ones are what
    the qrels export writes (resolved pool pairs 1/0, original clips 1 whatever raters say), or
    `corrected_rows()`: `(caption id, clip id, 0/1)` by caption id (a release's whole qrels.txt,
    originals included)."""
    caption_ids, _, originals = dataset_captions(dataset_id=pool.dataset_id)
    own, size = corrected_rows is None, QUERY_BLOCK
    verdicts = CaptionBlocks(pool_verdict_rows(pool=pool) if own else corrected_rows())
    for start in range(0, caption_ids.size, size):
        ids = caption_ids[start:start + size].tolist()
        original = {q: {c: 1} for q, c in zip(ids, originals[start:start + size].tolist()) if c >= 0}
        corrected: dict[int, dict[int, int]] = {}
        for q, c, relevant in verdicts.upto(ids[-1]):
            corrected.setdefault(q, {})[c] = int(relevant)
        if own:
            for q, judged in original.items():
                corrected.setdefault(q, {}).update(judged)
        yield ids[-1], original, corrected


def _moment_leaderboard(pool: Pool, params: dict, step: Callable) -> dict:
    """R@K at IoU 0.5 and 0.7, video R@K and mAP per caption against the original and the
    corrected moments (the moment_metrics report's positives and captions), bootstrapped. Every
    stored prediction of each run counts (moment_pool_inputs reads every rank), unless `depth`
    asks for a cut, which every measure's name then says."""
    runs = report_runs(pool, None, Run.Kind.MOMENT)
    inputs = moment_pool_inputs(pool, runs)
    depth = params["depth"]
    names = moment_measure_names(params["ks"], MOMENT_IOU_THRESHOLDS)
    labels = {m: measure_label(m, depth) for m in names}
    replicates, seed, confidence = params["replicates"], params["seed"], params["confidence"]
    captions = inputs.captions
    cells = []
    for done, run in enumerate(runs, start=1):
        ranked = inputs.ranked[run.name]
        if depth is not None:
            ranked = {c: predictions[:depth] for c, predictions in ranked.items()}
        sides = run_cells({side: {labels[m]: v for m, v in moment_per_query(
            ranked, positives, captions, ks=params["ks"], iou_thresholds=MOMENT_IOU_THRESHOLDS).items()}
                           for side, positives in (("original", inputs.original), ("corrected", inputs.corrected))},
                          replicates=replicates, seed=seed, confidence=confidence)
        cells.append({"run": run.name, "run_id": run.pk, **sides, "queries_scored": len(captions),
                      "queries_unanswered": sum(1 for c in captions if not ranked.get(c))})
        step(done, len(runs))
    counts = {"runs": len(runs), "captions": len(captions),
              "captions_without_positive": len(inputs.answered) - len(captions), "judged_spans": len(inputs.spans),
              "resolved_spans": len(inputs.labels),
              "relevant_spans": sum(1 for v in inputs.labels.values() if v == PooledPair.Answer.RELEVANT)}
    cut = (f" Runs cut at depth {depth} (asked for), named in every measure." if depth is not None else
           " Every stored prediction of each run is scored (mAP reads the first 10, QVHighlights' rule).")
    return build_leaderboard(measures=[labels[m] for m in names], runs=cells, decimals=params["decimals"],
                             interval=interval_name(replicates=replicates, seed=seed, confidence=confidence),
                             interval_labels={"original": bootstrap_label(confidence),
                                              "corrected": bootstrap_label(confidence)},
                             conventions=SHARED_CONVENTIONS + " " + MOMENT_CONVENTIONS + cut + MOMENT_JUDGED, sampled=False, estimated=False, estimator=None,
                             depth=depth, unjudged=MOMENT_UNJUDGED, judged_measures=[], judged_of={},
                             iou_thresholds=list(MOMENT_IOU_THRESHOLDS), counts=counts)


#: Moment pools: how a prediction without a verdict scores, and why they carry no Judged@K.
MOMENT_UNJUDGED = ("not relevant: a predicted moment matches only the original moment and spans resolved relevant "
                   "(at the IoU of each measure); a span not resolved is no positive")
MOMENT_JUDGED = (" Judged@K is given for clip pools only: a moment prediction has no verdict of its own (spans "
                 "merge predictions by IoU), so its share of judged predictions is not defined here.")


class ScoredBlock(NamedTuple):
    """One block of captions as the leaderboard scored it, for a caller that computes more from the
    same reads (a release's pool bias: services/releases/pool_bias.py) instead of reading again."""
    last: int  # the block's last caption id
    original: Qrels
    corrected: Qrels
    ranked: dict[int, dict[int, list[int]]]  # run id -> caption id -> clip ids in trec_eval's order
    # run id -> (measure -> corrected per-query values, k -> Judged@k per query), on the run's
    # scored queries in sorted order (the queries of the block it ranked that have a judgment)
    scored: dict[int, tuple[dict[str, np.ndarray], dict[int, np.ndarray]]]


def scored_depth(pool: Pool, params: dict) -> int | None:
    """The depth runs are cut at: the one asked for; else none (the whole run), except on a sampled
    clip pool, whose corrected values are the judging estimates over the pool's depth, so both
    sides are cut there (and every measure says it)."""
    if params["depth"] is not None:
        return params["depth"]
    return pool.depth if _is_sampled(pool) else None


def corrected_leaderboard_compute(*, pool: Pool, params: dict, progress: Callable | None = None,
                                  corrected_rows: VerdictRows | None = None,
                                  runs: list[Run] | None = None,
                                  each_block: Callable[[ScoredBlock], None] | None = None) -> dict:
    """The leaderboard of the pool's runs. `corrected_rows` (see qrels_blocks) replaces the pool's
    own verdicts: a release of several sources scores against its whole qrels.txt.
    `runs` replaces the pool's runs on a clip pool (a release adds its accepted submissions' runs).
    `each_block` is handed each block of a clip pool as scored (ScoredBlock), in caption order."""
    step = progress or (lambda done, total: None)
    if _is_moment_pool(pool):
        return _moment_leaderboard(pool, params, step)
    names = clip_measure_names(params["ks"])
    sampled = _is_sampled(pool)
    depth = scored_depth(pool, params)
    labels = {m: measure_label(m, depth) for m in names}
    measures = [labels[m] for m in names]
    cutoffs = judged_cutoffs(params["ks"])
    judged_labels = {k: measure_label(f"Judged@{k}", depth) for k in cutoffs}
    judged_of = {labels[m]: judged_labels[int(m[2:])] for m in names if m.startswith("C@")} | {
        labels["nDCG@10"]: judged_labels[10]}
    replicates, seed, confidence = params["replicates"], params["seed"], params["confidence"]
    runs = pool_runs(pool=pool) if runs is None else list(runs)
    total = len(runs) + 1 + int(sampled)
    step(0, total)
    bootstrap = interval_name(replicates=replicates, seed=seed, confidence=confidence)
    rankings = {run.pk: CaptionBlocks(run_trec_ranking_rows(run=run, depth=depth)) for run in runs}
    per_query = {run.pk: {"original": [], "corrected": [], "judged": [], "queries": 0, "unanswered": 0} for run in runs}
    judged_queries = original_positives = corrected_positives = 0
    for last, original_qrels, corrected_qrels in qrels_blocks(pool, corrected_rows):
        judged_queries += len(corrected_qrels)
        original_positives += sum(len(v) for v in original_qrels.values())
        corrected_positives += sum(sum(v.values()) for v in corrected_qrels.values())
        block = ScoredBlock(last, original_qrels, corrected_qrels, {}, {})
        for run in runs:
            ranked = block.ranked[run.pk] = dict(rankings[run.pk].upto(last))
            queries = sorted(q for q in ranked if q in corrected_qrels)
            mine = per_query[run.pk]
            mine["original"].append(clip_per_query(ranked, original_qrels, queries, names))
            mine["corrected"].append(clip_per_query(ranked, corrected_qrels, queries, names))
            mine["judged"].append(judged_per_query(ranked, corrected_qrels, queries, cutoffs))
            block.scored[run.pk] = (mine["corrected"][-1], mine["judged"][-1])
            mine["queries"] += len(queries)
            mine["unanswered"] += sum(1 for q in corrected_qrels if q not in ranked)
        if each_block is not None:
            each_block(block)
    cells = []
    for done, run in enumerate(runs, start=1):
        mine = per_query[run.pk]

        def joined(side: str, keys) -> dict:
            # The blocks' per-query values end to end, in caption order: the whole run's.
            return {key: np.concatenate([block[key] for block in mine[side]]) if mine[side] else np.zeros(0)
                    for key in keys}

        sides = run_cells({side: {labels[m]: v for m, v in joined(side, names).items()}
                           for side in ("original", "corrected")},
                          replicates=replicates, seed=seed, confidence=confidence)
        cells.append({"run": run.name, "run_id": run.pk, **sides,
                      "judged": {judged_labels[k]: (float(v.mean()) if mine["queries"] else None)
                                 for k, v in joined("judged", cutoffs).items()},
                      "queries_scored": mine["queries"], "queries_unanswered": mine["unanswered"]})
        step(done, total)
    interval = bootstrap
    interval_labels = {"original": bootstrap_label(confidence), "corrected": bootstrap_label(confidence)}
    estimator = None
    estimated = False
    if sampled:
        estimates = judging_estimates_compute(pool=pool, params={"depth": depth, "confidence": confidence,
                                                                 "target_width": None})
        by_run = {(e["run"], e["measure"]): e for e in estimates["estimates"]}
        estimator = estimates["estimator"]
        if by_run:
            estimated = True
            for c in cells:
                # An estimate without an interval keeps None bounds; a missing one, no value.
                c["corrected"] = {labels[m]: cell(by_run.get((c["run"], m), {}).get("estimate"),
                                                  (by_run.get((c["run"], m), {}).get("ci_low"),
                                                   by_run.get((c["run"], m), {}).get("ci_high")))
                                  for m in names}
            interval = (f"original: {bootstrap}; corrected (sampled pool, labels incomplete): the judging "
                        f"estimates' {confidence:.0%} intervals, {estimator}")
            interval_labels["corrected"] = f"{100 * confidence:g}% interval of the judging estimates"
        step(total - 1, total)
    pairs = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL).aggregate(
        pooled=Count("id"), resolved=Count("id", filter=Q(state=PooledPair.State.RESOLVED)))
    counts = {"runs": len(runs), "queries_judged": judged_queries, "original_positives": original_positives,
              "corrected_positives": corrected_positives, "pool_pairs": pairs["pooled"],
              "pairs_resolved": pairs["resolved"]}
    if estimated:
        cut = (f" Sampled pool: corrected values are Horvitz-Thompson estimates over the runs cut at depth {depth} "
               f"(the depth the estimates cover; original values and Judged@K use the same cut, named in every "
               f"measure), averaged over every query any run ranks (a run without a list for a query scores 0 "
               f"there); unjudged pairs are estimated, not counted as not relevant. The original values (B) are "
               f"averaged over the queries each run answered, so where a run skips a query that another ranks, "
               f"A and B are averages over different queries and C = A - B mixes the two.")
    elif sampled:
        cut = (f" Sampled pool whose design gives no estimates ({estimates.get('design')}): runs cut at depth "
               f"{depth} (the pool's), named in every measure; corrected values count unjudged pairs as not "
               f"relevant, like the original ones.")
    elif depth is not None:
        cut = f" Runs cut at depth {depth} (asked for), named in every measure."
    else:
        cut = f" Every run is scored whole: every stored rank, beyond the pool's depth ({pool.depth}) too."
    unjudged = UNJUDGED if not estimated else (
        f"corrected values: estimated by the judging estimates (sampled pool), not counted as not relevant; "
        f"original values and Judged@K: {UNJUDGED}")
    step(total, total)
    return build_leaderboard(measures=measures, runs=cells, interval=interval, decimals=params["decimals"],
                             judged_threshold=params["judged_threshold"], conventions=CONVENTIONS + cut, sampled=sampled, estimated=estimated, estimator=estimator, depth=depth,
                             unjudged=unjudged, judged_measures=list(judged_labels.values()), judged_of=judged_of,
                             interval_labels=interval_labels, counts=counts)


def corrected_leaderboard_tables(result: dict) -> list[ReportTable]:
    measures = result["measures"]
    runs = sorted(result["runs"], key=lambda r: (r["rank_corrected"][measures[0]], r["run"]))
    judged_measures = result.get("judged_measures") or []
    original_interval, corrected_interval = interval_label(result, "original"), interval_label(result, "corrected")

    def percent(value):
        return "–" if value is None else f"{100 * value:.1f}"

    def interval(c):
        return "–" if c["value"] is None else (
            f"{100 * c['value']:.1f} [{100 * c['low']:.1f}, {100 * c['high']:.1f}]"
            if c["low"] is not None and c["high"] is not None else f"{100 * c['value']:.1f} (no interval)")

    rows = leaderboard_csv_rows(result)
    tau = result["kendall_tau"]
    depth = result.get("depth")
    scored = "whole runs" if depth is None else f"runs cut at depth {depth}"
    unjudged_short = ("corrected values estimated for unjudged pairs" if result.get("estimated", result.get("sampled"))
                      else "unjudged pairs count as not relevant")
    # Columns stay field names (the CSV downloads); pages show the words (WordedTable.headers).
    return [
        WordedTable("leaderboard", f"Corrected leaderboard ({scored}; {unjudged_short}): each cell A (B + C) = "
                                   f"corrected (original + change), in percent; Judged@K = share of a run's top K "
                                   f"with a verdict, in percent; runs in corrected order of {measures[0]}",
                    ["run"] + measures + judged_measures + ["queries_scored", "queries_unanswered"],
                    [[r["run"]] + [r["fire"][m] for m in measures]
                     + [percent((r.get("judged") or {}).get(j)) for j in judged_measures]
                     + [r.get("queries_scored"), r.get("queries_unanswered")] for r in runs],
                    words={**{m: f"{m}: corrected (original + change), %" for m in measures},
                           **{j: f"{j}, % of the top K with a verdict" for j in judged_measures},
                           "queries_unanswered": "Judged queries the run did not answer"}),
        WordedTable("ranks", "Rank before -> after (change; positive = moved up)",
                    ["run"] + measures,
                    [[r["run"]] + [f"{r['rank_original'][m]} -> {r['rank_corrected'][m]} "
                                   f"({r['rank_change'][m]:+d})" for m in measures] for r in runs],
                    words={m: f"{m}: rank original -> corrected (change)" for m in measures}),
        WordedTable("intervals", f"Values in percent with intervals ({result['interval']})",
                    ["run", "measure", "original", "corrected"],
                    [[r["run"], m, interval(r["original"][m]), interval(r["corrected"][m])]
                     for m in measures for r in runs],
                    words={"original": f"Original positives (B), % [{original_interval}]",
                           "corrected": f"Corrected positives (A), % [{corrected_interval}]"}),
        WordedTable("kendall_tau", "Leaderboard agreement, original vs corrected ordering (Kendall's tau-b)",
                    ["metric", "tau", "p_value", "runs"],
                    [[m, tau.get(m), result.get("kendall_tau_p_value", {}).get(m), len(result["runs"])]
                     for m in measures],
                    words={"metric": "Measure", "tau": "Kendall's tau-b"}),
        WordedTable("leaderboard_values", "Every value (0-1) with its interval, ranks, tau and Judged@K (the "
                                          "release's CSV)",
                    rows[0], rows[1:], words=CSV_COLUMN_TITLES),
        ReportTable("conventions", "Conventions", ["measure", "value"],
                    [["interval", result["interval"]], ["runs scored", scored],
                     ["unjudged pairs", result.get("unjudged") or "not relevant"],
                     ["conventions", result["conventions"]],
                     *[[k.replace("_", " "), v] for k, v in (result.get("counts") or {}).items()]]),
    ]


KIND = ReportKind(
    name=CORRECTED_LEADERBOARD,
    title="Corrected leaderboard",
    params={
        "ks": Param(list, [1, 5, 10], "the cut-offs K of C@K", 1, 1000),
        "depth": Param(int, None, "cut every run at this rank before scoring, named in every measure ('C@10 (runs "
                            "cut at depth 5)'); null (the default): each run is scored whole, as `evaluate` scores "
                            "its file (a sampled pool: at the pool's depth, which its estimates cover)", 1, 100_000,
                       nullable=True),
        "replicates": Param(int, 1000, "bootstrap resamples of the queries (B)", 100, 100_000),
        "seed": Param(int, 0, "seed of the bootstrap's resamples", 0, 2**32 - 1),
        "confidence": Param(float, 0.95, "level of the intervals", 0, 1, open_interval=True),
        "decimals": Param(int, 1, "decimals of A and B in the 'A (B + C)' texts", 0, 4),
        "judged_threshold": JUDGED_THRESHOLD,
    },
    compute=corrected_leaderboard_compute,
    check=leaderboard_check,
    tables=corrected_leaderboard_tables,
)
