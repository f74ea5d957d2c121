"""How a report kind is declared: its parameters (type, default, description, bounds), how it is
computed and how its stored result reads as tables. Each kind declares one `ReportKind` in its own
module under `kinds/`; `registry.py` lists them and `create.py` creates reports and starts their jobs
from these declarations alone.

Imports nothing that computes a report, so a kind module (and the area services it calls) can use
it without joining an import circle.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from annotation.models import Pool


class ReportError(ValueError):
    """A report request that cannot be carried out; the message says why."""


@dataclass(frozen=True)
class Param:
    """One report parameter. `type` is int, float or list (a list of whole numbers, stored sorted
    without repeats); `default` may be a function of the pool (None when the report has no pool)."""

    type: type
    default: Any
    description: str
    low: float | None = None
    high: float | None = None
    open_interval: bool = False  # for fractions: strictly between low and high
    nullable: bool = False


@dataclass(frozen=True)
class ReportKind:
    """A report kind as the registry knows it.

    `compute(pool=, params=, progress=)` returns the result to store; a kind without one is created
    by its own area's service (named in its module), which stores it through `store.report_store`.
    `check(pool=, params=)` refuses parameters that are wrong together or for this pool.
    `tables(result)` lays the stored result out as the pages, the CSV downloads and the `report`
    command show it (with `names_raters`, `tables(result, rater_names)`: pages name raters).
    """

    name: str
    #: The kind in words, on pages and in the titles of stored reports; None: pages show `name`.
    title: str | None
    params: dict[str, Param] = field(default_factory=dict)
    compute: Callable[..., dict] | None = None
    check: Callable[..., None] | None = None
    tables: Callable[..., list] | None = None
    names_raters: bool = False
    #: Stored beside the chosen parameters though nobody chooses them, so a reader knows what the
    #: figures are (the metrics report's AP variants).
    fixed_params: dict[str, Any] = field(default_factory=dict)


def pool_depth(pool: Pool) -> int:
    """The default depth of a pool report: the depth the pool was built to."""
    return pool.depth


def _number(name: str, spec: Param, value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ReportError(f"parameter '{name}' must be a number, got {value!r}")
    if spec.type is int:
        if isinstance(value, float) and not value.is_integer():
            raise ReportError(f"parameter '{name}' must be a whole number, got {value!r}")
        value = int(value)
    value = float(value) if spec.type is float else value
    if not math.isfinite(value):
        raise ReportError(f"parameter '{name}' must be finite")
    low_ok = spec.low is None or (value > spec.low if spec.open_interval else value >= spec.low)
    high_ok = spec.high is None or (value < spec.high if spec.open_interval else value <= spec.high)
    if not (low_ok and high_ok):
        bounds = f"between {spec.low:g} and {spec.high:g}" if spec.high is not None else f"at least {spec.low:g}"
        raise ReportError(f"parameter '{name}' must be {bounds}{' (exclusive)' if spec.open_interval else ''}, "
                          f"got {value!r}")
    return value


def kind_params_clean(*, kind: ReportKind, params: dict | None, pool: Pool | None) -> dict:
    """The full parameter set of a report of this kind: given values checked, defaults filled in."""
    params = dict(params or {})
    specs = kind.params
    unknown = sorted(set(params) - set(specs))
    if unknown:
        raise ReportError(f"unknown parameter(s) {', '.join(unknown)} for {kind.name} reports; "
                          f"known: {', '.join(specs)}")
    clean: dict[str, Any] = {}
    for name, spec in specs.items():
        value = params.get(name)
        if value is None:
            value = spec.default(pool) if callable(spec.default) else spec.default
            clean[name] = list(value) if isinstance(value, list) else value
            continue
        if spec.type is list:
            if not isinstance(value, list) or not value:
                raise ReportError(f"parameter '{name}' must be a non-empty list of numbers")
            item = Param(int, None, spec.description, spec.low, spec.high)
            clean[name] = sorted({_number(name, item, v) for v in value})
        else:
            clean[name] = _number(name, spec, value)
    if kind.check is not None:
        kind.check(pool=pool, params=clean)
    return clean
