"""A stored report laid out as tables: the pages, the CSV downloads and the `report` command show
the same ones. Each kind's module builds its own tables (`ReportKind.tables`) from these parts."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

# Column names stay snake_case in CSV downloads (scripts read them); pages show these words.
# Names not listed (a tool's measure names like P_5 or ndcg_cut_10, metric labels like R@1) are
# shown as they are: they are the names people look up.
COLUMN_LABELS = {
    "measure": "Measure", "value": "Value", "labels": "Labels", "multiply_labelled_pairs": "Multiply labelled pairs",
    "pairable_labels": "Pairable labels", "percent_agreement": "Percent agreement",
    "percent_agreement_low": "Percent agreement low", "percent_agreement_high": "Percent agreement high",
    "alpha": "Alpha", "alpha_low": "Alpha low", "alpha_high": "Alpha high",
    "bootstrap_replicates": "Bootstrap replicates", "confidence": "Confidence", "rater": "Rater",
    "compared": "Compared", "agreement_with_resolved": "Agreement with resolved", "gold_labels": "Gold labels",
    "gold_accuracy": "Gold accuracy", "median_seconds": "Median seconds", "ambiguous": "Ambiguous",
    "broken": "Broken", "pair_id": "Pair", "caption_id": "Caption id", "caption": "Caption", "clip_id": "Clip id",
    "votes": "Votes", "run": "Run", "captions_answered": "Captions answered", "metric": "Metric",
    "original": "Original", "corrected": "Corrected", "a": "A", "b": "B", "c": "C", "run_a": "Run A",
    "run_b": "Run B", "topk_overlap": "Top-k overlap", "rbo": "RBO", "positives_removed": "Positives removed",
    "length": "Length (words)", "captions": "Captions", "total_positives": "Total positives",
    "mean_positives": "Mean positives", "median_positives": "Median positives", "tau": "Tau",
    "p_value": "p-value", "runs": "Runs", "n_pairs": "Pairs", "n_original": "Original pairs",
    "n_sampled": "Sampled pairs", "precision": "Precision", "precision_low": "Precision low",
    "precision_high": "Precision high", "full_pool_precision": "Full pool precision",
    "false_negatives": "False negatives", "false_negatives_low": "False negatives low",
    "false_negatives_high": "False negatives high", "queries_scored": "Queries scored",
    "queries_unanswered": "Queries unanswered", "queries_without_judgments": "Queries without judgments",
    "rule": "Rule", "query": "Query", "level": "Level", "labels_used": "Labels used",
    "repeated_cells": "Repeated cells", "seed": "Seed",
    # the judging reports (judging_simulation, judging_estimates)
    "strategy": "Strategy", "share_judged_for_90_relevant": "Share judged for 90% of relevant",
    "relevant_found_at_end": "Relevant found at the end", "queries_stopped_by": "Queries stopped by",
    "checkpoint": "Checkpoint (share of judgments)", "judged_share": "Share judged", "relevant_found": "Relevant found",
    "max_metric_error": "Largest metric error", "kendall_tau": "Kendall's tau", "ci_coverage": "Interval coverage",
    "metric_error": "Metric error", "full_pool_value": "Full pool value", "estimate": "Estimate",
    "standard_error": "Standard error", "ci_low": "Interval low", "ci_high": "Interval high",
    "judgments_for_width": "More judgments for target width", "better": "Better", "worse": "Worse",
    "p_ordered_right": "P(ordered right)",
    # the machine_judge report
    "kappa": "Cohen's kappa", "kappa_low": "Kappa low", "kappa_high": "Kappa high",
    "observed_agreement": "Observed agreement", "expected_agreement": "Agreement expected by chance",
    "pairs": "Pairs", "human_label": "Human label", "machine_label_not_relevant": "Machine: not relevant",
    "machine_label_relevant": "Machine: relevant", "total": "Total", "disagreements": "Disagreements",
    "disagreement_rate": "Disagreement rate", "human_relevant": "Relevant (human)",
    "machine_relevant": "Relevant (machine)", "statistic": "Statistic", "low": "Interval low",
    "high": "Interval high", "queries": "Queries", "human_score": "Score (human judgments)",
    "human_rank": "Rank (human)", "machine_score": "Score (machine judgments)", "machine_rank": "Rank (machine)",
    "bin_low": "Probability from", "bin_high": "Probability to", "mean_probability": "Mean machine probability",
    "observed_relevant": "Observed relevant share (human)",
}


def column_words(column: str, words: dict | None = None) -> str:
    """A column in words: the table's own words (a header that names its interval), else the
    platform's (COLUMN_LABELS), else the name itself (a tool's measure name is what people look up)."""
    return (words or {}).get(column) or COLUMN_LABELS.get(column, column)


@dataclass
class ReportTable:
    """One table of a report. `columns` are field names (the CSV header, what scripts read);
    pages show `headers`, the columns in words, with the field name as each header's tooltip.
    `words` gives this table's own words for some columns, e.g. an interval's
    ("Alpha, 95% bootstrap interval: low"); COLUMN_LABELS gives the rest."""

    name: str
    title: str
    columns: list[str]
    rows: list[list]
    words: dict = field(default_factory=dict)

    @property
    def headers(self) -> list[str]:
        """The columns in words, for pages (the CSV keeps `columns`)."""
        return [column_words(column, self.words) for column in self.columns]

    @property
    def header_cells(self) -> list[tuple[str, str]]:
        """(words, field name) per column: the page's header text and its tooltip."""
        return list(zip(self.headers, self.columns))


def confidence_text(confidence) -> str:
    """0.95 -> '95%'; '' when a report stored none."""
    return f"{confidence:.0%}" if isinstance(confidence, (int, float)) and not isinstance(confidence, bool) else ""


def interval_words(interval: str, figures: dict[str, str]) -> dict[str, str]:
    """Header words of interval columns that say what the interval is: interval_words("95% bootstrap
    interval", {"alpha": "Alpha"}) words alpha_low "Alpha, 95% bootstrap interval: low" and alpha_high
    likewise; the figure "" words bare `low` and `high` columns ("95% bootstrap interval: low")."""
    words = {}
    for name, text in figures.items():
        prefix = f"{name}_" if name else ""
        lead = f"{text}, {interval}" if text else interval
        words |= {f"{prefix}low": f"{lead}: low", f"{prefix}high": f"{lead}: high"}
    return words


def measure_rows(values: dict, skip: tuple[str, ...] = ("note",)) -> list[list]:
    return [[key.replace("_", " "), value] for key, value in values.items() if key not in skip]


def interval_text(value, interval) -> str:
    """`0.200 [-0.500, 1.000]`; a dash where the figure is undefined (one label per unit, no pair
    compared, one run)."""
    def text(v):
        return "–" if v is None else f"{v:.3f}"
    low, high = interval if interval else (None, None)
    return f"{text(value)} [{text(low)}, {text(high)}]"


def natural_key(text: str) -> list:
    """Sort key: 'P_5' before 'P_10', 'q2' before 'q10', case aside."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part.casefold()) for part in re.split(r"(\d+)", text)]


def keys_in_order(keys_per_row) -> list[str]:
    """Every key of the rows, in natural order. A stored result's key order is not the tool's
    (PostgreSQL's jsonb reorders keys), so the same report reads the same everywhere this way."""
    return sorted({key for keys in keys_per_row for key in keys}, key=natural_key)


def counts_rows(result: dict) -> list[list]:
    """A result's counts as (measure, value) rows, then its notes."""
    rows = [[key.replace("_", " "), value] for key, value in (result.get("counts") or {}).items()]
    return rows + [["note", note] for note in result.get("notes") or []]
