"""Agreement of a multi-rater label file (`manage.py agreement`): the analysis a pool's agreement
report runs (percent agreement, Krippendorff's alpha with unit-bootstrap intervals, per rater),
on a file instead of a pool's votes. Nothing is stored.

The file is read whole before anything is computed, so a bad line refuses it (ImportRejected, with
file, line and field) and no number comes from half a file. Labels are then coded as the analysis
code expects (small non-negative integers) in a way that keeps every level exact:

- nominal and ordinal: a value's code is its rank among the distinct values. Nominal alpha needs
  only equality and ordinal alpha only order and the marginals, so the ranks give the same alpha
  as the values themselves;
- interval: distances are squared code differences, so codes must be the values on an evenly
  spaced grid: `(value - min) / step`, with `step` the coarsest step that holds every value (0.5
  on a half-point scale); a file needing more than MAX_INTERVAL_CODES grid points is refused;
- `binarize_at V`: value >= V is 1, else 0, before anything else.

Same-rater repeats are resolved by the chosen rule before any figure is computed
(annotation/analysis/repeats.py) and always reported.
"""
from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np

from annotation.analysis.agreement import agreement, percent_agreement, rater_stats, resolve_majority
from annotation.analysis.repeats import REPEAT_RULES, resolve_repeats
from annotation.formats.errors import IssueCollector
from annotation.formats.rater_labels import read_rater_labels
from annotation.provenance import json_ready, report_versions

AGREEMENT_FORMATS = ("rater_labels",)
LEVELS = ("nominal", "ordinal", "interval")
#: Interval codes index count matrices: a scale finer than this many points is refused.
MAX_INTERVAL_CODES = 1001


class AgreementOptionsError(ValueError):
    """The options do not fit the file (e.g. an ordinal level on text labels)."""


class _Interner(dict):
    """Maps each distinct key to 0, 1, 2, ... in order of first appearance."""

    def code(self, key) -> int:
        found = self.get(key)
        if found is None:
            found = self[key] = len(self)
        return found


def _read(path: Path, *, columns: dict[str, str] | None, file_format: str | None, progress) -> dict[str, Any]:
    issues = IssueCollector(path.name)
    units, raters = _Interner(), _Interner()
    unit_codes: list[int] = []
    rater_codes: list[int] = []
    values: list = []
    times: list[float] = []
    has_time = False
    for label in read_rater_labels(path, issues, columns=columns, file_format=file_format, progress=progress):
        if issues:
            continue  # keep reading only to report further problems; nothing of this file is used
        unit_codes.append(units.code(label.unit))
        rater_codes.append(raters.code(label.rater))
        values.append(label.value)
        if label.time is not None:
            has_time = True
            times.append(label.time)
    issues.raise_if_any()
    if not values:
        issues.add(None, None, "the file holds no labels")
        issues.raise_if_any()
    return {"unit": np.asarray(unit_codes, dtype=np.int64), "rater": np.asarray(rater_codes, dtype=np.int64),
            "values": values, "time": np.asarray(times) if has_time else None,
            "rater_names": list(raters), "numeric": isinstance(values[0], float)}


def _decimals(x: float) -> int:
    exponent = Decimal(repr(x)).normalize().as_tuple().exponent
    return max(0, -int(exponent))


def _codes(values: list, *, numeric: bool, level: str, binarize_at: float | None) -> tuple[np.ndarray, list]:
    """(codes aligned to values, the value each code stands for)."""
    if binarize_at is not None:
        if not numeric:
            raise AgreementOptionsError("--binarize-at needs numeric values; this file's values are labels")
        return (np.asarray(values, dtype=float) >= binarize_at).astype(np.int64), [0, 1]
    if not numeric:
        if level != "nominal":
            raise AgreementOptionsError(f"the {level} level needs numeric values; this file's values are labels "
                                        f"(use --level nominal)")
        distinct, codes = np.unique(np.asarray(values, dtype=object).astype(str), return_inverse=True)
        return codes.astype(np.int64), distinct.tolist()
    x = np.asarray(values, dtype=float)
    distinct = np.unique(x)
    if level != "interval":
        return np.searchsorted(distinct, x).astype(np.int64), distinct.tolist()
    places = max(_decimals(float(v)) for v in distinct)
    if places > 6:
        raise AgreementOptionsError(f"the interval level needs values with at most 6 decimals; this file has "
                                    f"{distinct[np.argmax([_decimals(float(v)) for v in distinct])]!r}")
    scale = 10 ** places
    if (distinct[-1] - distinct[0]) * scale >= MAX_INTERVAL_CODES * 1000:  # before any int64 could overflow
        raise AgreementOptionsError(
            f"the interval level needs values on a grid of at most {MAX_INTERVAL_CODES} points; this file's values "
            f"run from {distinct[0]:g} to {distinct[-1]:g}")
    steps = np.rint((distinct - distinct[0]) * scale).astype(np.int64)
    # The coarsest grid that holds every value: 0, 0.5 and 1.5 sit on steps of 0.5.
    unit = int(np.gcd.reduce(steps)) or 1
    span = int(steps[-1]) // unit + 1
    if span > MAX_INTERVAL_CODES:
        raise AgreementOptionsError(
            f"the interval level needs values on a grid of at most {MAX_INTERVAL_CODES} points; this file's values "
            f"run from {distinct[0]:g} to {distinct[-1]:g} in steps of {unit / scale:g} ({span:,} points)")
    codes = steps[np.searchsorted(distinct, x)] // unit
    return codes, (distinct[0] + np.arange(span) * unit / scale).tolist()


def agreement_file_compute(*, path: Path, judgments_format: str = "rater_labels", columns: dict[str, str] | None = None,
                           file_format: str | None = None, level: str = "nominal", binarize_at: float | None = None,
                           repeats: str = "last", n_boot: int = 1000, seed: int = 0, confidence: float = 0.95,
                           progress: Callable | None = None) -> dict[str, Any]:
    """The agreement of the labels in `path`, as plain JSON-ready data.

    Raises ImportRejected for a bad file (every problem with file, line and field) and
    AgreementOptionsError for options that do not fit it."""
    if judgments_format not in AGREEMENT_FORMATS:
        raise AgreementOptionsError(f"judgments format must be one of {', '.join(AGREEMENT_FORMATS)}")
    if level not in LEVELS:
        raise AgreementOptionsError(f"level must be one of {', '.join(LEVELS)}")
    if repeats not in REPEAT_RULES:
        raise AgreementOptionsError(f"repeats must be one of {', '.join(REPEAT_RULES)}")
    if n_boot < 0 or not 0 < confidence < 1:
        raise AgreementOptionsError("n_boot must be >= 0 and confidence between 0 and 1")
    path = Path(path)
    data = _read(path, columns=columns, file_format=file_format, progress=progress)
    codes, code_values = _codes(data["values"], numeric=data["numeric"], level=level, binarize_at=binarize_at)
    unit, rater = data["unit"], data["rater"]
    n_units = int(unit.max()) + 1

    order_by = "time" if data["time"] is not None else "file order"
    rep = resolve_repeats(unit, rater, codes, rule=repeats, order=data["time"])
    ku, kr, kv = unit[rep.keep], rater[rep.keep], codes[rep.keep]
    result = agreement(ku, kv, level=level, n_boot=n_boot, seed=seed, confidence=confidence)

    resolved = resolve_majority(ku, kv, n_units=n_units).resolved
    stats = rater_stats(ku, kr, kv, resolved=resolved)
    given = np.bincount(rater, minlength=len(data["rater_names"]))
    per_rater = [{
        "rater": data["rater_names"][row["rater"]],
        "labels": int(given[row["rater"]]),
        "labels_used": row["n_labels"],
        "repeated_cells": int(rep.repeated_cells_per_rater[row["rater"]]),
        "compared": row["n_compared"],
        "agreement_with_resolved": row["agreement_with_resolved"],
    } for row in stats]
    # Numeric rater ids (TVR-Ranking's workers) read best in numeric order.
    per_rater.sort(key=lambda r: (0, int(r["rater"]), "") if r["rater"].isdigit() else (1, 0, r["rater"]))

    return json_ready({
        "file": path.name,
        "judgments_format": judgments_format,
        "values": "numbers" if data["numeric"] else "labels",
        "scale": [int(v) if isinstance(v, float) and v.is_integer() else v for v in code_values],
        "level": level,
        "binarize_at": binarize_at,
        "repeats": repeats,
        "repeats_ordered_by": order_by,
        "labels": int(unit.size),
        "labels_used": int(ku.size),
        "units": n_units,
        "units_multiply_labelled": result.n_units_multi,
        "pairable_labels": result.n_pairable_labels,
        "raters": len(data["rater_names"]),
        "repeated_cells": rep.repeated_cells,
        "repeated_cells_identical": rep.repeated_cells_identical,
        "labels_set_aside": rep.labels_set_aside,
        "percent_agreement": result.percent_agreement,
        "percent_agreement_ci": result.percent_agreement_ci,
        # The other share people quote: every label counted, a rater's repeats included (TVR-Ranking:
        # 0.4030 against 0.3885 with one label per rater). Equal to the above under --repeats all.
        "percent_agreement_every_label": percent_agreement(unit, codes),
        "alpha": result.alpha,
        "alpha_ci": result.alpha_ci,
        "n_boot": n_boot,
        "seed": seed,
        "confidence": confidence,
        "per_rater": per_rater,
        "versions": report_versions(),
    })
