"""The `judging_estimates` report kind: each run's measures estimated from a pool's labels so far,
with intervals (issue 15, part 3). The computation is annotation.services.judging.estimates'."""
from __future__ import annotations

from annotation.services.judging.estimates import judging_estimates_compute
from annotation.services.reports.kind import Param, ReportKind, pool_depth
from annotation.services.reports.tables import ReportTable, counts_rows


def judging_estimates_tables(result: dict) -> list[ReportTable]:
    confidence = f"{result.get('confidence', 0.95):.0%}"
    width = result.get("target_width")
    estimates = [[e["run"], e["measure"], e["estimate"], e["se"], e["ci_low"], e["ci_high"], e["judgments_for_width"]]
                 for e in result["estimates"]]
    design = [["estimator", result["estimator"]], ["design", result["design"]],
              *[[f"convention: {k.replace('_', ' ')}", v] for k, v in (result.get("conventions") or {}).items()],
              ["confidence", result.get("confidence")], ["target width", width if width is not None else "–"],
              *counts_rows(result)]
    return [
        ReportTable("estimates", f"Estimates per run with {confidence} intervals"
                                 + (f"; more judgments for an interval {width:g} wide" if width else ""),
                    ["run", "measure", "estimate", "standard_error", "ci_low", "ci_high", "judgments_for_width"],
                    estimates),
        ReportTable("ranking", "System ranking per measure: adjacent runs and the probability they are ordered right",
                    ["measure", "better", "worse", "p_ordered_right"],
                    [[r["measure"], r["better"], r["worse"], r["p_ordered_right"]] for r in result["ranking"]]),
        ReportTable("design", "Estimator, design and conventions", ["measure", "value"], design),
    ]


KIND = ReportKind(
    name="judging_estimates",
    title="Estimates with intervals (judging strategies)",
    params={
        "target_width": Param(float, None, "interval width to reach: the report adds the judgments still needed "
                                           "(null: none)", 0, 1, open_interval=True, nullable=True),
        "confidence": Param(float, 0.95, "level of the intervals", 0, 1, open_interval=True),
        "depth": Param(int, pool_depth, "ranks of each run estimated (default: the pool's depth)", 1, 1000),
    },
    compute=judging_estimates_compute,
    tables=judging_estimates_tables,
)
