"""The `judgment_set_agreement` report kind: agreement of a rater_labels judgment set. Created by
annotation.services.judgment_sets.scoring (computed in judgment_sets/agreement.py) through the
`judgment_set_agreement` operation (services/judgment_sets/operations.py), whose parameters are the
ones declared here; this module lays the stored result out as tables."""
from __future__ import annotations

from annotation.analysis.params import Param
from annotation.analysis.repeats import REPEAT_RULES
from annotation.services.judgment_sets.agreement import LEVELS
from annotation.services.reports.kind import ReportKind
from annotation.services.reports.tables import ReportTable, interval_text, interval_words

#: What a caller chooses.
PARAMS = {
    "level": Param(str, "nominal", "Krippendorff's level of measurement", choices=LEVELS, what="level"),
    # Grades are small numbers (0-3, 0-100): a threshold beyond a million binarizes nothing.
    "binarize_at": Param(float, None, "numeric values at or above it count as 1, the others as 0 (null: the "
                         "values as they are)", -1_000_000, 1_000_000, nullable=True),
    "repeats": Param(str, None, "one rater's repeated labels of a unit: keep the last, the first, or all (null: the "
                     "rule the set was imported with; for a file, the last)", choices=REPEAT_RULES, nullable=True,
                     what="repeat rule"),
}


def judgment_set_agreement_tables(result: dict) -> list[ReportTable]:
    confidence = f"{result['confidence']:.0%}"
    rule = f"{result['repeats']} (repeats ordered by {result['repeats_ordered_by']})"
    scale = result["scale"]
    # An interval scale may have hundreds of grid points: its ends and size say enough.
    shown = ", ".join(map(str, scale)) if len(scale) <= 12 else f"{scale[0]} … {scale[-1]} ({len(scale)} points)"
    summary = [
        ["file", result["file"]],
        ["values", f"{result['values']}: {shown}"],
        ["labels", result["labels"]],
        ["labels used", result["labels_used"]],
        ["units", result["units"]],
        ["units labelled more than once", result["units_multiply_labelled"]],
        ["raters", result["raters"]],
        ["repeated cells (one rater, one unit, several labels)", result["repeated_cells"]],
        ["repeated cells with identical labels", result["repeated_cells_identical"]],
        ["labels set aside by the repeat rule", result["labels_set_aside"]],
        ["repeat rule", rule],
    ]
    if result.get("binarize_at") is not None:
        summary.append(["binarized", f"value >= {result['binarize_at']:g} is 1, else 0"])
    summary += [
        [f"Krippendorff's alpha ({result['level']}) [{confidence} interval]",
         interval_text(result["alpha"], result["alpha_ci"])],
        [f"percent agreement [{confidence} interval]",
         interval_text(result["percent_agreement"], result["percent_agreement_ci"])],
    ]
    pa_ci, alpha_ci = result["percent_agreement_ci"] or [None, None], result["alpha_ci"] or [None, None]
    rater_columns = ["rater", "labels", "labels_used", "repeated_cells", "compared", "agreement_with_resolved"]
    return [
        ReportTable("summary", f"Labels, repeats and agreement of {result['file']}", ["measure", "value"], summary),
        ReportTable("agreement", f"Agreement ({result['level']} Krippendorff's alpha, unit bootstrap, {confidence} "
                                 f"intervals)",
                    ["level", "pairable_labels", "percent_agreement", "percent_agreement_low", "percent_agreement_high",
                     "alpha", "alpha_low", "alpha_high", "bootstrap_replicates", "confidence", "seed"],
                    [[result["level"], result["pairable_labels"], result["percent_agreement"], *pa_ci,
                      result["alpha"], *alpha_ci, result["n_boot"], result["confidence"], result["seed"]]],
                    words=interval_words(f"{confidence} unit bootstrap interval",
                                         {"percent_agreement": "Percent agreement", "alpha": "Alpha"})),
        ReportTable("raters", "Per rater: labels given and used, repeated cells, agreement with the majority label "
                              "of units labelled more than once",
                    rater_columns, [[r[c] for c in rater_columns] for r in result["per_rater"]]),
    ]


KIND = ReportKind(name="judgment_set_agreement", title="Agreement of a judgment set", params=PARAMS,
                  tables=judgment_set_agreement_tables)
