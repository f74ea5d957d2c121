"""Reports: numbers computed from a pool's labels, stored with the parameters and library versions
that produced them, so every published figure can be traced to a report id.

Kinds: `agreement` (report_agreement.py), `metrics` (report_metrics.py) and `sample_estimate`
(report_sample.py). `report_create` computes and stores one; the API and the pages start it as a
background job (jobs/reports.py), the `report` command runs it in place.
"""
from __future__ import annotations

import math
import platform
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import numpy as np
from django.db import transaction

from annotation.models import Job, Pool, PooledPair, Report
from annotation.services.reports.agreement import agreement_report_compute
from annotation.services.reports.metrics import AP_VARIANTS, metrics_report_compute
from annotation.services.reports.sample import sample_estimate_compute
from annotation.services.accounts.raters import rater_profile
from annotation.selectors.reports import pool_raters_without_profile


class ReportError(ValueError):
    """A report request that cannot be carried out; the message says why."""


@dataclass(frozen=True)
class _Param:
    kind: type
    default: Any
    low: float | None = None
    high: float | None = None
    open_interval: bool = False  # for fractions: strictly between low and high
    nullable: bool = False


def _pool_depth(pool: Pool) -> int:
    return pool.depth


_PARAMS: dict[str, dict[str, _Param]] = {
    "agreement": {
        "n_boot": _Param(int, 1000, 0, 20_000),
        "seed": _Param(int, 0),
        "confidence": _Param(float, 0.95, 0, 1, open_interval=True),
        # MACE beside Dawid-Skene in the aggregation section: 1 to add it (crowd-kit's MACE has a
        # fixed cost of seconds even on a small pool, ~12 s for 40K labels).
        "with_mace": _Param(int, 0, 0, 1),
    },
    "metrics": {
        "depth": _Param(int, _pool_depth, 1, 1000),
        "ks": _Param(list, [1, 5, 10], 1, 1000),
        "decimals": _Param(int, 1, 0, 4),
        "overlap_k": _Param(int, 10, 1, 1000),
        "rbo_p": _Param(float, 0.9, 0, 1, open_interval=True),
    },
    "sample_estimate": {
        "sample_size": _Param(int, None, 1, None, nullable=True),
        "seed": _Param(int, 0),
        "confidence": _Param(float, 0.95, 0, 1, open_interval=True),
        "half_width": _Param(float, 0.05, 0, 1, open_interval=True),
        "depth": _Param(int, _pool_depth, 1, 1000),
    },
    "judging_estimates": {
        "target_width": _Param(float, None, 0, 1, open_interval=True, nullable=True),
        "confidence": _Param(float, 0.95, 0, 1, open_interval=True),
        "depth": _Param(int, _pool_depth, 1, 1000),
    },
    "machine_judge": {
        "judge": _Param(int, None, 1, None, nullable=True),
        "depth": _Param(int, _pool_depth, 1, 1000),
        "n_boot": _Param(int, 1000, 0, 20_000),
        "seed": _Param(int, 0),
        "confidence": _Param(float, 0.95, 0, 1, open_interval=True),
    },
}
REPORT_KINDS = tuple(_PARAMS)
KIND_TITLES = {"agreement": "Agreement", "metrics": "Retrieval metrics", "sample_estimate": "Estimates from a sample",
               "judging_estimates": "Estimates with intervals (judging strategies)",
               "machine_judge": "Machine judge against people"}


def _judging_estimates(**kwargs) -> dict:
    # Imported on use: the judging services import this module (json_ready, report_versions).
    from annotation.services.judging.estimates import judging_estimates_compute
    return judging_estimates_compute(**kwargs)


def _machine_judge(**kwargs) -> dict:
    from annotation.services.machine_judges import MachineJudgeError, machine_judge_report_compute
    try:
        return machine_judge_report_compute(**kwargs)
    except MachineJudgeError as exc:
        raise ReportError(str(exc)) from exc


_COMPUTE: dict[str, Callable[..., dict]] = {
    "agreement": agreement_report_compute,
    "metrics": metrics_report_compute,
    "sample_estimate": sample_estimate_compute,
    "judging_estimates": _judging_estimates,
    "machine_judge": _machine_judge,
}


def _number(name: str, spec: _Param, value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ReportError(f"parameter '{name}' must be a number, got {value!r}")
    if spec.kind is int:
        if isinstance(value, float) and not value.is_integer():
            raise ReportError(f"parameter '{name}' must be a whole number, got {value!r}")
        value = int(value)
    value = float(value) if spec.kind is float else value
    if not math.isfinite(value):
        raise ReportError(f"parameter '{name}' must be finite")
    low_ok = spec.low is None or (value > spec.low if spec.open_interval else value >= spec.low)
    high_ok = spec.high is None or (value < spec.high if spec.open_interval else value <= spec.high)
    if not (low_ok and high_ok):
        bounds = f"between {spec.low:g} and {spec.high:g}" if spec.high is not None else f"at least {spec.low:g}"
        raise ReportError(f"parameter '{name}' must be {bounds}{' (exclusive)' if spec.open_interval else ''}, "
                          f"got {value!r}")
    return value


def report_params_clean(*, kind: str, params: dict | None, pool: Pool) -> dict:
    """The full parameter set of a report: given values checked, defaults filled in."""
    if kind not in _PARAMS:
        raise ReportError(f"unknown report kind '{kind}'; use one of {', '.join(REPORT_KINDS)}")
    params = dict(params or {})
    specs = _PARAMS[kind]
    unknown = sorted(set(params) - set(specs))
    if unknown:
        raise ReportError(f"unknown parameter(s) {', '.join(unknown)} for {kind} reports; "
                          f"known: {', '.join(specs)}")
    clean: dict[str, Any] = {}
    for name, spec in specs.items():
        value = params.get(name)
        if value is None:
            value = spec.default(pool) if callable(spec.default) else spec.default
            clean[name] = list(value) if isinstance(value, list) else value
            continue
        if spec.kind is list:
            if not isinstance(value, list) or not value:
                raise ReportError(f"parameter '{name}' must be a non-empty list of numbers")
            clean[name] = sorted({_number(name, _Param(int, None, spec.low, spec.high), v) for v in value})
        else:
            clean[name] = _number(name, spec, value)
    if kind == "sample_estimate" and clean["sample_size"] is not None:
        n_pairs = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL).count()
        if clean["sample_size"] > n_pairs:
            raise ReportError(f"sample_size {clean['sample_size']} is larger than the pool ({n_pairs} pairs)")
    return clean


def report_versions() -> dict[str, str]:
    """Versions of the libraries that compute report numbers (stored with every report)."""
    versions = {"python": platform.python_version()}
    for name, dist in (("numpy", "numpy"), ("scipy", "scipy"), ("krippendorff", "krippendorff"), ("crowd_kit", "crowd-kit"),
                       ("ir_measures", "ir-measures"), ("pytrec_eval", "pytrec-eval-terrier"), ("Django", "Django")):
        try:
            versions[name] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def json_ready(value: Any) -> Any:
    """Plain JSON: NaN and infinities become null, NumPy numbers and arrays plain Python."""
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if isinstance(value, np.ndarray):
        return json_ready(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _ensure_pseudonyms(pool: Pool) -> None:
    """Reports name raters only by pseudonym; a rater created outside the rater screens may not
    have one yet."""
    for user in pool_raters_without_profile(pool=pool):
        rater_profile(user=user)


def report_create(*, pool: Pool, kind: str, params: dict | None = None, created_by=None, job: Job | None = None,
                  progress: Callable | None = None) -> Report:
    """Computes a report of the pool and stores it with its parameters and library versions."""
    clean = report_params_clean(kind=kind, params=params, pool=pool)
    _ensure_pseudonyms(pool)
    result = _COMPUTE[kind](pool=pool, params=clean, progress=progress)
    # The AP variants are not a choice, but the stored parameters name them so that a reader
    # of the report knows which AP each figure is.
    stored = clean | ({"ap_variants": list(AP_VARIANTS)} if kind == "metrics" else {})
    with transaction.atomic():
        return Report.objects.create(kind=kind, dataset_id=pool.dataset_id, pool=pool,
                                     title=f"{KIND_TITLES[kind]}: {pool.name}", params=stored,
                                     versions=report_versions(), result=json_ready(result), job=job,
                                     created_by=created_by)
