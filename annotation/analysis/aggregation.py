"""Label aggregation beyond majority vote: Dawid–Skene and MACE, through crowd-kit.

Pure (pandas and crowd-kit, no Django). Input convention as in agreement.py: parallel 1-D arrays,
one entry per label, ``unit`` (the judged pair), ``rater`` and ``value`` (a small non-negative
integer code: 0 not relevant, 1 relevant, or a graded 0-4 scale).

- ``dawid_skene``: Dawid & Skene (1979), EM over per-rater confusion matrices, started from the
  majority-vote label shares (crowd-kit's ``DawidSkene``, 100 iterations at most, tolerance 1e-5).
- ``mace``: Hovy et al. (2013), each rater either knows the answer or spams with a rater-specific
  distribution; variational Bayes with 10 seeded restarts (crowd-kit's ``MACE``).
- ``majority``: the platform's strict majority (agreement.resolve_majority): a tie stays
  unresolved (``UNRESOLVED``), unlike crowd-kit's ``MajorityVote``, which breaks ties at random.

Per-rater confusion matrices are given two ways: ``counts`` (how often the rater gave each value
when the model settled on each label, from the model's labels; defined for every model) and, for
Dawid–Skene, the model's own estimate ``P(given | true)``.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
from crowdkit.aggregation import MACE, DawidSkene
from numpy.typing import ArrayLike, NDArray

from annotation.analysis.agreement import NO_LABELS, UNRESOLVED, resolve_majority

Model = Literal["majority", "dawid_skene", "mace"]
MODELS: tuple[str, ...] = ("majority", "dawid_skene", "mace")
MODEL_NOTES = {
    "majority": "strict majority of the votes; a tie stays unresolved",
    "dawid_skene": "Dawid-Skene (1979) EM with per-rater confusion matrices, crowd-kit DawidSkene, "
                   "started from majority-vote shares, at most {n_iter} iterations, tol 1e-5",
    "mace": "MACE (Hovy et al. 2013), crowd-kit MACE, variational Bayes, 10 restarts of 50 iterations, seed {seed}",
}


@dataclass
class Aggregation:
    """One label per unit that has labels.

    ``units`` are the sorted distinct units; ``labels[i]`` the aggregated code of ``units[i]``
    (``UNRESOLVED`` where the model cannot decide, only for majority); ``confidence[i]`` the model's
    posterior probability of that label (the winning vote share for majority).
    ``rater_confusion[rater]`` is a V x V matrix, rows the aggregated label, columns the value the
    rater gave: counts. ``rater_error_model[rater]`` is Dawid–Skene's estimate of P(given | true),
    rows true, columns given (empty for the other models).
    """

    model: str
    units: NDArray[np.int64]
    labels: NDArray[np.int64]
    confidence: NDArray[np.float64]
    n_values: int
    rater_confusion: dict[int, list[list[int]]] = field(default_factory=dict)
    rater_error_model: dict[int, list[list[float]]] = field(default_factory=dict)
    note: str = ""

    def label_of(self) -> dict[int, int]:
        return {int(u): int(v) for u, v in zip(self.units, self.labels)}


def _frame(unit: ArrayLike, rater: ArrayLike, value: ArrayLike) -> pd.DataFrame:
    u = np.asarray(unit, dtype=np.int64)
    r = np.asarray(rater, dtype=np.int64)
    v = np.asarray(value, dtype=np.int64)
    if not (u.ndim == r.ndim == v.ndim == 1) or not (u.size == r.size == v.size):
        raise ValueError("unit, rater and value must be 1-D arrays of the same length")
    if v.size and v.min() < 0:
        raise ValueError("value codes must be non-negative integers")
    return pd.DataFrame({"task": u, "worker": r, "label": v})


def rater_confusion_counts(unit: ArrayLike, rater: ArrayLike, value: ArrayLike, *, units: ArrayLike,
                           labels: ArrayLike, n_values: int) -> dict[int, list[list[int]]]:
    """Per rater, counts[aggregated label][value given] over the units whose label is decided."""
    u = np.asarray(unit, dtype=np.int64)
    r = np.asarray(rater, dtype=np.int64)
    v = np.asarray(value, dtype=np.int64)
    units = np.asarray(units, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    pos = np.searchsorted(units, u)
    found = (pos < units.size) & (units[np.minimum(pos, max(units.size - 1, 0))] == u) if units.size else np.zeros(u.size, bool)
    truth = np.full(u.size, UNRESOLVED, dtype=np.int64)
    truth[found] = labels[pos[found]]
    keep = truth >= 0
    out: dict[int, list[list[int]]] = {}
    for who in np.unique(r):
        mine = keep & (r == who)
        counts = np.bincount(truth[mine] * n_values + v[mine], minlength=n_values * n_values).reshape(n_values, n_values)
        out[int(who)] = counts.tolist()
    return out


def _majority(frame: pd.DataFrame, n_values: int) -> tuple[NDArray, NDArray, NDArray]:
    units, inverse = np.unique(frame["task"].to_numpy(), return_inverse=True)
    resolution = resolve_majority(inverse, frame["label"].to_numpy(), n_units=units.size)
    labels = resolution.resolved.astype(np.int64)
    labels[labels == NO_LABELS] = UNRESOLVED
    counts = np.bincount(inverse * n_values + frame["label"].to_numpy(), minlength=units.size * n_values)
    counts = counts.reshape(units.size, n_values)
    share = counts.max(axis=1) / np.maximum(counts.sum(axis=1), 1)
    return units, labels, share.astype(float)


def aggregate(unit: ArrayLike, rater: ArrayLike, value: ArrayLike, *, model: Model = "dawid_skene",
              n_values: int | None = None, n_iter: int = 100, seed: int = 0) -> Aggregation:
    """Aggregates the labels with ``model`` (see the module docstring)."""
    if model not in MODELS:
        raise ValueError(f"unknown aggregation model {model!r}; use one of {', '.join(MODELS)}")
    frame = _frame(unit, rater, value)
    V = int(n_values) if n_values is not None else (int(frame["label"].max()) + 1 if len(frame) else 2)
    V = max(V, 2)
    note = MODEL_NOTES[model].format(n_iter=n_iter, seed=seed)
    if not len(frame):
        empty = np.zeros(0, np.int64)
        return Aggregation(model, empty, empty, np.zeros(0), V, note=note)
    error_model: dict[int, list[list[float]]] = {}
    if model == "majority":
        units, labels, confidence = _majority(frame, V)
    else:
        if model == "dawid_skene":
            fitted = DawidSkene(n_iter=n_iter, tol=1e-5)
        else:
            fitted = MACE(random_state=seed)  # crowd-kit's defaults: 10 restarts of 50 iterations
        with warnings.catch_warnings():
            # crowd-kit 1.4.2 uses pandas' `inplace=` that pandas 3 deprecates: noise, not our code.
            warnings.filterwarnings("ignore", module=r"crowdkit\.")
            fitted.fit(frame)
        probas = fitted.probas_.sort_index().sort_index(axis=1)
        units = probas.index.to_numpy(dtype=np.int64)
        # Columns are the value codes seen; a code no one used cannot be a label.
        codes = probas.columns.to_numpy(dtype=np.int64)
        matrix = probas.to_numpy(dtype=float)
        labels = fitted.labels_.reindex(probas.index).to_numpy(dtype=np.int64)
        confidence = matrix[np.arange(units.size), np.searchsorted(codes, labels)]
        if model == "dawid_skene":
            errors = fitted.errors_  # index (worker, given), columns true; each column sums to 1
            for who, block in errors.groupby(level="worker", sort=True):
                m = np.zeros((V, V))
                for (_, given), row in block.iterrows():
                    for true, p in row.items():
                        m[int(true), int(given)] = float(p)
                error_model[int(who)] = m.tolist()
    confusion = rater_confusion_counts(frame["task"], frame["worker"], frame["label"], units=units, labels=labels,
                                       n_values=V)
    return Aggregation(model, units, labels, np.asarray(confidence, float), V, confusion, error_model, note)


@dataclass
class Comparison:
    """Where a model's labels and strict majority differ, over the units both saw."""

    model: str
    n_units: int
    n_same: int
    n_different: int
    n_majority_unresolved: int  # ties majority left open
    n_decided_by_model_only: int  # of those, the ones the model decided
    different_units: NDArray[np.int64]
    majority_labels: NDArray[np.int64]  # for different_units (UNRESOLVED for a tie)
    model_labels: NDArray[np.int64]


def compare_with_majority(majority: Aggregation, other: Aggregation) -> Comparison:
    if not np.array_equal(majority.units, other.units):
        raise ValueError("both aggregations must cover the same units")
    m, o = majority.labels, other.labels
    differ = m != o
    unresolved = m == UNRESOLVED
    return Comparison(other.model, int(m.size), int((~differ).sum()), int(differ.sum()), int(unresolved.sum()),
                      int((unresolved & (o != UNRESOLVED)).sum()), majority.units[differ], m[differ], o[differ])
