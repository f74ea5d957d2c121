"""The `machine_judge` report kind: a machine judge measured against people (Cohen's kappa, the
confusion matrix, per-query disagreement and the system ranking; annotation.services.machine_judges.agreement
computes them). A pool's judge is measured as a pool report; a judgment set's judge through
annotation.services.machine_judges.reports, with the same parameters."""
from __future__ import annotations

from annotation.models import MachineJudge, Pool
from annotation.services.machine_judges.agreement import CALIBRATION_BINS, SET_DEPTH, machine_judge_result
from annotation.services.machine_judges.errors import MachineJudgeError
from annotation.services.machine_judges.lookup import judge_named
from annotation.services.reports.kind import Param, ReportError, ReportKind, kind_params_clean
from annotation.services.reports.tables import ReportTable, interval_text, interval_words


def machine_judge_report_compute(*, pool: Pool, params: dict, progress=None) -> dict:
    """`params['judge']` names a judge of this pool (default: the pool's only machine judge)."""
    try:
        judge = judge_named(MachineJudge.objects.filter(pool=pool), params.get("judge"), f"pool '{pool.name}'")
        return machine_judge_result(judge=judge, depth=params["depth"], n_boot=params["n_boot"], seed=params["seed"],
                                    confidence=params["confidence"], calibration_bins=params["calibration_bins"])
    except MachineJudgeError as exc:
        raise ReportError(str(exc)) from exc


def judge_depth(pool: Pool | None) -> int:
    """A pool judge's runs are ranked at the pool's depth; a set has none, so its judge's at SET_DEPTH
    (the depth a judging simulation from a set uses too)."""
    return pool.depth if pool is not None else SET_DEPTH


def _ranks(scores: list) -> list:
    """1 for the best score; tied runs share the better rank; a run without a score gets none."""
    known = sorted((s for s in scores if s is not None), reverse=True)
    return [None if s is None else known.index(s) + 1 for s in scores]


#: What the report says where a figure needs human labels and there are none.
NO_HUMAN_LABELS = "no human labels to compare with"


def _ece_text(calibration: dict, digits: int) -> str:
    """The expected calibration error, or why there is none (no pair with a human label: ECE is
    undefined, stored as None, and a page formatting it answered 500 forever)."""
    ece = calibration.get("ece")
    return f"{ece:.{digits}f}" if ece is not None else f"– ({NO_HUMAN_LABELS})"


def machine_judge_tables(result: dict) -> list[ReportTable]:
    judge, kappa, ranking = result["judge"], result["kappa"], result["system_ranking"]
    confidence = f"{kappa['confidence']:.0%}"
    k_low, k_high = kappa["interval"] or (None, None)
    t_low, t_high = ranking["tau_interval"] or (None, None)
    a_low, a_high = ranking["tau_ap_interval"] or (None, None)
    who = judge["name"] + (f" ({judge['model']}" + (f", {judge['prompt_version']}" if judge["prompt_version"] else "")
                           + ")" if judge["model"] else "")
    summary = [
        ["machine judge", who],
        ["human side", result["human_labels"]],
        ["machine judgments", judge["judgments"]],
        ["pairs compared (a human label and a machine label)",
         result["pairs_compared"] if result["pairs_compared"] else f"0 ({NO_HUMAN_LABELS})"],
        ["machine judgments without a human label", result["machine_pairs_without_human_label"]],
        [f"Cohen's kappa [{confidence} interval, {kappa['interval_method']}]",
         interval_text(kappa["kappa"], kappa["interval"])],
        [f"Kendall's tau of the run rankings [{confidence} interval, {ranking['interval_method']}]",
         interval_text(ranking["tau"], ranking["tau_interval"])],
        [f"tau_AP, machine ranking against the human one [{confidence} interval]",
         interval_text(ranking["tau_ap"], ranking["tau_ap_interval"])],
        ["runs ranked by", f"{ranking['measure']}, depth {ranking['depth']}"],
        ["queries with a disagreement", result["queries_with_disagreement"]],
    ]
    calibration = result.get("calibration")  # reports stored before calibration have none
    if calibration:
        summary.append([f"expected calibration error ({calibration['n_bins']} equal-width bins, "
                        f"{calibration['with_score']} of {calibration['n']} pairs with a score)",
                        calibration["ece"] if calibration.get("ece") is not None else f"– ({NO_HUMAN_LABELS})"])
    (nn, nr), (rn, rr) = kappa["confusion"] if kappa["confusion"] else ((0, 0), (0, 0))
    confusion = [["not relevant", nn, nr, nn + nr], ["relevant", rn, rr, rn + rr],
                 ["total", nn + rn, nr + rr, nn + nr + rn + rr]]
    per_query_columns = ["caption_id", "pairs", "disagreements", "disagreement_rate", "human_relevant",
                         "machine_relevant"]
    listed = result["queries_listed"]
    systems = ranking["systems"]
    human_ranks, machine_ranks = _ranks(ranking["human_scores"]), _ranks(ranking["machine_scores"])
    return [
        ReportTable("summary", f"Machine judge '{judge['name']}' against people", ["measure", "value"], summary),
        ReportTable("kappa", f"Cohen's kappa over {kappa['n']} pairs ({confidence} bootstrap percentile interval over pairs)",
                    ["kappa", "kappa_low", "kappa_high", "observed_agreement", "expected_agreement", "pairs",
                     "bootstrap_replicates", "confidence"],
                    [[kappa["kappa"], k_low, k_high, kappa["observed_agreement"], kappa["expected_agreement"], kappa["n"],
                      kappa["n_boot"], kappa["confidence"]]],
                    words=interval_words(f"{confidence} bootstrap interval over pairs", {"kappa": "Cohen's kappa"})),
        ReportTable("confusion", "Confusion matrix: rows the human label, columns the machine's",
                    ["human_label", "machine_label_not_relevant", "machine_label_relevant", "total"], confusion),
        ReportTable("per_query", f"Per query, most disagreements first ({listed} listed)", per_query_columns,
                    [[q[c] for c in per_query_columns] for q in result["per_query"]]),
        ReportTable("system_ranking", f"Run rankings with human and with machine judgments ({len(systems)} runs, "
                                      f"{ranking['n_queries']} queries, {confidence} bootstrap percentile intervals "
                                      f"over queries)",
                    ["statistic", "value", "low", "high", "runs", "queries", "bootstrap_replicates", "confidence"],
                    [["Kendall's tau-b", ranking["tau"], t_low, t_high, len(systems), ranking["n_queries"],
                      ranking["n_boot"], ranking["confidence"]],
                     ["tau_AP", ranking["tau_ap"], a_low, a_high, len(systems), ranking["n_queries"], ranking["n_boot"],
                      ranking["confidence"]]],
                    words=interval_words(f"{confidence} bootstrap interval over queries", {"": ""})),
        ReportTable("runs", f"Each run's {ranking['measure']} with human and with machine judgments",
                    ["run", "human_score", "human_rank", "machine_score", "machine_rank"],
                    [[name, h, hr, m, mr] for name, h, hr, m, mr in zip(systems, ranking["human_scores"], human_ranks,
                                                                        ranking["machine_scores"], machine_ranks)]),
    ] + ([ReportTable("calibration", f"Reliability: the machine's probability of relevance against the human "
                                     f"labels, {calibration['n_bins']} equal-width bins (ECE {_ece_text(calibration, 4)}; "
                                     f"{calibration['query_type_note']})",
                      ["bin_low", "bin_high", "pairs", "mean_probability", "observed_relevant"],
                      [[b["low"], b["high"], b["count"], b["mean_probability"], b["observed_relevant"]]
                       for b in calibration["bins"]])] if calibration else [])


KIND = ReportKind(
    name="machine_judge",
    title="Machine judge against people",
    params={
        "judge": Param(int, None, "the machine judge's id (null: the pool's only machine judge)", 1, None,
                       nullable=True),
        "depth": Param(int, judge_depth, "ranks of each run scored (default: the pool's depth, for a judgment "
                                         "set's judge SET_DEPTH)", 1, 1000),
        "n_boot": Param(int, 1000, "bootstrap replicates of the intervals (0: no intervals)", 0, 20_000),
        "seed": Param(int, 0, "seed of the bootstrap"),
        "confidence": Param(float, 0.95, "level of the bootstrap intervals", 0, 1, open_interval=True),
        "calibration_bins": Param(int, CALIBRATION_BINS, "equal-width bins of the reliability curve", 2, 100),
    },
    compute=machine_judge_report_compute,
    tables=machine_judge_tables,
)


def machine_judge_set_params_clean(*, judge: MachineJudge, params: dict | None) -> dict:
    """A judgment set's judge's report parameters, checked as a pool report's are."""
    return kind_params_clean(kind=KIND, params=dict(params or {}) | {"judge": judge.pk}, pool=None)
