"""Provenance of stored results: the library versions that computed them and their JSON form.

Every report stores both, so a number in a paper can be traced to the code that produced it.
Imports nothing of the project: any layer (analysis aside, which returns plain values) may use it
without joining an import circle.
"""
from __future__ import annotations

import math
import platform
from importlib import metadata
from typing import Any

import numpy as np

#: (key stored in a report's versions, distribution name) of the libraries that compute report numbers.
_REPORT_LIBRARIES = (("numpy", "numpy"), ("scipy", "scipy"), ("krippendorff", "krippendorff"),
                     ("crowd_kit", "crowd-kit"), ("ir_measures", "ir-measures"),
                     ("pytrec_eval", "pytrec-eval-terrier"), ("Django", "Django"))


def report_versions() -> dict[str, str]:
    """Versions of the libraries that compute report numbers (stored with every report)."""
    versions = {"python": platform.python_version()}
    for name, dist in _REPORT_LIBRARIES:
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
