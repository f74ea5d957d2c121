"""The two scenarios for pairs without a verdict (annotation/analysis/judging/bounds.py), worked out
by hand on a tiny pool (issue 35: a pool judged in an adaptive order gets these, not an interval)."""
from __future__ import annotations

import math

import pytest

from annotation.analysis.judging.bounds import unjudged_scenarios

# run X: q1 -> [a, b], q2 -> [c, d];  run Y: q1 -> [a], q2 -> [c].  Verdicts: a relevant, c not;
# b and d have none.
RANKINGS = {"X": {"q1": ["a", "b"], "q2": ["c", "d"]}, "Y": {"q1": ["a"], "q2": ["c"]}}
VERDICTS = {("q1", "a"): True, ("q2", "c"): False}
G2 = 1 / math.log2(3)   # the discount of rank 2


def _by_key(rows):
    return {(r.run, r.measure): r for r in rows}


def test_both_scenarios_by_hand():
    got = _by_key(unjudged_scenarios(RANKINGS, VERDICTS, measures=["C@1", "C@5", "AP", "nDCG@10"]))
    # (unjudged not relevant, unjudged relevant), worked out by hand:
    #   b, d not relevant: q1 has a (rank 1) only, q2 nothing.
    #     X: C@1 (1+0)/2, C@5 (1+0)/2, AP (1+0)/2, nDCG (1+0)/2;  Y the same.
    #   b, d relevant: q1 R = 2 (a, b), q2 R = 1 (d).
    #     X: C@1 (1 + 0)/2 (c first) = .5; C@5 (1 + 1)/2 = 1; AP q1 (1/1 + 2/2)/2 = 1, q2 (1/2)/1 -> .75;
    #        nDCG q1 (1 + G2)/(1 + G2) = 1, q2 G2/1 -> (1 + G2)/2
    #     Y: C@1 .5; C@5 (1 + 0)/2; AP q1 (1/1)/2 = .5 (b counts in R though Y misses it), q2 0 -> .25;
    #        nDCG q1 1/(1 + G2), q2 0 -> 1/(2 (1 + G2))
    expected = {("X", "C@1"): (.5, .5), ("X", "C@5"): (.5, 1.0), ("X", "AP"): (.5, .75),
                ("X", "nDCG@10"): (.5, (1 + G2) / 2),
                ("Y", "C@1"): (.5, .5), ("Y", "C@5"): (.5, .5), ("Y", "AP"): (.5, .25),
                ("Y", "nDCG@10"): (.5, 1 / (2 * (1 + G2)))}
    for key, (not_relevant, relevant) in expected.items():
        row = got[key]
        assert (row.unjudged_not_relevant, row.unjudged_relevant) == pytest.approx((not_relevant, relevant)), key
        assert (row.low, row.high) == pytest.approx((min(not_relevant, relevant), max(not_relevant, relevant)))
    # AP falls for Y when the pairs it does not retrieve turn relevant: a scenario, not a bound.
    assert got[("Y", "AP")].bounds_truth is False and got[("X", "C@5")].bounds_truth is True
    # pairs without a verdict in the measured ranks: X's top 1 holds a and c (both judged), its top 5 b and d
    assert [got[("X", m)].unjudged_pairs for m in ("C@1", "C@5", "AP")] == [0, 2, 2]
    assert got[("Y", "C@5")].unjudged_pairs == 0


def test_original_positives_are_relevant_in_both_scenarios_and_a_full_census_is_one_value():
    known = {"q2": {"c"}}   # c is q2's original clip: relevant whatever, never "unjudged"
    every = {("q1", "a"): True, ("q1", "b"): False, ("q2", "d"): False}
    rows = _by_key(unjudged_scenarios(RANKINGS, every, known_relevant=known, measures=["C@1", "AP"]))
    for row in rows.values():
        assert row.low == row.high and row.unjudged_pairs == 0
    assert rows[("Y", "C@1")].low == pytest.approx(1.0)   # a at q1, c (original) at q2


def test_no_verdict_at_all_spans_zero_to_the_best_case():
    rows = _by_key(unjudged_scenarios(RANKINGS, {}, measures=["C@1"]))
    assert (rows[("X", "C@1")].low, rows[("X", "C@1")].high) == (0.0, 1.0)


def test_the_relevant_scenario_equals_trec_eval_on_the_completed_qrels():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels = {"q1": {"a": 1, "b": 1}, "q2": {"c": 0, "d": 1}}   # every pair without a verdict relevant
    rows = _by_key(unjudged_scenarios(RANKINGS, VERDICTS, measures=["AP", "nDCG@10"]))
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg_cut_10"})
    for run, lists in RANKINGS.items():
        scored = evaluator.evaluate({q: {item: 10.0 - r for r, item in enumerate(items)} for q, items in lists.items()})
        for measure, name in (("AP", "map"), ("nDCG@10", "ndcg_cut_10")):
            mean = sum(scored[q][name] for q in qrels) / len(qrels)
            assert rows[(run, measure)].unjudged_relevant == pytest.approx(mean, abs=1e-12), (run, measure)


def test_a_cutoff_above_the_depth_the_lists_were_cut_at_is_a_scenario_not_a_bound():
    """BROKEN before: lists cut at depth 2 still called C@5's two scenarios bounds of the truth, but a
    relevant clip at rank 3 to 5, which neither scenario sees, makes the true C@5 1 where both say 0."""
    rankings = {"X": {"q1": ["a", "b"]}}                    # the run's top 2 (cut); its rank 3 is unseen
    verdicts = {("q1", "a"): False, ("q1", "b"): False}     # both judged not relevant
    got = _by_key(unjudged_scenarios(rankings, verdicts, measures=["C@1", "C@2", "C@5"], cut=2))
    assert (got[("X", "C@5")].unjudged_not_relevant, got[("X", "C@5")].unjudged_relevant) == (0.0, 0.0)
    assert got[("X", "C@5")].bounds_truth is False
    assert got[("X", "C@1")].bounds_truth is True and got[("X", "C@2")].bounds_truth is True
    # Not cut: every C@K's scenarios bound it.
    assert _by_key(unjudged_scenarios(rankings, verdicts, measures=["C@5"]))[("X", "C@5")].bounds_truth is True
