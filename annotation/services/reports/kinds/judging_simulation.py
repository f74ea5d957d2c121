"""The `judging_simulation` report kind: judging strategies replayed on a fully judged pool or a
judgment set (issue 15), curves per strategy and checkpoint. Created by
annotation.services.judging.simulation (its own parameters, and its CSV and SVG files beside the
report); this module lays the stored result out as tables."""
from __future__ import annotations

from annotation.services.reports.kind import ReportKind
from annotation.services.reports.tables import ReportTable, counts_rows


def judging_simulation_tables(result: dict) -> list[ReportTable]:
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
        ReportTable("strategies", f"Strategies over {result['replays']} seeded replays: share of the pool's "
                                  f"judgments needed to find 90% of its {result['n_relevant']} relevant pairs",
                    ["strategy", "share_judged_for_90_relevant", "relevant_found_at_end", "queries_stopped_by"], summary),
        ReportTable("checkpoints", f"At each checkpoint (share of the pool's {result['n_pairs']} judgments): relevant "
                                   f"found, largest {measure} error over runs, Kendall's tau of the system ranking, "
                                   f"95% interval coverage (sampled only), means over replays",
                    ["strategy", "checkpoint", "judged_share", "relevant_found", "max_metric_error", "kendall_tau",
                     "ci_coverage"], by_checkpoint),
        ReportTable("run_errors", f"Each run's {measure} error (mean absolute, over replays) and interval coverage",
                    ["strategy", "checkpoint", "run", "metric_error", "ci_coverage"], per_run),
        ReportTable("full_pool", f"Each run's {measure} with every pair judged", ["run", "full_pool_value"],
                    [[run, result["full_values"].get(run)] for run in runs]),
        ReportTable("inputs", "What was replayed", ["measure", "value"], counts_rows(result)),
    ]


KIND = ReportKind(name="judging_simulation", title="Judging simulation", tables=judging_simulation_tables)
