"""The `ppi_estimates` report kind: prediction-powered (PPI++) estimates from a machine judge over
every pooled pair and the human labels of the pool's design, next to the human-only estimates on the
same labels (issue 25); on a pool whose design gives no interval, the reason and the two scenarios
for the pairs without a verdict instead (issue 35). The computation is
annotation.services.judging.ppi's."""
from __future__ import annotations

from annotation.models import Pool
from annotation.services.judging.inputs import SimulationError
from annotation.services.judging.ppi import COUNT_WORDS_PPI, MachineJudgeError, ppi_estimates_compute
from annotation.services.reports.kind import Param, ReportError, ReportKind, depth_within_pool_check, pool_depth
from annotation.services.reports.kinds.judging_estimates import DESIGN_WORDS, WordedTable, bounds_table, design_rows
from annotation.services.reports.tables import ReportTable


def ppi_report_compute(*, pool: Pool, params: dict, progress=None) -> dict:
    try:
        return ppi_estimates_compute(pool=pool, params=params, progress=progress)
    except (MachineJudgeError, SimulationError) as exc:
        raise ReportError(str(exc)) from exc


def _interval_words(confidence: str) -> dict:
    human, ppi = f"{confidence} human-only interval", f"{confidence} PPI++ interval"
    return {"human_only": "Human-only estimate", "human_low": f"{human}: low", "human_high": f"{human}: high",
            "ppi": "PPI++ estimate", "ppi_low": f"{ppi}: low", "ppi_high": f"{ppi}: high",
            "lambda": "λ (weight of the machine)", "width_ratio": "PPI++ width / human-only width",
            "better": "Better run", "worse": "Worse run"}


def ppi_tables(result: dict) -> list[ReportTable]:
    confidence = f"{result.get('confidence', 0.95):.0%}"
    judge = result["judge"]
    words = _interval_words(confidence)
    design = design_rows(result, COUNT_WORDS_PPI, [
        ["human-only estimator", result.get("human_estimator")], ["interval", result.get("interval") or "none"],
        ["machine judge", f"{judge['name']} (id {judge['id']})" + (f", {judge['model']}" if judge["model"] else "")]])
    tables = []
    if result.get("intervals", True):
        rows = [[e["run"], e["measure"], e["human_estimate"], e["human_ci_low"], e["human_ci_high"], e["ppi_estimate"],
                 e["ppi_ci_low"], e["ppi_ci_high"], e["lambda"], e["width_ratio"]] for e in result["estimates"]]
        diffs = []
        for d in result["differences"]:
            human_width = d["human_ci_high"] - d["human_ci_low"]
            diffs.append([d["measure"], d["better"], d["worse"], d["human_estimate"], d["human_ci_low"],
                          d["human_ci_high"], d["estimate"], d["ci_low"], d["ci_high"], d["lam"],
                          (d["ci_high"] - d["ci_low"]) / human_width if human_width > 0 else None])
        tables += [
            WordedTable("estimates", f"Human-only and PPI++ estimates per run with {confidence} intervals "
                                     f"(machine judge '{judge['name']}')",
                        ["run", "measure", "human_only", "human_low", "human_high", "ppi", "ppi_low", "ppi_high",
                         "lambda", "width_ratio"], rows, words=words),
            WordedTable("differences", f"Differences of runs adjacent in the PPI++ ranking (better - worse), "
                                       f"{confidence} intervals",
                        ["measure", "better", "worse", "human_only", "human_low", "human_high", "ppi", "ppi_low",
                         "ppi_high", "lambda", "width_ratio"], diffs, words=words),
        ]
    tables += [bounds_table(result),
               WordedTable("design", "Design: whether an interval is valid and why; estimators, conventions and counts",
                           ["measure", "value"], design, words=DESIGN_WORDS)]
    return tables


KIND = ReportKind(
    name="ppi_estimates",
    title="Prediction-powered estimates (PPI++)",
    params={
        "judge": Param(int, None, "the machine judge's id (null: the pool's only machine judge)", 1, None,
                       nullable=True),
        "ks": Param(list, [1, 5, 10], "cut-offs K of C@K", 1, 1000),
        "ndcg_k": Param(int, 10, "cut-off of nDCG", 1, 1000),
        "confidence": Param(float, 0.95, "level of the intervals", 0, 1, open_interval=True),
        "depth": Param(int, pool_depth, "ranks of each run estimated (default: the pool's depth)", 1, 1000),
    },
    compute=ppi_report_compute,
    tables=ppi_tables,
    check=depth_within_pool_check,
)
