"""Tables of the judging reports (issue 15), in the layout report pages, CSV downloads and the
`report` command show: `judging_simulation` (curves per strategy and checkpoint) and
`judging_estimates` (each run's estimates with intervals, and the ranking's adjacent pairs)."""
from __future__ import annotations


def _table(name, title, columns, rows):
    # Imported on use: selectors/reports.py registers these builders when it is first imported.
    from annotation.selectors.reports import ReportTable
    return ReportTable(name, title, columns, rows)


def _counts_rows(result: dict) -> list[list]:
    rows = [[key.replace("_", " "), value] for key, value in (result.get("counts") or {}).items()]
    return rows + [["note", note] for note in result.get("notes") or []]


def judging_simulation_tables(result: dict) -> list:
    checkpoints, runs, measure = result["checkpoints"], result["runs"], result["measure"]
    strategies = result["per_strategy"]
    summary = [[s["strategy"], s["share_for_90"], s["relevant_found"][-1] if s["relevant_found"] else None,
                "; ".join(f"{reason}: {n:g}" for reason, n in sorted((s.get("stop_reasons") or {}).items())) or "–"]
               for s in strategies]
    by_checkpoint = [[s["strategy"], c, s["judged_share"][i], s["relevant_found"][i], s["metric_error_max"][i],
                      s["kendall_tau"][i], s["ci_coverage_mean"][i]]
                     for s in strategies for i, c in enumerate(checkpoints)]
    per_run = [[s["strategy"], c, run, s["metric_error"][run][i], s["ci_coverage"][run][i]]
               for s in strategies for i, c in enumerate(checkpoints) for run in runs]
    return [
        _table("strategies", f"Strategies over {result['replays']} seeded replays: share of the pool's "
                             f"judgments needed to find 90% of its {result['n_relevant']} relevant pairs",
               ["strategy", "share_judged_for_90_relevant", "relevant_found_at_end", "queries_stopped_by"], summary),
        _table("checkpoints", f"At each checkpoint (share of the pool's {result['n_pairs']} judgments): relevant "
                              f"found, largest {measure} error over runs, Kendall's tau of the system ranking, "
                              f"95% interval coverage (sampled only), means over replays",
               ["strategy", "checkpoint", "judged_share", "relevant_found", "max_metric_error", "kendall_tau",
                "ci_coverage"], by_checkpoint),
        _table("run_errors", f"Each run's {measure} error (mean absolute, over replays) and interval coverage",
               ["strategy", "checkpoint", "run", "metric_error", "ci_coverage"], per_run),
        _table("full_pool", f"Each run's {measure} with every pair judged", ["run", "full_pool_value"],
               [[run, result["full_values"].get(run)] for run in runs]),
        _table("inputs", "What was replayed", ["measure", "value"], _counts_rows(result)),
    ]


def judging_estimates_tables(result: dict) -> list:
    confidence = f"{result.get('confidence', 0.95):.0%}"
    width = result.get("target_width")
    estimates = [[e["run"], e["measure"], e["estimate"], e["se"], e["ci_low"], e["ci_high"], e["judgments_for_width"]]
                 for e in result["estimates"]]
    design = [["estimator", result["estimator"]], ["design", result["design"]],
              *[[f"convention: {k.replace('_', ' ')}", v] for k, v in (result.get("conventions") or {}).items()],
              ["confidence", result.get("confidence")], ["target width", width if width is not None else "–"],
              *_counts_rows(result)]
    return [
        _table("estimates", f"Estimates per run with {confidence} intervals"
                            + (f"; more judgments for an interval {width:g} wide" if width else ""),
               ["run", "measure", "estimate", "standard_error", "ci_low", "ci_high", "judgments_for_width"],
               estimates),
        _table("ranking", "System ranking per measure: adjacent runs and the probability they are ordered right",
               ["measure", "better", "worse", "p_ordered_right"],
               [[r["measure"], r["better"], r["worse"], r["p_ordered_right"]] for r in result["ranking"]]),
        _table("design", "Estimator, design and conventions", ["measure", "value"], design),
    ]


#: Column names in words for pages (CSV downloads keep the names).
JUDGING_COLUMN_LABELS = {
    "strategy": "Strategy", "share_judged_for_90_relevant": "Share judged for 90% of relevant",
    "relevant_found_at_end": "Relevant found at the end", "queries_stopped_by": "Queries stopped by",
    "checkpoint": "Checkpoint (share of judgments)", "judged_share": "Share judged", "relevant_found": "Relevant found",
    "max_metric_error": "Largest metric error", "kendall_tau": "Kendall's tau", "ci_coverage": "Interval coverage",
    "metric_error": "Metric error", "full_pool_value": "Full pool value", "estimate": "Estimate",
    "standard_error": "Standard error", "ci_low": "Interval low", "ci_high": "Interval high",
    "judgments_for_width": "More judgments for target width", "better": "Better", "worse": "Worse",
    "p_ordered_right": "P(ordered right)",
}

JUDGING_TABLES = {"judging_simulation": judging_simulation_tables, "judging_estimates": judging_estimates_tables}
