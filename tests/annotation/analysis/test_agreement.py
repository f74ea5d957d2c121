import csv
import itertools
import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from nltk.metrics.agreement import AnnotationTask
from nltk.metrics.distance import binary_distance

from annotation.analysis import agreement as A

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "tvr_ranking_excerpt.csv"

# --------------------------------------------------------------------------------------------
# Hand-worked binary example (1 = relevant, 0 = not relevant). Labels in submission order:
#   u0: r0=1, r1=1
#   u1: r0=0, r2=0
#   u2: r1=1, r2=0
#   u3: r0=1, r1=0, r2=1     (first two disagree -> third label, as in the platform)
#   u4: r2=0                 (single label, not pairable)
UNIT = np.array([0, 0, 1, 1, 2, 2, 3, 3, 3, 4])
RATER = np.array([0, 1, 0, 2, 1, 2, 0, 1, 2, 2])
VALUE = np.array([1, 1, 0, 0, 1, 0, 1, 0, 1, 0])
SECONDS = np.array([10.0, 20.0, 30.0, 5.0, 7.0, 9.0, 50.0, np.nan, 1.0, 3.0])


def test_percent_agreement_and_alpha_all_labels_by_hand():
    # Multiply-labelled units u0..u3; u0 and u1 agree, u2 and u3 do not -> 2/4 = 0.5.
    # Coincidences o_ck = sum_u n_uc (n_uk - [c=k]) / (m_u - 1):
    #   u0: o11 += 2          u1: o00 += 2          u2: o01 += 1, o10 += 1
    #   u3 (n1=2, n0=1, m=3): o11 += 2*1/2 = 1, o01 += 2*1/2 = 1, o10 += 1
    #   o = [[2, 2], [2, 3]], n0 = 4, n1 = 5, n = 9
    # D_o = (o01 + o10)/n = 4/9; D_e = 2 n0 n1 / (n(n-1)) = 40/72 = 5/9; alpha = 1 - 4/5 = 0.2
    assert A.percent_agreement(UNIT, VALUE) == pytest.approx(0.5)
    assert A.krippendorff_alpha(UNIT, VALUE, level="nominal") == pytest.approx(0.2)
    _, counts = A.value_counts_matrix(UNIT, VALUE)
    assert A.alpha_from_value_counts(counts, level="nominal") == pytest.approx(0.2)


def test_first_two_labels_by_hand_and_bias_of_third_label():
    # First two labels only: u3 becomes (1, 0). Units: (1,1) (0,0) (1,0) (1,0): agreement 2/4.
    # o11 = 2, o00 = 2, o01 = o10 = 2; n0 = n1 = 4, n = 8
    # D_o = 4/8 = 0.5; D_e = 2*16/(8*7) = 4/7; alpha = 1 - 0.5*7/4 = 0.125
    assert A.percent_agreement(UNIT, VALUE, first_two=True) == pytest.approx(0.5)
    assert A.krippendorff_alpha(UNIT, VALUE, level="nominal", first_two=True) == pytest.approx(0.125)
    rep = A.agreement_report(UNIT, VALUE, n_boot=0)
    assert rep["first_two"].alpha == pytest.approx(0.125)
    assert rep["all"].alpha == pytest.approx(0.2)
    # The third label, asked only on disagreement, raises alpha: both must be reported.
    assert rep["all"].alpha > rep["first_two"].alpha
    assert rep["first_two"].n_pairable_labels == 8 and rep["all"].n_pairable_labels == 9


def test_order_selects_first_two_by_submission_time_not_input_position():
    # Same labels as above but u3's rows given in reverse input order with explicit order
    # numbers: the first two by time are still (1, 0).
    unit = np.array([0, 0, 1, 1, 2, 2, 3, 3, 3, 4])
    value = np.array([1, 1, 0, 0, 1, 0, 1, 0, 1, 0])
    order = np.array([0, 1, 0, 1, 0, 1, 2, 1, 0, 0])  # u3: (1 @2), (0 @1), (1 @0)
    # by time u3 = 1 (order 0), 0 (order 1), 1 (order 2) -> first two (1, 0)
    assert A.krippendorff_alpha(unit, value, level="nominal", order=order, first_two=True) == pytest.approx(0.125)
    # If time order put the two 1s first, u3 would agree: (1,1) -> units (1,1)(0,0)(1,0)(1,1)
    # o11=4, o00=2, o01=o10=1: n0=3, n1=5, n=8, D_o=2/8, D_e=2*15/56; alpha = 1 - 0.25*56/30
    order2 = np.array([0, 1, 0, 1, 0, 1, 0, 2, 1, 0])
    assert A.krippendorff_alpha(unit, value, level="nominal", order=order2, first_two=True) == pytest.approx(
        1 - 0.25 * 56 / 30
    )
    assert A.label_positions(unit, order=order).tolist() == [0, 1, 0, 1, 0, 1, 2, 1, 0, 0]


def test_krippendorff_2011_reliability_data():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", 4 observers x 12 units.
    nan = np.nan
    data = np.array(
        [
            [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
            [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
        ]
    )
    obs, unit = np.nonzero(~np.isnan(data))
    value = data[obs, unit].astype(int)
    assert A.krippendorff_alpha(unit, value, level="nominal") == pytest.approx(0.743, abs=5e-4)
    assert A.krippendorff_alpha(unit, value, level="ordinal") == pytest.approx(0.815, abs=5e-4)
    assert A.krippendorff_alpha(unit, value, level="interval") == pytest.approx(0.849, abs=5e-4)
    _, counts = A.value_counts_matrix(unit, value)
    for level, ref in (("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)):
        assert A.alpha_from_value_counts(counts, level=level) == pytest.approx(ref, abs=5e-4)
    # Unit 12 has a single value: it must not matter.
    r = A.agreement(unit, value, level="nominal", n_boot=0)
    assert r.n_units_multi == 11 and r.n_units_labelled == 12


# --------------------------------------------------------------------------------------------
# Real data: TVR-Ranking excerpt, graded 0-4, 2 or 4 labels per pair, one rater sometimes twice.


def _load_fixture():
    with FIXTURE.open(newline="") as f:
        rows = [(int(r["pair_id"]), int(r["worker"]), int(r["relevance"])) for r in csv.DictReader(f)]
    return rows


def _independent_percent_agreement(rows, first_two=False):
    by_unit: dict[int, list[int]] = {}
    for pair, _, rel in rows:
        by_unit.setdefault(pair, []).append(rel)
    agree = total = 0
    for labels in by_unit.values():
        if first_two:
            labels = labels[:2]
        if len(labels) < 2:
            continue
        total += 1
        agree += all(a == b for a, b in itertools.combinations(labels, 2))
    return agree / total


def _nltk_triples(rows, first_two=False):
    # nltk identifies a label by (coder, item); the fixture has the same worker twice on a pair,
    # so coders are made unique per label slot (alpha does not use coder identity).
    seen: Counter = Counter()
    triples = []
    for pair, worker, rel in rows:
        slot = seen[pair]
        seen[pair] += 1
        if first_two and slot >= 2:
            continue
        triples.append((f"{worker}#{slot}", pair, rel))
    return triples


def _ordinal_distance_from(triples):
    # Krippendorff's ordinal metric: delta(c,k) = (sum_{g=c}^{k} n_g - (n_c + n_k)/2)^2 with n_g
    # the number of pairable values g (units with >= 2 values).
    per_item = Counter(item for _, item, _ in triples)
    n = Counter(lab for _, item, lab in triples if per_item[item] >= 2)

    def dist(a, b):
        lo, hi = min(a, b), max(a, b)
        return (sum(n[g] for g in range(lo, hi + 1)) - (n[lo] + n[hi]) / 2) ** 2

    return dist


@pytest.mark.parametrize("first_two", [False, True])
def test_fixture_against_nltk_and_pairwise_count(first_two):
    rows = _load_fixture()
    assert len(rows) == 298
    unit = np.array([r[0] for r in rows])
    value = np.array([r[2] for r in rows])

    triples = _nltk_triples(rows, first_two)
    ref_nominal = AnnotationTask(data=triples, distance=binary_distance).alpha()
    ref_ordinal = AnnotationTask(data=triples, distance=_ordinal_distance_from(triples)).alpha()
    ref_pa = _independent_percent_agreement(rows, first_two)

    got_nom = A.agreement(unit, value, level="nominal", first_two=first_two, n_boot=200, seed=1)
    got_ord = A.agreement(unit, value, level="ordinal", first_two=first_two, n_boot=200, seed=1)
    assert got_nom.alpha == pytest.approx(ref_nominal, rel=1e-9)
    assert got_ord.alpha == pytest.approx(ref_ordinal, rel=1e-9)
    assert got_nom.percent_agreement == pytest.approx(ref_pa, rel=1e-12)
    # Graded labels: ordinal credits near-misses, so it must exceed nominal here.
    assert got_ord.alpha > got_nom.alpha + 0.2
    # Coincidence-matrix alpha (used by the bootstrap) equals the package.
    keep = A.label_positions(unit) < 2 if first_two else np.ones(unit.size, bool)
    _, counts = A.value_counts_matrix(unit[keep], value[keep])
    assert A.alpha_from_value_counts(counts, level="nominal") == pytest.approx(ref_nominal, rel=1e-9)
    assert A.alpha_from_value_counts(counts, level="ordinal") == pytest.approx(ref_ordinal, rel=1e-9)
    # Intervals bracket the point estimate.
    for r in (got_nom, got_ord):
        lo, hi = r.alpha_ci
        assert lo < r.alpha < hi
        lo, hi = r.percent_agreement_ci
        assert lo < r.percent_agreement < hi


def test_fixture_known_values():
    # Pinned so a silent change in either implementation shows up (computed with nltk above).
    rows = _load_fixture()
    unit = np.array([r[0] for r in rows])
    value = np.array([r[2] for r in rows])
    assert A.percent_agreement(unit, value) == pytest.approx(56 / 130)
    assert A.krippendorff_alpha(unit, value, level="nominal") == pytest.approx(0.287851, abs=1e-6)
    assert A.krippendorff_alpha(unit, value, level="ordinal") == pytest.approx(0.717157, abs=1e-6)


# --------------------------------------------------------------------------------------------
# bootstrap


def test_bootstrap_is_seeded_and_matches_package_alpha_per_replicate():
    rng = np.random.default_rng(5)
    n_units = 400
    truth = rng.integers(0, 2, n_units)
    unit = np.repeat(np.arange(n_units), 2)
    value = np.where(rng.random(unit.size) < 0.85, truth[unit], 1 - truth[unit])
    r1 = A.agreement(unit, value, n_boot=300, seed=7)
    r2 = A.agreement(unit, value, n_boot=300, seed=7)
    r3 = A.agreement(unit, value, n_boot=300, seed=8)
    assert r1.alpha_ci == r2.alpha_ci and r1.percent_agreement_ci == r2.percent_agreement_ci
    assert r1.alpha_ci != r3.alpha_ci
    lo, hi = r1.alpha_ci
    assert lo < r1.alpha < hi and hi - lo < 0.25
    # Independently: a replicate with weights w equals the package on the repeated units.
    import krippendorff

    _, counts = A.value_counts_matrix(unit, value)
    idx = np.random.default_rng(0).integers(0, n_units, n_units)
    ref = krippendorff.alpha(value_counts=counts[idx], level_of_measurement="nominal")
    assert A.alpha_from_value_counts(counts[idx], level="nominal") == pytest.approx(ref, rel=1e-12)


def test_bootstrap_matches_naive_unit_resampling_through_the_package():
    # The module draws type counts from a multinomial; a naive bootstrap resamples units and
    # calls the package. The two interval estimates must agree up to Monte Carlo noise.
    import krippendorff

    rng = np.random.default_rng(11)
    n_units = 300
    truth = rng.integers(0, 3, n_units)
    n_lab = rng.choice([2, 3, 4], n_units)
    unit = np.repeat(np.arange(n_units), n_lab)
    value = np.where(rng.random(unit.size) < 0.7, truth[unit], rng.integers(0, 3, unit.size))
    _, counts = A.value_counts_matrix(unit, value)
    boot_rng = np.random.default_rng(0)
    naive_alpha, naive_pa = [], []
    for _ in range(600):
        c = counts[boot_rng.integers(0, n_units, n_units)]
        naive_alpha.append(krippendorff.alpha(value_counts=c, level_of_measurement="ordinal"))
        naive_pa.append(np.mean(c.max(axis=1) == c.sum(axis=1)))
    r = A.agreement(unit, value, level="ordinal", n_boot=3000, seed=2)
    np.testing.assert_allclose(r.alpha_ci, np.percentile(naive_alpha, [2.5, 97.5]), atol=0.02)
    np.testing.assert_allclose(r.percent_agreement_ci, np.percentile(naive_pa, [2.5, 97.5]), atol=0.02)


def test_undefined_cases_are_nan_and_serialise():
    # Only single labels: nothing pairable.
    r = A.agreement([0, 1, 2], [1, 0, 1], n_boot=10)
    assert r.n_units_multi == 0
    assert math.isnan(r.alpha) and math.isnan(r.percent_agreement)
    assert all(math.isnan(x) for x in r.alpha_ci)
    # All pairable values identical: percent agreement 1, alpha undefined (D_e = 0).
    r = A.agreement([0, 0, 1, 1], [1, 1, 1, 1], n_boot=10)
    assert r.percent_agreement == 1.0 and math.isnan(r.alpha)
    d = r.to_dict(nan_as_none=True)
    assert d["alpha"] is None
    json.dumps(d, allow_nan=False)
    json.dumps(A.agreement(UNIT, VALUE, n_boot=20).to_dict(), allow_nan=False)


def test_level_must_be_explicit_and_valid():
    with pytest.raises(TypeError):
        A.krippendorff_alpha(UNIT, VALUE)  # type: ignore[call-arg]
    with pytest.raises(ValueError):
        A.krippendorff_alpha(UNIT, VALUE, level="ratio")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        A.agreement(UNIT, np.array([1.0, np.nan] * 5))


# --------------------------------------------------------------------------------------------
# resolution and raters


def test_resolution_by_hand():
    # u0 -> 1 (1,1); u1 -> 0 (0,0); u2 unresolved (1,0); u3 -> 1 (2 of 3); u4 -> 0 (single);
    # u5 has no label.
    res = A.resolve_majority(UNIT, VALUE, n_units=6)
    assert res.resolved.tolist() == [1, 0, A.UNRESOLVED, 1, 0, A.NO_LABELS]
    assert (res.n_relevant, res.n_not_relevant, res.n_unresolved, res.n_other) == (2, 2, 1, 0)
    assert res.n_labelled == 5
    assert res.percent_resolved == pytest.approx(80.0)
    assert res.unresolved_units.tolist() == [2]
    json.dumps(res.to_dict())


def test_resolution_ties_and_other_codes():
    # 2-2 split unresolved; 1-1-1 unresolved; majority "ambiguous" (code 2) counts as other.
    unit = [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    value = [1, 1, 0, 0, 0, 1, 2, 2, 2, 1]
    res = A.resolve_majority(unit, value)
    assert res.resolved.tolist() == [A.UNRESOLVED, A.UNRESOLVED, 2]
    assert res.n_other == 1 and res.n_unresolved == 2


def test_rater_stats_by_hand():
    res = A.resolve_majority(UNIT, VALUE, n_units=5)
    gold = np.array([np.nan, 0, 1, -1, np.nan])  # u1 gold 0, u2 gold 1
    stats = {d["rater"]: d for d in A.rater_stats(UNIT, RATER, VALUE, resolved=res.resolved, gold=gold, seconds=SECONDS)}
    # Comparable units: >= 2 labels and resolved -> u0 (1), u1 (0), u3 (1).
    # r0: u0 1 ok, u1 0 ok, u3 1 ok -> 3/3. Gold: u1 ok -> 1/1. Seconds 10, 30, 50 -> 30.
    assert stats[0] == {
        "rater": 0, "n_labels": 3, "n_compared": 3, "agreement_with_resolved": 1.0,
        "n_gold": 1, "gold_accuracy": 1.0, "median_seconds": 30.0,
    }
    # r1: u0 1 ok, u2 (unresolved, skipped), u3 0 wrong -> 1/2. Gold u2: 1 = 1 -> 1/1.
    # Seconds 20, 7, NaN -> median of (7, 20) = 13.5.
    assert stats[1]["n_labels"] == 3 and stats[1]["n_compared"] == 2
    assert stats[1]["agreement_with_resolved"] == 0.5
    assert stats[1]["gold_accuracy"] == 1.0 and stats[1]["median_seconds"] == 13.5
    # r2: u1 ok, u2 skipped, u3 ok, u4 single (skipped) -> 2/2. Gold: u1 0 ok, u2 0 vs 1 -> 1/2.
    # Seconds 5, 9, 1, 3 -> 4.
    assert stats[2]["n_labels"] == 4 and stats[2]["n_compared"] == 2
    assert stats[2]["agreement_with_resolved"] == 1.0
    assert stats[2]["n_gold"] == 2 and stats[2]["gold_accuracy"] == 0.5
    assert stats[2]["median_seconds"] == 4.0


def test_rater_stats_without_gold_or_seconds_gives_nan():
    res = A.resolve_majority(UNIT, VALUE)
    out = A.rater_stats(UNIT, RATER, VALUE, resolved=res.resolved)
    assert all(math.isnan(d["gold_accuracy"]) and math.isnan(d["median_seconds"]) for d in out)
    assert all(d["n_gold"] == 0 for d in out)
