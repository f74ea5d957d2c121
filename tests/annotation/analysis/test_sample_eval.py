"""sample_eval.pl's measures, checked against values worked out by hand from the script's rules.

Fixture tests/fixtures/evaluation/trecvid.qrels (eps = 1e-5 is the script's smoothing):

* topic 9: stratum 1 fully judged (s1a R, s1b N, s1c R), stratum 2 half judged (s2a R, s2b -1,
  s2c N, s2d -1): N = (3, 4), n = (3, 2), r = (2, 1), R_hat = 2 + 1 * 4/2 = 4.
  Run A ranks (ties by shot id descending: s2a before s1b at score 7, although the file lists s1b
  first): s1a R, x1 unpooled, s2b unjudged, s2a R, s1b N, s1c R. Above s2a, stratum 2 holds only
  the unjudged s2b: nothing judged above a relevant shot, so its precision is eps / 3eps = 1/3.
* topic 10: stratum 1 = a1 R, a2 R; stratum 2 = 1,000 shots, only b0000 judged (R): R_hat = 2 +
  1000 = 1002 > 1000, so the TRECVID rule changes AP. Run A: a1, x (unpooled), b0000.
* topic 11: c1 R, c2 N, not in run A (skipped); run A's topic 99 has no qrels (ignored).
"""
from math import log
from pathlib import Path

import numpy as np
import pytest

from annotation.analysis.infap import xinfap_query
from annotation.analysis.sample_eval import (sample_eval, sample_eval_topic, topic_pool, trec_order)
from annotation.formats.errors import IssueCollector
from annotation.formats.sample_eval_qrels import load_sample_eval_qrels
from annotation.formats.text_lines import LineSource

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "evaluation"
e = 1e-5


def lg2(x):
    return log(x) / log(2)


def load_qrels():
    issues = IssueCollector("trecvid.qrels")
    qrels = load_sample_eval_qrels(LineSource(FIXTURES / "trecvid.qrels", issues), issues)
    assert not issues
    return qrels


def load_run(name):
    scores = {}
    for line in (FIXTURES / name).read_text().splitlines():
        q, _, d, _, s, _ = line.split()
        scores.setdefault(q, {})[d] = float(s)
    return {q: trec_order(list(v), list(v.values())) for q, v in scores.items()}


# Hand-worked values, topic 9, run A.
P9_1 = 1.0
P9_4 = (1 + (1 + e) / (1 + 3 * e) + e / (3 * e)) / 4
P9_6 = (1 + 2 * (1 + e) / (2 + 3 * e) + 2 * (1 + e) / (1 + 3 * e)) / 6
AP9 = (P9_1 + P9_6 + P9_4 / 0.5) / 4
EST9 = [  # inferred relevant retrieved through ranks 1..6
    (1 + e) / (1 + 3 * e),
    (1 + e) / (1 + 3 * e),
    (1 + e) / (1 + 3 * e) + 1 / 3,
    (1 + e) / (1 + 3 * e) + 2 * (1 + e) / (1 + 3 * e),
    2 * (1 + e) / (2 + 3 * e) + 2 * (1 + e) / (1 + 3 * e),
    3 * (2 + e) / (3 + 3 * e) + 2 * (1 + e) / (1 + 3 * e),
]
NDCG9 = (3 * (1 + 1 / lg2(7)) / 3 + 2 * (1 / lg2(5)) / 1) / (1 + 1 / lg2(3) + 1 / lg2(4) + 1 / lg2(5))
# Topic 10, run A.
S10 = 1 + 1000 * (1 + (1 + e) / (1 + 3 * e)) / 3  # sum of precision / inclusion probability
EST10 = [(1 + e) / (1 + 3 * e)] * 2 + [2 * (1 + e) / (1 + 3 * e)]
IDEAL10_TRECVID = sum(1 / lg2(r + 1) for r in range(1, 1001))
IDEAL10_TREC = sum(1 / lg2(r + 1) for r in range(1, 1003))


def test_trec_order_is_score_then_doc_id_descending():
    assert trec_order(["s1b", "s2a", "a", "z"], [7, 7, 9, 1]) == ["a", "s2a", "s1b", "z"]


def test_topic_pool_counts_and_r_hat():
    pool = topic_pool(load_qrels()["9"])
    assert pool.strata == ("1", "2")
    assert pool.pooled.tolist() == [3, 4] and pool.judged.tolist() == [3, 2] and pool.relevant.tolist() == [2, 1]
    assert pool.r_hat == 4.0
    assert topic_pool(load_qrels()["10"]).r_hat == 1002.0


def test_topic_9_every_measure_by_hand():
    qrels, run = load_qrels(), load_run("trecvid_run_a.txt")
    assert run["9"] == ["s1a", "x1", "s2b", "s2a", "s1b", "s1c"]
    v = sample_eval_topic(run["9"], qrels["9"]).values
    assert v["infAP"] == pytest.approx(AP9, abs=1e-12)
    assert round(v["infAP"], 4) == 0.7083
    assert v["infNDCG"] == pytest.approx(NDCG9, abs=1e-12)
    assert v["iP5"] == pytest.approx(EST9[4] / 5, abs=1e-12)
    for k in (10, 15, 20, 30, 100, 200, 500, 1000):  # past the run's end: last estimate / k
        assert v[f"iP{k}"] == pytest.approx(EST9[5] / k, abs=1e-12)
    assert v["inum_rel_ret"] == pytest.approx(EST9[5], abs=1e-12)
    assert v["inum_rel"] == 4.0 and v["num_ret"] == 6


def test_infap_agrees_with_the_infap_module():
    qrels, run = load_qrels(), load_run("trecvid_run_a.txt")
    for topic in ("9", "10"):
        ap, _ = xinfap_query(run[topic], qrels[topic], max_result_size=1000)
        assert sample_eval_topic(run[topic], qrels[topic]).values["infAP"] == pytest.approx(ap, abs=1e-12)


def test_max_result_rule_changes_ap_when_r_hat_exceeds_1000():
    qrels, run = load_qrels(), load_run("trecvid_run_a.txt")
    trecvid = sample_eval_topic(run["10"], qrels["10"], max_result_size=1000).values
    trec = sample_eval_topic(run["10"], qrels["10"], max_result_size=None).values
    assert trec["infAP"] == pytest.approx(S10 / 1002, abs=1e-12)
    assert trecvid["infAP"] == pytest.approx(S10 / 1000, abs=1e-12)  # = textbook x R_hat / 1000
    assert (round(trec["infAP"], 4), round(trecvid["infAP"], 4)) == (0.6663, 0.6677)
    # The ideal DCG stops at rank 1,000 under the rule.
    assert trecvid["infNDCG"] == pytest.approx(1.5 / IDEAL10_TRECVID, abs=1e-12)
    assert trec["infNDCG"] == pytest.approx(1.5 / IDEAL10_TREC, abs=1e-12)
    assert trecvid["inum_rel_ret"] == pytest.approx(EST10[2], abs=1e-12)


def test_run_is_cut_at_the_max_result_size_but_num_ret_counts_every_line():
    shots = {"r": ("1", 1), "n": ("1", 0)}
    ranked = [f"u{i:04d}" for i in range(1000)] + ["r"]  # the relevant shot at rank 1001
    trecvid = sample_eval({"1": ranked}, {"1": shots}, max_result_size=1000)
    trec = sample_eval({"1": ranked}, {"1": shots}, max_result_size=None)
    assert trecvid.per_topic["1"]["infAP"] == 0.0
    assert trec.per_topic["1"]["infAP"] == pytest.approx(1 / 1001, abs=1e-12)
    assert trecvid.per_topic["1"]["num_ret"] == 1001 and trecvid.all["num_ret"] == 1000
    assert trec.all["num_ret"] == 1001


def test_all_skips_unanswered_topics_but_sums_inum_rel_over_every_topic():
    result = sample_eval(load_run("trecvid_run_a.txt"), load_qrels())
    assert list(result.per_topic) == ["9", "10"]  # numeric order, as the script sorts topics
    assert result.topics_unanswered == ("11",) and result.topics_without_qrels == ("99",)
    assert result.all["infAP"] == pytest.approx((AP9 + S10 / 1000) / 2, abs=1e-12)
    assert result.all["infNDCG"] == pytest.approx((NDCG9 + 1.5 / IDEAL10_TRECVID) / 2, abs=1e-12)
    assert result.all["iP5"] == pytest.approx((EST9[4] / 5 + EST10[2] / 5) / 2, abs=1e-12)
    assert result.all["inum_rel_ret"] == pytest.approx(EST9[5] + EST10[2], abs=1e-12)
    assert result.all["inum_rel"] == 4 + 1002 + 1  # topic 11 too, though the run skipped it
    assert result.all["num_ret"] == 9


def test_interpolated_recall_precision_follows_the_script_walk():
    # Topic 9: levels 0.4 R_hat apart; walking up from rank 6 each rank fills at most one level.
    best_top = EST9[0] / 1
    best_mid = EST9[3] / 4
    topic9 = [best_top] * 6 + [best_mid] * 3 + [EST9[5] / 6, 0.0]
    topic10 = [EST10[0]] + [0.0] * 10  # R_hat = 1002: only level 0 is ever reached
    result = sample_eval(load_run("trecvid_run_a.txt"), load_qrels())
    got = [result.all[f"iprec@rec{i / 10:4.2f}"] for i in range(11)]
    assert got == pytest.approx([(a + b) / 2 for a, b in zip(topic9, topic10)], abs=1e-12)


def test_interpolated_recall_precision_small_exact_case():
    # One fully judged stratum, eps 0: R N R N N and one relevant shot not retrieved (R_hat 3).
    shots = {"r1": ("s", 1), "n1": ("s", 0), "r2": ("s", 1), "n2": ("s", 0), "n3": ("s", 0), "r3": ("s", 1)}
    scores = sample_eval_topic(["r1", "n1", "r2", "n2", "n3"], shots, epsilon=0.0)
    assert scores.recall_precisions.tolist() == pytest.approx([1, 1, 1, 1, 1, 1, 2 / 3, 0, 0, 0, 0])
    assert scores.values["infAP"] == pytest.approx((1 + 2 / 3) / 3)


def test_graded_ideal_dcg_visits_grades_in_text_order_and_rounds_down():
    # Grade 10 (one shot), grade 2 (one of two judged in a stratum of 3: R_hat_2 = 1.5 -> 1 rank).
    shots = {"a": ("1", 10), "b": ("2", 2), "c": ("2", 0), "d": ("2", -1)}
    pool = topic_pool(shots)
    # "2" sorts after "10" as text, so grade 2 takes rank 1 and grade 10 ranks from 2.5.
    assert pool.ideal_dcg(None) == pytest.approx(2 / lg2(2) + 10 / lg2(3.5))
    v = sample_eval_topic(["a", "b"], shots, pool=pool).values
    gains = 10 / lg2(2) * 1 / 1 + (2 / lg2(3)) * 1 / 1  # each stratum: D / m = 1 in the run
    assert v["infNDCG"] == pytest.approx(gains / pool.ideal_dcg(1000))


def test_no_common_topic_is_refused():
    with pytest.raises(ValueError, match="no topic of the run"):
        sample_eval({"5": ["x"]}, {"9": {"x": ("1", 1)}})


def test_duplicate_shot_in_run_is_refused():
    with pytest.raises(ValueError, match="twice"):
        sample_eval({"9": ["x", "x"]}, {"9": {"x": ("1", 1)}})


def test_unpooled_only_run_scores_zero():
    v = sample_eval_topic(["u1", "u2"], {"x": ("1", 1)}).values
    assert v["infAP"] == 0 and v["infNDCG"] == 0 and v["inum_rel_ret"] == 0 and v["iP5"] == 0
    assert np.isfinite(list(v.values())).all()
