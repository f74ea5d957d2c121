"""Dawid–Skene and MACE (analysis/aggregation.py) on a hand-worked case and on the TVR-Ranking
excerpt, against crowd-kit called directly."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from crowdkit.aggregation import MACE, DawidSkene

from annotation.analysis.agreement import UNRESOLVED
from annotation.analysis.aggregation import aggregate, compare_with_majority

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "tvr_ranking_excerpt.csv"

# Hand-worked: raters a=10, b=11, c=12; 1 relevant, 0 not relevant.
#   t1: a=1 b=1 c=0    t2: a=1 b=1 c=0    t3: a=0 b=0 c=1    t4: a=0 c=1 (a tie for majority)
UNIT = [1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4]
RATER = [10, 11, 12, 10, 11, 12, 10, 11, 12, 10, 12]
VALUE = [1, 1, 0, 1, 1, 0, 0, 0, 1, 0, 1]


def test_dawid_skene_one_em_step_by_hand():
    # Start: majority-vote shares P(0), P(1): t1 = t2 = (1/3, 2/3), t3 = (2/3, 1/3), t4 = (1/2, 1/2);
    # priors = column means = (11/24, 13/24).
    # M-step, P(given | true) from the shares (each true-label column normalised over 'given'):
    #   a: true 0: given 0 = t3 2/3 + t4 1/2 = 7/6, given 1 = t1 1/3 + t2 1/3 = 2/3  -> 7/11, 4/11
    #      true 1: given 0 = 1/3 + 1/2 = 5/6,       given 1 = 2/3 + 2/3 = 4/3        -> 5/13, 8/13
    #   b: true 0: given 0 = 2/3, given 1 = 2/3 -> 1/2, 1/2;  true 1: 1/3, 4/3 -> 1/5, 4/5
    #   c: true 0: given 0 = 2/3, given 1 = 7/6 -> 4/11, 7/11; true 1: 4/3, 5/6 -> 8/13, 5/13
    # E-step, t4 (a=0, c=1): L0 = 11/24 * 7/11 * 7/11 = 49/264, L1 = 13/24 * 5/13 * 5/13 = 25/312
    #   P(0 | t4) = (49/264) / (49/264 + 25/312) = 15288 / 21888 = 0.698465
    # t1 (a=1, b=1, c=0): L0 = 11/24 * 4/11 * 1/2 * 4/11 = 1/33, L1 = 13/24 * 8/13 * 4/5 * 8/13 = 256/1560
    #   P(1 | t1) = (256/1560) / (256/1560 + 1/33) = 0.844125
    result = aggregate(UNIT, RATER, VALUE, model="dawid_skene", n_iter=1)
    assert result.units.tolist() == [1, 2, 3, 4]
    assert result.labels.tolist() == [1, 1, 0, 0]
    assert result.confidence[3] == pytest.approx(15288 / 21888, rel=1e-9)
    p1 = (256 / 1560) / (256 / 1560 + 1 / 33)
    assert result.confidence[0] == pytest.approx(p1, rel=1e-9)
    assert result.confidence[1] == pytest.approx(p1, rel=1e-9)


def test_dawid_skene_fixed_point_and_confusion_matrices():
    # c always contradicts a and b: at the fixed point c is read as flipping every label, so the
    # tie t4 (a=0, c=1) goes to 0, where strict majority leaves it open.
    ds = aggregate(UNIT, RATER, VALUE, model="dawid_skene")
    assert ds.labels.tolist() == [1, 1, 0, 0]
    assert ds.rater_confusion[12] == [[0, 2], [2, 0]]  # rows the model's label, columns c's
    assert ds.rater_confusion[10] == [[2, 0], [0, 2]]
    error_c = np.array(ds.rater_error_model[12])  # rows true, columns given
    assert error_c[0, 1] > 0.99 and error_c[1, 0] > 0.99
    majority = aggregate(UNIT, RATER, VALUE, model="majority")
    assert majority.labels.tolist() == [1, 1, 0, UNRESOLVED]
    cmp = compare_with_majority(majority, ds)
    assert (cmp.n_units, cmp.n_same, cmp.n_different, cmp.n_majority_unresolved, cmp.n_decided_by_model_only) == (4, 3, 1, 1, 1)
    assert cmp.different_units.tolist() == [4]
    mace = aggregate(UNIT, RATER, VALUE, model="mace", seed=0)
    assert mace.labels.tolist() == [1, 1, 0, 0]


def test_unknown_model_and_empty_input():
    with pytest.raises(ValueError, match="unknown aggregation model"):
        aggregate(UNIT, RATER, VALUE, model="glad")
    empty = aggregate([], [], [], model="dawid_skene")
    assert empty.units.size == 0 and empty.labels.size == 0


def _tvr_frame() -> pd.DataFrame:
    with FIXTURE.open(newline="") as handle:
        rows = [(int(r["pair_id"]), int(r["worker"]), int(r["relevance"])) for r in csv.DictReader(handle)]
    return pd.DataFrame(rows, columns=["task", "worker", "label"])


@pytest.mark.parametrize("model", ["dawid_skene", "mace"])
def test_tvr_ranking_excerpt_equals_crowd_kit_called_directly(model):
    # Graded 0-4 labels of 21 real raters, 130 pairs (2 or 4 labels each, some repeats).
    frame = _tvr_frame()
    ours = aggregate(frame.task, frame.worker, frame.label, model=model, n_values=5, seed=0)
    direct = (DawidSkene(n_iter=100, tol=1e-5) if model == "dawid_skene" else MACE(random_state=0)).fit(frame)
    labels = direct.labels_.sort_index()
    assert ours.units.tolist() == labels.index.tolist() == list(range(130))
    assert ours.labels.tolist() == labels.tolist()
    probas = direct.probas_.sort_index().sort_index(axis=1)
    chosen = probas.to_numpy()[np.arange(130), np.searchsorted(probas.columns.to_numpy(), labels.to_numpy())]
    assert np.allclose(ours.confidence, chosen, rtol=0, atol=1e-12)
    # The models do depart from strict majority on real labels (the report's point).
    cmp = compare_with_majority(aggregate(frame.task, frame.worker, frame.label, model="majority", n_values=5), ours)
    assert cmp.n_different > 0
    if model == "dawid_skene":
        errors = direct.errors_
        for worker in (4, 6):
            block = errors.loc[worker]
            for given, row in block.iterrows():
                for true, p in row.items():
                    assert ours.rater_error_model[worker][int(true)][int(given)] == pytest.approx(p, abs=1e-12)


@pytest.mark.parametrize("seed, n_values, n_labels", [(0, 2, 300), (1, 2, 4000), (2, 3, 1500), (3, 5, 800)])
def test_dawid_skene_equals_crowd_kit_on_random_crowds(seed, n_values, n_labels):
    """Dawid-Skene over arrays (issue 40) against crowd-kit's DawidSkene called directly: raters of
    mixed reliability, some who never give one of the values, units with one to four labels."""
    rng = np.random.default_rng(seed)
    n_units, n_raters = n_labels // 2, 12
    truth = rng.integers(0, n_values, n_units)
    accuracy = rng.uniform(0.3, 0.95, n_raters)
    rows = set()
    while len(rows) < n_labels:
        rows.add((int(rng.integers(0, n_units)), int(rng.integers(0, n_raters))))
    unit, rater = (np.array(c) for c in zip(*sorted(rows)))
    right = rng.random(unit.size) < accuracy[rater]
    value = np.where(right, truth[unit], rng.integers(0, n_values, unit.size))
    value[rater == 0] = 0  # rater 0 only ever says 0: crowd-kit has no row for its other values
    frame = pd.DataFrame({"task": unit + 1000, "worker": rater + 50, "label": value})
    ours = aggregate(frame.task, frame.worker, frame.label, model="dawid_skene", n_values=n_values)
    direct = DawidSkene(n_iter=100, tol=1e-5).fit(frame)
    labels = direct.labels_.sort_index()
    probas = direct.probas_.sort_index().sort_index(axis=1)
    assert ours.units.tolist() == labels.index.tolist()
    assert ours.labels.tolist() == labels.astype(int).tolist()
    chosen = probas.to_numpy()[np.arange(ours.units.size), np.searchsorted(probas.columns.to_numpy(), labels.to_numpy())]
    assert np.allclose(ours.confidence, chosen, rtol=0, atol=1e-9)
    for (worker, given), row in direct.errors_.iterrows():
        for true, p in row.items():
            assert ours.rater_error_model[int(worker)][int(true)][int(given)] == pytest.approx(p, abs=1e-9)
    assert ours.rater_error_model[50][1][1] == 0  # rater 0 never said 1


@pytest.mark.parametrize("size", [0, 1, 6, 7, 8, 50])
def test_unit_indices_found_a_chunk_at_a_time_equal_numpys(monkeypatch, size):
    """_unique_index looks values up a chunk at a time (issue 40: np.unique's own inverse was the
    agreement report's memory peak at 1.1M pairs): at every chunk boundary it must give np.unique's."""
    from annotation.analysis import aggregation

    monkeypatch.setattr(aggregation, "_INDEX_CHUNK", 7)
    values = np.random.default_rng(size).integers(-5, 20, size) * 1000
    uniques, inverse = aggregation._unique_index(values)
    expected_uniques, expected_inverse = np.unique(values, return_inverse=True)
    assert uniques.tolist() == expected_uniques.tolist() and inverse.tolist() == expected_inverse.tolist()
    assert inverse.dtype == np.int32


@pytest.mark.parametrize("model", ["majority", "dawid_skene"])
def test_confusion_counts_are_each_raters_labels_against_the_aggregate_counted_by_hand(monkeypatch, model):
    from annotation.analysis import aggregation

    monkeypatch.setattr(aggregation, "_INDEX_CHUNK", 5)  # several chunks even on this small crowd
    rng = np.random.default_rng(7)
    unit, rater = rng.integers(0, 40, 200) * 3 + 1, rng.integers(0, 6, 200) + 100
    value = (rng.random(200) < 0.3).astype(int)
    ours = aggregate(unit, rater, value, model=model, n_values=2)
    label_of = dict(zip(ours.units.tolist(), ours.labels.tolist()))
    by_hand: dict[int, list[list[int]]] = {int(r): [[0, 0], [0, 0]] for r in set(rater.tolist())}
    for u, r, v in zip(unit.tolist(), rater.tolist(), value.tolist()):
        if label_of[u] >= 0:  # a tie (majority) is no aggregate label: not counted
            by_hand[r][label_of[u]][v] += 1
    assert ours.rater_confusion == by_hand
    assert sum(map(sum, sum(by_hand.values(), []))) > 150  # most labels counted
