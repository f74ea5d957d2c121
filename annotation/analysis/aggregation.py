"""Label aggregation beyond majority vote: Dawid–Skene (crowd-kit's algorithm, over arrays) and
MACE (through crowd-kit).

Pure (NumPy, pandas and crowd-kit, no Django). Input convention as in agreement.py: parallel 1-D arrays,
one entry per label, ``unit`` (the judged pair), ``rater`` and ``value`` (a small non-negative
integer code: 0 not relevant, 1 relevant, or a graded 0-4 scale).

- ``dawid_skene``: Dawid & Skene (1979), EM over per-rater confusion matrices, started from the
  majority-vote label shares: crowd-kit's ``DawidSkene`` step for step (100 iterations at most,
  stopping when its evidence lower bound per label gains less than 1e-5), computed here over
  NumPy arrays (``dawid_skene``) because crowd-kit's pandas joins held ~220 MB for a FIRE-sized
  pool's 663,000 votes and took 13 s (issue 40); tests check it equals crowd-kit called directly.
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
from crowdkit.aggregation import MACE
from numpy.typing import ArrayLike, NDArray

from annotation.analysis.agreement import NO_LABELS, UNRESOLVED, resolve_majority

Model = Literal["majority", "dawid_skene", "mace"]
MODELS: tuple[str, ...] = ("majority", "dawid_skene", "mace")
MODEL_NOTES = {
    "majority": "strict majority of the votes; a tie stays unresolved",
    "dawid_skene": "Dawid-Skene (1979) EM with per-rater confusion matrices, crowd-kit DawidSkene's algorithm, "
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


def _labels(unit: ArrayLike, rater: ArrayLike, value: ArrayLike) -> tuple[NDArray, NDArray, NDArray]:
    """The three columns as int64 arrays, checked (a DataFrame is made only for crowd-kit's MACE)."""
    u = np.asarray(unit, dtype=np.int64)
    r = np.asarray(rater, dtype=np.int64)
    v = np.asarray(value, dtype=np.int64)
    if not (u.ndim == r.ndim == v.ndim == 1) or not (u.size == r.size == v.size):
        raise ValueError("unit, rater and value must be 1-D arrays of the same length")
    if v.size and v.min() < 0:
        raise ValueError("value codes must be non-negative integers")
    return u, r, v


def rater_confusion_counts(unit: ArrayLike, rater: ArrayLike, value: ArrayLike, *, units: ArrayLike,
                           labels: ArrayLike, n_values: int) -> dict[int, list[list[int]]]:
    """Per rater, counts[aggregated label][value given] over the units whose label is decided."""
    u = np.asarray(unit, dtype=np.int64)
    r = np.asarray(rater, dtype=np.int64)
    v = np.asarray(value, dtype=np.int64)
    units = np.asarray(units, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    # Each label's aggregated label (UNRESOLVED where its unit has none), with one label-sized
    # temporary at a time: at 1.33M votes this function was the agreement report's peak (issue 40).
    truth = np.full(u.size, UNRESOLVED, dtype=np.int8 if n_values <= np.iinfo(np.int8).max else np.int64)
    if units.size:
        pos = np.searchsorted(units, u)
        np.minimum(pos, units.size - 1, out=pos)
        found = units[pos] == u
        truth[found] = labels[pos[found]]
        del pos, found
    keep = truth >= 0
    out: dict[int, list[list[int]]] = {}
    for who in np.unique(r):
        mine = keep & (r == who)
        cells = truth[mine].astype(np.int64) * n_values + v[mine]
        out[int(who)] = np.bincount(cells, minlength=n_values * n_values).reshape(n_values, n_values).tolist()
    return out


def _majority(task: NDArray, label: NDArray, n_values: int) -> tuple[NDArray, NDArray, NDArray]:
    units, inverse = _unique_index(task)
    resolution = resolve_majority(inverse, label, n_units=units.size)
    labels = resolution.resolved.astype(np.int64)
    labels[labels == NO_LABELS] = UNRESOLVED
    counts = np.bincount(inverse * np.int64(n_values) + label, minlength=units.size * n_values)
    counts = counts.reshape(units.size, n_values)
    share = counts.max(axis=1) / np.maximum(counts.sum(axis=1), 1)
    return units, labels, share.astype(float)


#: Values looked up at a time by _unique_index: its temporaries stay this size, whatever the input's.
_INDEX_CHUNK = 1 << 18


def _unique_index(values: NDArray) -> tuple[NDArray, NDArray]:
    """np.unique(values, return_inverse=True), the inverse as int32 when it fits, found a chunk at a
    time: np.unique's own inverse sorts the whole input and holds four label-sized arrays (61 MB at
    1.33M votes, the agreement report's peak), this one a chunk's (issue 40)."""
    uniques = np.unique(values)
    inverse = np.empty(values.size, dtype=np.int32 if uniques.size < 2**31 else np.int64)
    for start in range(0, values.size, _INDEX_CHUNK):
        inverse[start:start + _INDEX_CHUNK] = np.searchsorted(uniques, values[start:start + _INDEX_CHUNK])
    return uniques, inverse


#: crowd-kit's floor for probabilities and error rates before a log (crowd-kit DawidSkene's _EPS).
_EPS = 1e-10


def dawid_skene(task: NDArray[np.int64], worker: NDArray[np.int64], label: NDArray[np.int64], *, n_tasks: int,
                n_workers: int, n_labels: int, n_iter: int = 100, tol: float = 1e-5) -> tuple[NDArray, NDArray]:
    """crowd-kit's ``DawidSkene.fit`` over index arrays (one entry per label: ``task`` in
    0..n_tasks-1, ``worker`` in 0..n_workers-1, ``label`` in 0..n_labels-1, the labels seen):
    ``(probas, errors)``, probas[task, true] as crowd-kit's ``probas_`` (floored at 1e-10 by its
    last lower-bound step, as crowd-kit leaves them) and errors[worker, given, true] as its
    ``errors_`` (0 where the worker never gave that label: crowd-kit has no such row).

    Start: majority-vote shares; then E-step (log2 likelihoods, priors floored), priors = mean of
    the probabilities, M-step (counts floored at 1e-10, each worker's true-label column normalised
    over the labels given), and the evidence lower bound per label (crowd-kit adds the log prior
    once per label, not per task), stopping when it gains less than ``tol``."""
    n = task.size
    flat = worker * n_labels + label  # the (worker, given) cell of each label
    seen = np.bincount(flat, minlength=n_workers * n_labels).reshape(n_workers, n_labels) > 0

    def m_step(probas: NDArray) -> NDArray:
        counts = np.stack([np.bincount(flat, weights=probas[task, t], minlength=n_workers * n_labels)
                           for t in range(n_labels)], axis=-1).reshape(n_workers, n_labels, n_labels)
        counts = np.where(seen[:, :, None], np.maximum(counts, _EPS), 0.0)
        return counts / counts.sum(axis=1, keepdims=True)

    # Column by column (one true label at a time), as crowd-kit's frames sum them, and holding one
    # value per label at a time, not one per label and true label.
    # The task x label array is worked on in place, the last step's probabilities overwritten (the
    # E-step reads only the priors and errors made from them): at 1.1M tasks it is 18 MB.
    def e_step(priors: NDArray, errors: NDArray, likelihood: NDArray) -> NDArray:
        logs = np.log2(errors)  # log2 P(given | true), worker x given x true
        for t in range(n_labels):
            likelihood[:, t] = np.bincount(task, weights=logs[worker, label, t], minlength=n_tasks)
        likelihood += np.log2(np.maximum(priors, _EPS))
        likelihood -= likelihood.max(axis=1, keepdims=True)
        np.exp2(likelihood, out=likelihood)
        likelihood /= likelihood.sum(axis=1, keepdims=True)
        return likelihood

    def lower_bound(probas: NDArray, priors: NDArray, errors: NDArray) -> float:
        logs, log_priors = np.log(errors), np.log(np.maximum(priors, _EPS))
        joint = sum(float((probas[task, t] * (logs[worker, label, t] + log_priors[t])).sum()) for t in range(n_labels))
        np.maximum(probas, _EPS, out=probas)  # crowd-kit floors its probabilities in place here
        return joint - sum(float((np.log(probas[:, t]) * probas[:, t]).sum()) for t in range(n_labels))

    counts = np.bincount(task * n_labels + label, minlength=n_tasks * n_labels).reshape(n_tasks, n_labels)
    probas = counts / counts.sum(axis=1, keepdims=True)
    del counts  # not held through the iterations (18 MB at 1.1M tasks)
    priors = probas.mean(axis=0)
    errors = m_step(probas)
    loss = -np.inf
    for _ in range(n_iter):
        probas = e_step(priors, errors, probas)
        priors = probas.mean(axis=0)
        errors = m_step(probas)
        new_loss = lower_bound(probas, priors, errors) / n
        if new_loss - loss < tol:
            break
        loss = new_loss
    return probas, errors


def aggregate(unit: ArrayLike, rater: ArrayLike, value: ArrayLike, *, model: Model = "dawid_skene",
              n_values: int | None = None, n_iter: int = 100, seed: int = 0) -> Aggregation:
    """Aggregates the labels with ``model`` (see the module docstring)."""
    if model not in MODELS:
        raise ValueError(f"unknown aggregation model {model!r}; use one of {', '.join(MODELS)}")
    task, worker_ids, label = _labels(unit, rater, value)
    V = int(n_values) if n_values is not None else (int(label.max()) + 1 if label.size else 2)
    V = max(V, 2)
    note = MODEL_NOTES[model].format(n_iter=n_iter, seed=seed)
    if not label.size:
        empty = np.zeros(0, np.int64)
        return Aggregation(model, empty, empty, np.zeros(0), V, note=note)
    error_model: dict[int, list[list[float]]] = {}
    if model == "majority":
        units, labels, confidence = _majority(task, label, V)
    elif model == "dawid_skene":
        # Indices as int32 (half the memory of the label-sized arrays EM reads every step).
        units, at = _unique_index(task)
        workers, worker = _unique_index(worker_ids)
        # The value codes seen; a code no one used cannot be a label.
        codes, given = _unique_index(label)
        probas, errors = dawid_skene(at, worker, given, n_tasks=units.size, n_workers=workers.size,
                                     n_labels=codes.size, n_iter=n_iter)
        chosen = probas.argmax(axis=1)  # the first of equal probabilities, as pandas' idxmax
        labels, confidence = codes[chosen], np.take_along_axis(probas, chosen[:, None], axis=1)[:, 0]
        # Not held beside the confusion counts below: 43 MB at 1.1M pairs (issue 40).
        del probas, chosen, at, worker, given
        for w, who in enumerate(workers.tolist()):
            m = np.zeros((V, V))
            m[np.ix_(codes, codes)] = errors[w].T  # rows true, columns given
            error_model[int(who)] = m.tolist()
    else:
        fitted = MACE(random_state=seed)  # crowd-kit's defaults: 10 restarts of 50 iterations
        with warnings.catch_warnings():
            # crowd-kit 1.4.2 uses pandas' `inplace=` that pandas 3 deprecates: noise, not our code.
            warnings.filterwarnings("ignore", module=r"crowdkit\.")
            fitted.fit(pd.DataFrame({"task": task, "worker": worker_ids, "label": label}))
        probas = fitted.probas_.sort_index().sort_index(axis=1)
        units = probas.index.to_numpy(dtype=np.int64)
        # Columns are the value codes seen; a code no one used cannot be a label.
        codes = probas.columns.to_numpy(dtype=np.int64)
        matrix = probas.to_numpy(dtype=float)
        labels = fitted.labels_.reindex(probas.index).to_numpy(dtype=np.int64)
        confidence = matrix[np.arange(units.size), np.searchsorted(codes, labels)]
    confusion = rater_confusion_counts(task, worker_ids, label, units=units, labels=labels,
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
