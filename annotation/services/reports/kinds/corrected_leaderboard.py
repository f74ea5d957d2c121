"""The `corrected_leaderboard` report kind (issue 26): every run of a pool scored against the
dataset's original positives and against the corrected ones, each mean with a confidence interval
over queries, FIRE's `A (B + C)`, the ranks before and after and Kendall's tau-b per measure
(computation: annotation/analysis/leaderboard.py; docs/methodology.md section 6, "The corrected
leaderboard").

Corrected qrels are the pool's exported qrels (services/exports, format qrels): every resolved pool
pair (1 relevant, 0 not) and every caption's original clip as 1; so `evaluate --judgments-format
qrels --originals` on that file and the runs prints the same numbers. A sampled pool (some pair
judged with inclusion probability below 1) does not have complete labels: its corrected values and
intervals are the judging estimates' (Horvitz-Thompson, annotation/analysis/judging/estimates.py),
not a bootstrap over labels that pretend to be complete. A moment pool is scored on its moments
(R@K at IoU 0.5 and 0.7, video R@K, mAP) from the moment_metrics report's inputs.
"""
from __future__ import annotations

from collections.abc import Callable

from annotation.analysis.leaderboard import (CONVENTIONS, MOMENT_CONVENTIONS, build_leaderboard, cell,
                                             clip_measure_names, clip_per_query, interval_name,
                                             leaderboard_csv_rows, moment_measure_names, moment_per_query,
                                             run_cells)
from annotation.models import MomentPoolDesign, Pool, PooledPair, Run
from annotation.selectors.reports import dataset_captions, pool_pairs, pool_runs, run_rankings
from annotation.services.judging.estimates import MEASURES as ESTIMATED_MEASURES
from annotation.services.judging.estimates import judging_estimates_compute, pool_inclusion_probabilities
from annotation.services.reports.kind import Param, ReportError, ReportKind, pool_depth
from annotation.services.reports.kinds.moment_metrics import moment_pool_inputs
from annotation.services.reports.runs import report_runs
from annotation.services.reports.tables import ReportTable

CORRECTED_LEADERBOARD = "corrected_leaderboard"
#: The IoU thresholds of a moment pool's R@K, as moment papers print them.
MOMENT_IOU_THRESHOLDS = (0.5, 0.7)


def _is_moment_pool(pool: Pool) -> bool:
    return MomentPoolDesign.objects.filter(pool=pool).exists()


def _is_sampled(pool: Pool) -> bool:
    return any(p < 1.0 for p in pool_inclusion_probabilities(pool=pool).values())


def leaderboard_check(*, pool: Pool | None, params: dict) -> None:
    if pool is None:
        return
    if _is_moment_pool(pool):
        if _is_sampled(pool):
            raise ReportError(f"pool '{pool.name}' is a sampled moment pool: the judging estimates that stand in "
                              f"for its missing labels exist for clip pools only")
        return
    if _is_sampled(pool):
        missing = [m for m in clip_measure_names(params["ks"]) if m not in ESTIMATED_MEASURES]
        if missing:
            raise ReportError(f"pool '{pool.name}' is sampled: its corrected values are the judging estimates, "
                              f"which have {', '.join(ESTIMATED_MEASURES)}; not {', '.join(missing)}")


def pool_qrels(pool: Pool) -> tuple[dict[int, dict[int, int]], dict[int, dict[int, int]]]:
    """(original qrels, corrected qrels), caption id -> clip id -> grade: the corrected ones are
    what the qrels export writes (resolved pool pairs 1/0, original clips 1 whatever raters say)."""
    caption_ids, _, originals = dataset_captions(dataset_id=pool.dataset_id)
    original = {q: {c: 1} for q, c in zip(caption_ids.tolist(), originals.tolist()) if c >= 0}
    corrected: dict[int, dict[int, int]] = {}
    pairs = pool_pairs(pool=pool)
    resolved = pairs.state == PooledPair.State.RESOLVED
    for q, c, code in zip(pairs.caption[resolved].tolist(), pairs.clip[resolved].tolist(),
                          pairs.resolved[resolved].tolist()):
        corrected.setdefault(q, {})[c] = int(code == 1)
    for q, judged in original.items():
        corrected.setdefault(q, {}).update(judged)
    return original, corrected


def _moment_leaderboard(pool: Pool, params: dict, step: Callable) -> dict:
    """R@K at IoU 0.5 and 0.7, video R@K and mAP per caption against the original and the
    corrected moments (the moment_metrics report's positives and captions), bootstrapped."""
    runs = report_runs(pool, None, Run.Kind.MOMENT)
    inputs = moment_pool_inputs(pool, runs)
    measures = moment_measure_names(params["ks"], MOMENT_IOU_THRESHOLDS)
    replicates, seed, confidence = params["replicates"], params["seed"], params["confidence"]
    captions = inputs.captions
    cells = []
    for done, run in enumerate(runs, start=1):
        ranked = inputs.ranked[run.name]
        sides = run_cells({side: moment_per_query(ranked, positives, captions, ks=params["ks"],
                                                  iou_thresholds=MOMENT_IOU_THRESHOLDS)
                           for side, positives in (("original", inputs.original), ("corrected", inputs.corrected))},
                          replicates=replicates, seed=seed, confidence=confidence)
        cells.append({"run": run.name, "run_id": run.pk, **sides, "queries_scored": len(captions),
                      "queries_unanswered": sum(1 for c in captions if not ranked.get(c))})
        step(done, len(runs))
    counts = {"runs": len(runs), "captions": len(captions),
              "captions_without_positive": len(inputs.answered) - len(captions), "judged_spans": len(inputs.spans),
              "resolved_spans": len(inputs.labels),
              "relevant_spans": sum(1 for v in inputs.labels.values() if v == PooledPair.Answer.RELEVANT)}
    return build_leaderboard(measures=measures, runs=cells, decimals=params["decimals"],
                             interval=interval_name(replicates=replicates, seed=seed, confidence=confidence),
                             conventions=CONVENTIONS + " " + MOMENT_CONVENTIONS, sampled=False, estimator=None,
                             depth=None, iou_thresholds=list(MOMENT_IOU_THRESHOLDS), counts=counts)


def corrected_leaderboard_compute(*, pool: Pool, params: dict, progress: Callable | None = None) -> dict:
    step = progress or (lambda done, total: None)
    if _is_moment_pool(pool):
        return _moment_leaderboard(pool, params, step)
    measures = clip_measure_names(params["ks"])
    replicates, seed, confidence = params["replicates"], params["seed"], params["confidence"]
    original_qrels, corrected_qrels = pool_qrels(pool)
    runs = pool_runs(pool=pool)
    sampled = _is_sampled(pool)
    total = len(runs) + 1 + int(sampled)
    step(0, total)
    bootstrap = interval_name(replicates=replicates, seed=seed, confidence=confidence)
    cells = []
    for done, run in enumerate(runs, start=1):
        ranked = run_rankings(run=run, depth=params["depth"])
        queries = sorted(q for q in ranked if q in corrected_qrels)
        sides = run_cells({"original": clip_per_query(ranked, original_qrels, queries, measures),
                           "corrected": clip_per_query(ranked, corrected_qrels, queries, measures)},
                          replicates=replicates, seed=seed, confidence=confidence)
        cells.append({"run": run.name, "run_id": run.pk, **sides, "queries_scored": len(queries),
                      "queries_unanswered": sum(1 for q in corrected_qrels if q not in ranked)})
        step(done, total)
    interval = bootstrap
    estimator = None
    if sampled:
        estimates = judging_estimates_compute(pool=pool, params={"depth": params["depth"], "confidence": confidence,
                                                                 "target_width": None})
        by_run = {(e["run"], e["measure"]): e for e in estimates["estimates"]}
        for c in cells:
            c["corrected"] = {m: cell(by_run[(c["run"], m)]["estimate"],
                                      (by_run[(c["run"], m)]["ci_low"], by_run[(c["run"], m)]["ci_high"]))
                              for m in measures}
        estimator = estimates["estimator"]
        interval = (f"original: {bootstrap}; corrected (sampled pool, labels incomplete): the judging estimates' "
                    f"{confidence:.0%} intervals, {estimator}")
        step(total - 1, total)
    pairs = pool_pairs(pool=pool)
    counts = {"runs": len(runs), "queries_judged": len(corrected_qrels),
              "original_positives": sum(len(v) for v in original_qrels.values()),
              "corrected_positives": sum(sum(v.values()) for v in corrected_qrels.values()),
              "pool_pairs": int(pairs.id.size), "pairs_resolved": int((pairs.state == PooledPair.State.RESOLVED).sum())}
    conventions = CONVENTIONS + (
        " Sampled pool: corrected values are Horvitz-Thompson estimates averaged over every query any run ranks "
        "(a run without a list for a query scores 0 there); unjudged pairs are estimated, not counted as not "
        "relevant." if sampled else "")
    step(total, total)
    return build_leaderboard(measures=measures, runs=cells, interval=interval, decimals=params["decimals"],
                             conventions=conventions, sampled=sampled, estimator=estimator, depth=params["depth"],
                             counts=counts)


def corrected_leaderboard_tables(result: dict) -> list[ReportTable]:
    measures = result["measures"]
    runs = sorted(result["runs"], key=lambda r: (r["rank_corrected"][measures[0]], r["run"]))

    def interval(c):
        return "–" if c["value"] is None else (
            f"{100 * c['value']:.1f} [{100 * c['low']:.1f}, {100 * c['high']:.1f}]" if c["low"] is not None
            else f"{100 * c['value']:.1f}")

    rows = leaderboard_csv_rows(result)
    tau = result["kendall_tau"]
    return [
        ReportTable("leaderboard", "Corrected leaderboard: A (B + C) = corrected (original + change), in percent; "
                                   f"runs in corrected order of {measures[0]}",
                    ["run"] + measures + ["queries_scored", "queries_unanswered"],
                    [[r["run"]] + [r["fire"][m] for m in measures] + [r.get("queries_scored"),
                                                                      r.get("queries_unanswered")] for r in runs]),
        ReportTable("ranks", "Rank before -> after (change; positive = moved up)",
                    ["run"] + measures,
                    [[r["run"]] + [f"{r['rank_original'][m]} -> {r['rank_corrected'][m]} "
                                   f"({r['rank_change'][m]:+d})" for m in measures] for r in runs]),
        ReportTable("intervals", f"Values in percent with intervals ({result['interval']})",
                    ["run", "measure", "original", "corrected"],
                    [[r["run"], m, interval(r["original"][m]), interval(r["corrected"][m])]
                     for m in measures for r in runs]),
        ReportTable("kendall_tau", "Leaderboard agreement, original vs corrected ordering (Kendall's tau-b)",
                    ["metric", "tau", "p_value", "runs"],
                    [[m, tau.get(m), result.get("kendall_tau_p_value", {}).get(m), len(result["runs"])]
                     for m in measures]),
        ReportTable("leaderboard_values", "Every value (0-1) with its interval, ranks and tau (the release's CSV)",
                    rows[0], rows[1:]),
        ReportTable("conventions", "Conventions", ["measure", "value"],
                    [["interval", result["interval"]], ["conventions", result["conventions"]],
                     *[[k.replace("_", " "), v] for k, v in (result.get("counts") or {}).items()]]),
    ]


KIND = ReportKind(
    name=CORRECTED_LEADERBOARD,
    title="Corrected leaderboard",
    params={
        "ks": Param(list, [1, 5, 10], "the cut-offs K of C@K", 1, 1000),
        "depth": Param(int, pool_depth, "ranks of each run scored (default: the pool's depth)", 1, 1000),
        "replicates": Param(int, 1000, "bootstrap resamples of the queries (B)", 100, 100_000),
        "seed": Param(int, 0, "seed of the bootstrap's resamples", 0, 2**32 - 1),
        "confidence": Param(float, 0.95, "level of the intervals", 0, 1, open_interval=True),
        "decimals": Param(int, 1, "decimals of A and B in the 'A (B + C)' texts", 0, 4),
    },
    compute=corrected_leaderboard_compute,
    check=leaderboard_check,
    tables=corrected_leaderboard_tables,
)
