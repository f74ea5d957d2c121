"""Raw multi-rater label files as graded qrels for `evaluate` (``--judgments-format rater_labels``).

The file is read as `manage.py agreement` reads it (annotation/formats/rater_labels.py: CSV or
JSON Lines, ``--columns`` to map the file's own column names). Per (query, item):

1. one rater's repeated labels are resolved by ``--repeats`` (last, first or all; by the time
   column when the file has one, else file order), as the agreement command does
   (annotation/analysis/repeats.py);
2. the remaining values become one whole grade by ``--aggregate`` (annotation/analysis/grades.py).

The default aggregate is ``mean``, TVR-Ranking's: its readme says the validation and test
relevance of a moment is the average of its workers' relevance labels (after removing pairs
without consensus, a rule its repository does not publish, so nothing is removed here), and its
evaluation (modules/ndcg_iou.py) takes that average as the gain. trec_eval reads whole grades, so
the mean is rounded half up; and trec_eval's nDCG gains the grade itself where TVR-Ranking's
nDCG@K,IoU gains ``2^rel - 1`` over matched moments, so these numbers are trec_eval's on the
pairs, not TVR-Ranking's moment measure.

Values are numbers (graded scales) or the label words relevant (1) and not_relevant / irrelevant
(0). A file that names its units by one column (``unit``, TVR-Ranking's ``pair_id``) has no
query and no item to score a run against and is refused.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from annotation.analysis.grades import AGGREGATES, aggregate_grades
from annotation.analysis.repeats import REPEAT_RULES, resolve_repeats
from annotation.formats.errors import ImportRejected, FileIssue, IssueCollector
from annotation.formats.fields import shown
from annotation.formats.rater_labels import FILE_FORMATS, parse_columns, read_rater_labels

from .errors import EvaluationError
from .judgments import Judgments, read_originals

#: Label words a rater_labels file may use instead of grades.
LABEL_GRADES = {"relevant": 1, "not_relevant": 0, "irrelevant": 0}


def _columns(columns: str | dict | None) -> dict[str, str]:
    if isinstance(columns, dict):
        return dict(columns)
    try:
        return parse_columns(columns)
    except ValueError as exc:
        raise EvaluationError(str(exc)) from exc


def read_rater_judgments(path: Path, *, columns: str | dict | None = None, repeats: str = "last",
                         aggregate: str = "mean", file_format: str | None = None,
                         originals: Path | None = None) -> Judgments:
    """Graded qrels {query: {item: grade}}; raises ImportRejected (file, line, field) for a bad file
    and EvaluationError for options that do not fit it."""
    path = Path(path)
    if repeats not in REPEAT_RULES:
        raise EvaluationError(f"--repeats must be one of {', '.join(REPEAT_RULES)}")
    if aggregate not in AGGREGATES:
        raise EvaluationError(f"--aggregate must be one of {', '.join(AGGREGATES)}")
    if file_format is not None and file_format not in FILE_FORMATS:
        raise EvaluationError(f"--file-format must be one of {', '.join(FILE_FORMATS)}")
    mapping = _columns(columns)
    value_column = mapping.get("value", "value")
    issues = IssueCollector(path.name)
    units: dict[tuple[str, str], int] = {}
    raters: dict[str, int] = {}
    unit_codes: list[int] = []
    rater_codes: list[int] = []
    values: list[float] = []
    times: list[float] = []
    for label in read_rater_labels(path, issues, columns=mapping, file_format=file_format):
        if isinstance(label.unit, str):
            unit_column = mapping.get("unit", "unit")
            raise ImportRejected([FileIssue(
                path.name, label.line, unit_column,
                f"the file names its units by one column ({unit_column!r}): a run is scored against queries and "
                f"items, so map them with --columns query=COLUMN,item=COLUMN (the unit column cannot be split)")])
        if isinstance(label.value, str):
            grade = LABEL_GRADES.get(label.value)
            if grade is None:
                issues.add(label.line, value_column, f"{shown(label.value)} is not a grade: give numbers, or the "
                                                     f"labels relevant / not_relevant (irrelevant)")
                continue
        else:
            grade = label.value
            if grade < 0:
                issues.add(label.line, value_column, f"{grade:g} is negative: grades run from 0 (not relevant) up")
                continue
        if issues:
            continue  # keep reading only to report further problems
        unit_codes.append(units.setdefault(label.unit, len(units)))
        rater_codes.append(raters.setdefault(label.rater, len(raters)))
        values.append(float(grade))
        if label.time is not None:
            times.append(label.time)
    issues.raise_if_any()
    if not values:
        issues.add(None, None, "the file holds no labels")
        issues.raise_if_any()
    unit = np.asarray(unit_codes, dtype=np.int64)
    value = np.asarray(values)
    rep = resolve_repeats(unit, np.asarray(rater_codes, dtype=np.int64), value, rule=repeats,
                          order=np.asarray(times) if times else None)
    grades = aggregate_grades(unit[rep.keep], value[rep.keep], rule=aggregate, n_units=len(units))
    qrels: dict[str, dict[str, int]] = {}
    for (query, item), code in units.items():
        qrels.setdefault(query, {})[item] = int(grades[code])
    ordered_by = "time" if times else "file order"
    rules = (f"rater labels: {len(values)} labels by {len(raters)} raters on {len(units)} (query, item) pairs; "
             f"repeats '{repeats}' (by {ordered_by}): {rep.repeated_cells} (pair, rater) cells labelled more than "
             f"once, {rep.labels_set_aside} labels set aside; grade = {aggregate} of the raters' values, rounded "
             f"half up to a whole grade (trec_eval reads whole grades); labels relevant = 1, not_relevant = 0")
    return Judgments("rater_labels", path.name, qrels, originals=read_originals(originals), rules=rules)
