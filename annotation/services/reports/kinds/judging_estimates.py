"""The `judging_estimates` report kind: each run's measures estimated from a pool's labels so far,
with intervals where the pool's design allows them, else the two scenarios for the pairs without a
verdict (issue 15, part 3; issue 35). The computation is annotation.services.judging.estimates'."""
from __future__ import annotations

from dataclasses import dataclass, field

from annotation.services.judging.estimates import COUNT_WORDS, judging_estimates_compute
from annotation.services.reports.kind import Param, ReportKind, depth_within_pool_check, pool_depth
from annotation.services.reports.tables import COLUMN_LABELS, ReportTable


@dataclass
class WordedTable(ReportTable):
    """A table whose page headers come from its own words (the CSV keeps the column names)."""

    words: dict = field(default_factory=dict)

    @property
    def headers(self) -> list[str]:
        return [self.words.get(column, COLUMN_LABELS.get(column, column)) for column in self.columns]


def bounds_table(result: dict) -> WordedTable:
    """The two scenarios per run and measure (every report of the judging estimates' inputs)."""
    rows = [[b["run"], b["measure"], b["unjudged_not_relevant"], b["unjudged_relevant"], b["unjudged_pairs"],
             "yes" if b["bounds_truth"] else "no: a scenario"] for b in result.get("bounds") or []]
    title = ("Each run's measures with every pair without a verdict counted not relevant, and counted relevant"
             + ("" if result.get("intervals", True) else " (no interval: see the design table for why)"))
    return WordedTable("bounds", title, ["run", "measure", "unjudged_not_relevant", "unjudged_relevant",
                                         "unjudged_pairs", "bounds_truth"], rows,
                       words={"unjudged_not_relevant": "Unjudged counted not relevant",
                              "unjudged_relevant": "Unjudged counted relevant",
                              "unjudged_pairs": "Pairs without a verdict in the measured ranks",
                              "bounds_truth": "Bounds the true value"})


def design_rows(result: dict, count_words: dict, extra: list[list] = ()) -> list[list]:
    """The design table's rows: whether there is an interval and why, what to do next time, the
    estimator and its conventions, then the counts in words."""
    rows = [["interval", "yes" if result.get("intervals", True) else "none"], ["design", result.get("design")]]
    if result.get("next_time"):
        rows.append(["next time", result["next_time"]])
    rows.append(["estimator", result.get("estimator")])
    rows += [[f"convention: {k.replace('_', ' ')}", v] for k, v in (result.get("conventions") or {}).items()]
    if result.get("bounds_note"):
        rows.append(["scenarios", result["bounds_note"]])
    rows += [["confidence", result.get("confidence")], *extra]
    rows += [[count_words.get(k, k.replace("_", " ")), v] for k, v in (result.get("counts") or {}).items()]
    if result.get("note"):
        rows.append(["note", result["note"]])
    return rows


DESIGN_WORDS = {"measure": "What", "value": "Value"}


def judging_estimates_tables(result: dict) -> list[ReportTable]:
    confidence = f"{result.get('confidence', 0.95):.0%}"
    width = result.get("target_width")
    design = design_rows(result, COUNT_WORDS, [["target width", width if width is not None else "–"]])
    tables = []
    if result.get("intervals", True):
        interval = f"{confidence} Horvitz-Thompson interval"
        estimates = [[e["run"], e["measure"], e["estimate"], e["se"], e["ci_low"], e["ci_high"],
                      e["judgments_for_width"]] for e in result["estimates"]]
        tables += [
            WordedTable("estimates", f"Estimates per run with {interval}s"
                                     + (f"; more judgments for an interval {width:g} wide" if width else ""),
                        ["run", "measure", "estimate", "standard_error", "ci_low", "ci_high", "judgments_for_width"],
                        estimates, words={"ci_low": f"{interval}: low", "ci_high": f"{interval}: high",
                                          "judgments_for_width": "More judgments for the target width"}),
            WordedTable("ranking", "System ranking per measure: adjacent runs and the probability they are ordered right",
                        ["measure", "better", "worse", "p_ordered_right"],
                        [[r["measure"], r["better"], r["worse"], r["p_ordered_right"]] for r in result["ranking"]],
                        words={"better": "Better run", "worse": "Worse run"}),
        ]
    tables += [bounds_table(result),
               WordedTable("design", "Design: whether an interval is valid and why; estimator, conventions and counts",
                           ["measure", "value"], design, words=DESIGN_WORDS)]
    return tables


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
    check=depth_within_pool_check,
)
