"""Tables of the `machine_judge` report (a machine judge measured against people), in the layout
the report page, the CSV downloads and the `report` command show: a summary in words, Cohen's
kappa with its interval, the confusion matrix, per-query disagreement, and the system ranking
(Kendall's tau and tau_AP with intervals, and each run's score under both judgments)."""
from __future__ import annotations



def _table(name, title, columns, rows):
    # Imported on use: selectors/reports.py registers these builders when it is first imported.
    from annotation.selectors.reports import ReportTable
    return ReportTable(name, title, columns, rows)


def _interval_text(value, interval) -> str:
    """`0.167 [-0.400, 0.800]`; a dash where a figure is undefined (no pair compared, one run)."""
    def text(v):
        return "–" if v is None else f"{v:.3f}"
    low, high = interval if interval else (None, None)
    return f"{text(value)} [{text(low)}, {text(high)}]"


def _ranks(scores: list) -> list:
    """1 for the best score; tied runs share the better rank; a run without a score gets none."""
    known = sorted((s for s in scores if s is not None), reverse=True)
    return [None if s is None else known.index(s) + 1 for s in scores]


def machine_judge_tables(result: dict) -> list:
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
        ["pairs compared (a human label and a machine label)", result["pairs_compared"]],
        ["machine judgments without a human label", result["machine_pairs_without_human_label"]],
        [f"Cohen's kappa [{confidence} interval, {kappa['interval_method']}]",
         _interval_text(kappa["kappa"], kappa["interval"])],
        [f"Kendall's tau of the run rankings [{confidence} interval, {ranking['interval_method']}]",
         _interval_text(ranking["tau"], ranking["tau_interval"])],
        [f"tau_AP, machine ranking against the human one [{confidence} interval]",
         _interval_text(ranking["tau_ap"], ranking["tau_ap_interval"])],
        ["runs ranked by", f"{ranking['measure']}, depth {ranking['depth']}"],
        ["queries with a disagreement", result["queries_with_disagreement"]],
    ]
    (nn, nr), (rn, rr) = kappa["confusion"] if kappa["confusion"] else ((0, 0), (0, 0))
    confusion = [["not relevant", nn, nr, nn + nr], ["relevant", rn, rr, rn + rr],
                 ["total", nn + rn, nr + rr, nn + nr + rn + rr]]
    per_query_columns = ["caption_id", "pairs", "disagreements", "disagreement_rate", "human_relevant",
                         "machine_relevant"]
    listed = result["queries_listed"]
    systems = ranking["systems"]
    human_ranks, machine_ranks = _ranks(ranking["human_scores"]), _ranks(ranking["machine_scores"])
    return [
        _table("summary", f"Machine judge '{judge['name']}' against people", ["measure", "value"], summary),
        _table("kappa", f"Cohen's kappa over {kappa['n']} pairs ({confidence} bootstrap percentile interval over pairs)",
               ["kappa", "kappa_low", "kappa_high", "observed_agreement", "expected_agreement", "pairs",
                "bootstrap_replicates", "confidence"],
               [[kappa["kappa"], k_low, k_high, kappa["observed_agreement"], kappa["expected_agreement"], kappa["n"],
                 kappa["n_boot"], kappa["confidence"]]]),
        _table("confusion", "Confusion matrix: rows the human label, columns the machine's",
               ["human_label", "machine_label_not_relevant", "machine_label_relevant", "total"], confusion),
        _table("per_query", f"Per query, most disagreements first ({listed} listed)", per_query_columns,
               [[q[c] for c in per_query_columns] for q in result["per_query"]]),
        _table("system_ranking", f"Run rankings with human and with machine judgments ({len(systems)} runs, "
                                 f"{ranking['n_queries']} queries, {confidence} bootstrap percentile intervals "
                                 f"over queries)",
               ["statistic", "value", "low", "high", "runs", "queries", "bootstrap_replicates", "confidence"],
               [["Kendall's tau-b", ranking["tau"], t_low, t_high, len(systems), ranking["n_queries"],
                 ranking["n_boot"], ranking["confidence"]],
                ["tau_AP", ranking["tau_ap"], a_low, a_high, len(systems), ranking["n_queries"], ranking["n_boot"],
                 ranking["confidence"]]]),
        _table("runs", f"Each run's {ranking['measure']} with human and with machine judgments",
               ["run", "human_score", "human_rank", "machine_score", "machine_rank"],
               [[name, h, hr, m, mr] for name, h, hr, m, mr in zip(systems, ranking["human_scores"], human_ranks,
                                                                   ranking["machine_scores"], machine_ranks)]),
    ]


MACHINE_JUDGE_COLUMN_LABELS = {
    "kappa": "Cohen's kappa", "kappa_low": "Kappa low", "kappa_high": "Kappa high",
    "observed_agreement": "Observed agreement", "expected_agreement": "Agreement expected by chance",
    "pairs": "Pairs", "human_label": "Human label", "machine_label_not_relevant": "Machine: not relevant",
    "machine_label_relevant": "Machine: relevant", "total": "Total", "disagreements": "Disagreements",
    "disagreement_rate": "Disagreement rate", "human_relevant": "Relevant (human)",
    "machine_relevant": "Relevant (machine)", "statistic": "Statistic", "low": "Interval low",
    "high": "Interval high", "queries": "Queries", "human_score": "Score (human judgments)",
    "human_rank": "Rank (human)", "machine_score": "Score (machine judgments)", "machine_rank": "Rank (machine)",
}

MACHINE_JUDGE_TABLES = {"machine_judge": machine_judge_tables}
