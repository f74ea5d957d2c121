"""How a report kind is declared: its parameters (type, default, description, bounds), how it is
computed and how its stored result reads as tables. Each kind declares one `ReportKind` in its own
module under `kinds/`; `registry.py` lists them and `create.py` creates reports and starts their jobs
from these declarations alone.

Imports nothing that computes a report, so a kind module (and the area services it calls) can use
it without joining an import circle.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from annotation.analysis.params import Param, ParamInvalid, params_clean
from annotation.models import Pool

__all__ = ["Param", "ReportError", "ReportKind", "kind_params_clean", "pool_depth"]


class ReportError(ValueError):
    """A report request that cannot be carried out; the message says why (and `param` names the
    parameter when one is to blame)."""

    def __init__(self, message: str = "", *, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


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


def depth_within_pool_check(*, pool: Pool | None, params: dict) -> None:
    """An estimate's `depth` stays within the pool's: ranks below it were never pooled, so an
    estimator would count them judged not relevant with certainty (a census, zero-width intervals)."""
    depth = params.get("depth")
    if pool is not None and depth is not None and depth > pool.depth:
        raise ReportError(f"parameter 'depth' must be at most the pool's depth ({pool.depth}): ranks below it were "
                          f"never pooled, so nothing about them can be estimated", param="depth")


def kind_params_clean(*, kind: ReportKind, params: dict | None, pool: Pool | None) -> dict:
    """The full parameter set of a report of this kind: given values checked against the kind's
    declarations (analysis/params.py), defaults filled in, then the kind's own check."""
    try:
        clean = params_clean(kind.params, params, target=pool, owner=f"{kind.name} reports")
    except ParamInvalid as exc:
        raise ReportError(str(exc), param=exc.param) from None
    if kind.check is not None:
        kind.check(pool=pool, params=clean)
    return clean
