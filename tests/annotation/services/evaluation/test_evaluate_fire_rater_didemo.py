"""`manage.py evaluate` on FIRE JSON, raw rater labels and DiDeMo: hand-worked numbers, parity
with pytrec_eval (the C trec_eval) and with a transcription of LocalizingMoments' eval.py, and a
refusal naming file, line and field for each bad input. Fixtures: tests/fixtures/evaluate.

FIRE (fire.json, fire_queries.tsv, fire_run.txt). FIRE's pairs, keyed by caption text:
  "a man is cooking": video1 R, video2 N, video3 R, video6 disagreement (= judged N);
  "a dog runs on the beach": video4 R, video5 N. The TSV maps c1 and c3 to the first text, c2 to
  the second, c4 to a text FIRE never judged (c4 is then a run query without judgments).
  c1 ranks video6 N, video1 R, video9 unjudged, video3 R, video2 N (R = 2, judged N = 2):
    AP = (1/2 + 2/4) / 2 = 1/2; P@5 = 2/5; RR = 1/2;
    bpref: video1 and video3 each have one judged non-relevant above (video6):
      (1 - 1/min(2, 2)) * 2 / 2 = 1/2. Were the disagreement unjudged, N = 1 and nothing judged
      would be above them: bpref 1. Judged@3 = 2/3 (video9 is not judged).
  c2 ranks video5 N, video8 unjudged, video4 R: AP = RR = 1/3; P@5 = 1/5; bpref 1 - 1/1 = 0;
    Judged@3 = 2/3.
  c3 ranks video1 R, video3 R: AP = RR = bpref = 1; P@5 = 2/5; Judged@3 = 2/2 (ir_measures
    divides by the list's length when it is shorter than k).
  Means: AP = RR = (1/2 + 1/3 + 1) / 3 = 11/18; P@5 = 1/3; bpref = 1/2; Judged@3 = 7/9.

  With --originals (c1 video2, c2 video4, c3 video3): A keeps every original relevant, so c1's
  video2 (FIRE raters: irrelevant) becomes relevant: c1 R = 3, ranks N R U R R:
    AP = (1/2 + 2/4 + 3/5) / 3 = 8/15; P@5 = 3/5; RR = 1/2; bpref: one judged N (video6),
    min(R, N) = 1, every relevant has it above -> 0. c2 and c3 unchanged.
    A: AP = (8/15 + 1/3 + 1) / 3 = 28/45; P@5 = (3/5 + 1/5 + 2/5) / 3 = 2/5; RR = 11/18;
    bpref = (0 + 0 + 1) / 3 = 1/3.
  B, the originals alone: c1 only video2, at rank 5: AP = RR = 1/5, P@5 = 1/5, bpref 1 (no judged
    N); c2 video4 at 3: AP = RR = 1/3, P@5 = 1/5, bpref 1; c3 video3 at 2: AP = RR = 1/2,
    P@5 = 1/5, bpref 1. B: AP = RR = (1/5 + 1/3 + 1/2) / 3 = 31/90; P@5 = 1/5; bpref = 1.
  In percent, one decimal as FIRE prints: AP 62.2 (34.4 + 27.8); RR 61.1 (34.4 + 26.7);
  P@5 40.0 (20.0 + 20.0); bpref 33.3 (100.0 - 66.7).

Rater labels (rater_labels.csv, columns query_id, moment, worker, relevance; rater_run.txt):
  q1 m1: 4, 3       mean 3.5 -> 4   median 3.5 -> 4   majority tie 3/4 -> 3
  q1 m2: 1, 2, 2, 0 mean 1.25 -> 1  median 1.5 -> 2   majority 2
  q1 m3: 0, 0       0 under every rule
  q1 m4: w1 2, w2 1, then w1 again 0. repeats last: {0, 1}: mean/median 0.5 -> 1, majority tie -> 0;
         repeats first: {2, 1}: mean/median 1.5 -> 2, majority tie -> 1;
         repeats all: {2, 1, 0}: mean/median 1, majority three-way tie -> 0
  q2 m5: 3, 3       3
  q2 m1: 0, 1       mean/median 0.5 -> 1, majority tie -> 0
  Run: q1 m2, m1, m3, m9 (unjudged); q2 m1, m5.
  mean (default), repeats last: q1 grades m1 4, m2 1, m3 0, m4 1 (relevant m1, m2, m4: R = 3).
    AP = (1/1 + 2/2) / 3 = 2/3; P@5 = 2/5.
    nDCG@10 (trec_eval: gain = grade, discount log2(rank + 1)): DCG = 1 + 4/log2(3);
    ideal 4, 1, 1, 0: 4 + 1/log2(3) + 1/2 -> 3.52372 / 5.13093 = 0.68676.
    q2 grades m1 1, m5 3: AP = 1, P@5 = 2/5, DCG = 1 + 3/log2(3), ideal 3 + 1/log2(3) -> 0.79671.
  majority: q1 m1 3, m2 2, m3 0, m4 0: AP = 1, DCG = 2 + 3/log2(3), ideal 3 + 2/log2(3) -> 0.91340;
    q2 m1 0, m5 3: AP = 1/2, P@5 = 1/5, nDCG = (3/log2(3)) / 3 = 0.63093.

DiDeMo (didemo_gt.json, the example of tests/annotation/analysis/test_moment_eval.py):
  a1 times (1,1) (1,1) (1,2) (4,4), ranked (1,1) (1,2) (0,0): IoUs of the top 1, 1, 1/2, 0 -> best
  three 5/6; ranks 1, 1, 2, not ranked -> best three 4/3 (rank@5, not rank@1).
  a2 times (0,0) (2,3) x3, ranked (2,3) (0,0): IoUs 0, 1, 1, 1 -> 1; ranks 2, 1, 1, 1 -> 1.
  a3 unanswered: 0. rank@1 = 1/3, rank@5 = 2/3, iou = (5/6 + 1 + 0) / 3 = 11/18.
"""
import itertools
import json
import math
from io import StringIO

import numpy as np
import pytest
import pytrec_eval
from django.core.management import CommandError, call_command

from annotation.formats.errors import ImportRejected
from annotation.services.evaluation.errors import EvaluationError
from annotation.services.evaluation.evaluate import evaluate
from annotation.services.evaluation.registry import JUDGMENT_FORMATS
from tests.conftest import FIXTURES

EVAL = FIXTURES / "evaluate"
FIRE = [EVAL / "fire_run.txt", "--judgments", EVAL / "fire.json", "--judgments-format", "fire_json",
        "--queries", EVAL / "fire_queries.tsv"]
RATER = [EVAL / "rater_run.txt", "--judgments", EVAL / "rater_labels.csv", "--judgments-format", "rater_labels",
         "--columns", "query=query_id,item=moment,rater=worker,value=relevance"]
DIDEMO = ["--judgments", EVAL / "didemo_gt.json", "--judgments-format", "didemo"]
LOG3 = math.log2(3)


def run_evaluate(*args) -> str:
    out = StringIO()
    call_command("evaluate", *[str(a) for a in args], stdout=out)
    return out.getvalue()


def as_json(*args) -> dict:
    return json.loads(run_evaluate(*args, "--output", "json"))


def refusal(*args) -> str:
    with pytest.raises(CommandError) as caught:
        run_evaluate(*args)
    return str(caught.value)


def pytrec_lines(qrels: dict, run_file, measures: set[str], order: list[str]) -> list[str]:
    """trec_eval -q lines from pytrec_eval on the run file as written (trec_eval's own tie rule)."""
    with open(run_file) as handle:
        scores = pytrec_eval.parse_run(handle)
    results = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(scores)
    lines = [f"{n:<22}\t{q}\t{results[q][n]:6.4f}" for q in sorted(results) for n in order]
    return lines + [f"{n:<22}\tall\t{sum(r[n] for r in results.values()) / len(results):6.4f}" for n in order]


# --- FIRE JSON -----------------------------------------------------------------------------------

FIRE_MEASURES = ["AP", "P@5", "RR", "bpref", "Judged@3"]


def test_fire_json_scores_the_hand_worked_values():
    doc = as_json(*FIRE, "--measures", *FIRE_MEASURES)
    assert doc["measures"] == pytest.approx({"map": 11 / 18, "P_5": 1 / 3, "recip_rank": 11 / 18, "bpref": 1 / 2,
                                             "Judged@3": 7 / 9})
    # The disagreement on video6 is judged not relevant: it costs c1 half its bpref.
    assert doc["per_query"]["c1"] == pytest.approx({"map": 0.5, "P_5": 0.4, "recip_rank": 0.5, "bpref": 0.5,
                                                    "Judged@3": 2 / 3})
    assert doc["per_query"]["c2"] == pytest.approx({"map": 1 / 3, "P_5": 0.2, "recip_rank": 1 / 3, "bpref": 0.0,
                                                    "Judged@3": 2 / 3})
    assert doc["queries"] == {"scored": 3, "unanswered": [], "without_judgments": ["c4"]}
    assert "disagreements (no majority) = 0, judged not relevant" in doc["conventions"]["judgments"]
    assert "fire" not in doc  # no originals, no A (B + C)


def test_fire_json_trec_eval_layout_matches_pytrec_eval():
    names = ["map", "bpref", "recip_rank", "P_5", "P_10", "ndcg_cut_10"]
    got = run_evaluate(*FIRE, "--output", "trec_eval", "--measures", *names).splitlines()
    cooking = {"video1": 1, "video2": 0, "video3": 1, "video6": 0}
    qrels = {"c1": cooking, "c3": dict(cooking), "c2": {"video4": 1, "video5": 0}}
    assert got == pytrec_lines(qrels, EVAL / "fire_run.txt", {"map", "bpref", "recip_rank", "P.5,10", "ndcg_cut.10"},
                               names)


def test_fire_originals_give_a_b_plus_c():
    doc = as_json(*FIRE, "--originals", EVAL / "fire_originals.qrels", "--measures", *FIRE_MEASURES, "NumRet")
    assert doc["measures"] == pytest.approx({"num_ret": 10, "map": 28 / 45, "P_5": 2 / 5, "recip_rank": 11 / 18,
                                             "bpref": 1 / 3, "Judged@3": 7 / 9})
    assert doc["per_query"]["c1"]["map"] == pytest.approx(8 / 15)  # video2 is relevant again
    fire = doc["fire"]
    assert set(fire) == {"map", "P_5", "recip_rank", "bpref"}  # no counts, no Judged@k
    assert fire["map"] == pytest.approx({"A": 100 * 28 / 45, "B": 100 * 31 / 90, "C": 100 * (28 / 45 - 31 / 90),
                                         "text": "62.2 (34.4 + 27.8)"})
    assert fire["recip_rank"]["text"] == "61.1 (34.4 + 26.7)"
    assert fire["P_5"]["text"] == "40.0 (20.0 + 20.0)"
    assert fire["bpref"]["text"] == "33.3 (100.0 - 66.7)"
    table = run_evaluate(*FIRE, "--originals", EVAL / "fire_originals.qrels", "--measures", "AP")
    assert "fire_run.txt: FIRE A (B + C) in percent" in table and "map 62.2 (34.4 + 27.8)" in table


def test_fire_run_query_ids_that_match_no_text_are_refused_with_the_way_out():
    message = refusal(EVAL / "fire_run.txt", "--judgments", EVAL / "fire.json", "--judgments-format", "fire_json")
    assert "fire_run.txt: no query of the run is in the judgments fire.json" in message
    assert "give --queries FILE (query_id<TAB>text)" in message
    # A run whose query ids are FIRE's texts needs no map: "fireworks" has video7 relevant, at rank 2.
    doc = as_json(EVAL / "fire_run_texts.txt", "--judgments", EVAL / "fire.json", "--judgments-format", "fire_json",
                  "--measures", "AP")
    assert doc["measures"] == {"map": 0.5}


def test_a_queries_file_naming_no_fire_text_is_refused(tmp_path):
    tsv = tmp_path / "q.tsv"
    tsv.write_text("c1\tA man is cooking\n")  # FIRE's text is lower case
    message = refusal(*FIRE[:-1], tsv)
    assert "none of the 1 texts of q.tsv is a query of fire.json" in message


@pytest.mark.parametrize("content, message", [
    ("c1 a man is cooking\n", "q.tsv, line 1: expected two tab-separated fields"),
    ("c1\ta man is cooking\nc 2\ta dog runs on the beach\n", "q.tsv, line 2, field 'query_id': 'c 2': a run query id is one word"),
    ("c1\ta man is cooking\nc2\t \n", "q.tsv, line 2, field 'text': the caption text is empty"),
    ("c1\ta man is cooking\n\nc1\ttwo people dance\n", "q.tsv, line 3, field 'query_id': 'c1' is already mapped on line 1"),
])
def test_bad_queries_file_is_refused_naming_line_and_field(tmp_path, content, message):
    tsv = tmp_path / "q.tsv"
    tsv.write_text(content)
    assert message in refusal(*FIRE[:-1], tsv)


def test_queries_file_may_have_a_header(tmp_path):
    tsv = tmp_path / "q.tsv"
    tsv.write_text("query_id\ttext\nc1\ta man is cooking\n")
    assert list(as_json(*FIRE[:-1], tsv, "--measures", "AP")["per_query"]) == ["c1"]


def test_fire_pair_listed_twice_with_two_labels_is_refused(tmp_path):
    bad = tmp_path / "fire.json"
    bad.write_text('{"annotations": [\n{"query": "a", "video_id": "v1", "label": "relevant"},\n'
                   '{"query": "a", "video_id": "v1", "label": "irrelevant"}\n],\n'
                   '"disagreements": [\n{"query": "a", "video_id": "v2"},\n{"query": "a", "video_id": "v2"}\n]}\n')
    with pytest.raises(ImportRejected) as caught:
        JUDGMENT_FORMATS["fire_json"].read(bad)
    assert [str(i) for i in caught.value.issues] == [
        "fire.json, line 3, field 'annotations[1]': the pair ('a', 'v1') is also annotations[0] (line 2) with another label"]


def test_fire_bad_label_names_line_and_field(tmp_path):
    bad = tmp_path / "fire.json"
    bad.write_text('{"annotations": [\n{"query": "a", "video_id": "v1", "label": "maybe"}\n]}\n')
    assert "fire.json, line 2, field 'annotations[0].label': 'maybe' is not 'relevant' or 'irrelevant'" in \
        refusal(EVAL / "fire_run.txt", "--judgments", bad, "--judgments-format", "fire_json")


def test_bad_originals_line_is_refused(tmp_path):
    bad = tmp_path / "orig.qrels"
    bad.write_text("c1 0 video2 1\nc2 0 video4 yes\n")
    assert "orig.qrels, line 2, field 'relevance': 'yes' is not a whole number" in \
        refusal(*FIRE, "--originals", bad)
    assert "no such file" in refusal(*FIRE, "--originals", bad.with_name("missing.qrels"))


def test_originals_work_with_plain_qrels_too(tmp_path):
    qrels = tmp_path / "corrected.qrels"
    qrels.write_text("c1 0 video1 1\nc1 0 video2 0\n")
    orig = tmp_path / "orig.qrels"
    orig.write_text("c1 0 video2 1\n")
    # c1: video6, video1 R, video9, video3, video2 R (forced): AP = (1/2 + 2/5) / 2 = 9/20; B: 1/5.
    doc = as_json(EVAL / "fire_run.txt", "--judgments", qrels, "--judgments-format", "qrels", "--originals", orig,
                  "--measures", "AP")
    assert doc["measures"]["map"] == pytest.approx(9 / 20)
    assert doc["fire"]["map"]["text"] == "45.0 (20.0 + 25.0)"


# --- options through JudgmentFormat.read --------------------------------------------------------

def test_options_that_do_not_apply_are_refused_by_name():
    message = refusal(EVAL / "fire_run.txt", "--judgments", EVAL / "fire_originals.qrels", "--judgments-format",
                      "qrels", "--queries", EVAL / "fire_queries.tsv")
    assert "--queries does not apply to qrels judgments (options of qrels: --originals)" in message
    with pytest.raises(EvaluationError, match="--repeats does not apply to didemo judgments"):
        JUDGMENT_FORMATS["didemo"].read(EVAL / "didemo_gt.json", repeats="last")


def test_every_format_reads_with_stored_options_none_meaning_not_given():
    fire = JUDGMENT_FORMATS["fire_json"].read(EVAL / "fire.json", queries=EVAL / "fire_queries.tsv", originals=None)
    assert set(fire.qrels) == {"c1", "c2", "c3"} and fire.originals is None
    rater = JUDGMENT_FORMATS["rater_labels"].read(EVAL / "rater_labels.csv", columns={
        "query": "query_id", "item": "moment", "rater": "worker", "value": "relevance"}, repeats=None, aggregate=None)
    assert rater.qrels["q1"]["m1"] == 4
    assert JUDGMENT_FORMATS["didemo"].read(EVAL / "didemo_gt.json").queries == 3
    qrels = JUDGMENT_FORMATS["qrels"].read(EVAL / "fire_originals.qrels", originals=EVAL / "fire_originals.qrels")
    assert qrels.originals == {"c1": {"video2"}, "c2": {"video4"}, "c3": {"video3"}}


def test_evaluate_service_takes_the_options_as_keywords():
    result = evaluate([EVAL / "fire_run.txt"], EVAL / "fire.json", "fire_json", measures=["AP"],
                      judgments_options={"queries": EVAL / "fire_queries.tsv"})
    assert result.runs[0].all["map"] == pytest.approx(11 / 18)


# --- rater labels ---------------------------------------------------------------------------------

def rater_qrels(**options) -> dict:
    columns = {"query": "query_id", "item": "moment", "rater": "worker", "value": "relevance"}
    return JUDGMENT_FORMATS["rater_labels"].read(EVAL / "rater_labels.csv", columns=columns, **options).qrels


@pytest.mark.parametrize("repeats, aggregate, m1, m2, m4, q2m1", [
    ("last", "mean", 4, 1, 1, 1), ("last", "median", 4, 2, 1, 1), ("last", "majority", 3, 2, 0, 0),
    ("first", "mean", 4, 1, 2, 1), ("first", "median", 4, 2, 2, 1), ("first", "majority", 3, 2, 1, 0),
    ("all", "mean", 4, 1, 1, 1), ("all", "median", 4, 2, 1, 1), ("all", "majority", 3, 2, 0, 0),
])
def test_rater_grades_by_hand(repeats, aggregate, m1, m2, m4, q2m1):
    assert rater_qrels(repeats=repeats, aggregate=aggregate) == {
        "q1": {"m1": m1, "m2": m2, "m3": 0, "m4": m4}, "q2": {"m5": 3, "m1": q2m1}}


def test_rater_labels_default_is_the_mean_and_scores_the_hand_worked_values():
    doc = as_json(*RATER, "--measures", "AP", "P@5", "nDCG@10")
    ndcg_q1 = (1 + 4 / LOG3) / (4 + 1 / LOG3 + 0.5)
    ndcg_q2 = (1 + 3 / LOG3) / (3 + 1 / LOG3)
    assert doc["per_query"]["q1"] == pytest.approx({"map": 2 / 3, "P_5": 0.4, "ndcg_cut_10": ndcg_q1})
    assert doc["per_query"]["q2"] == pytest.approx({"map": 1.0, "P_5": 0.4, "ndcg_cut_10": ndcg_q2})
    assert round(ndcg_q1, 5) == 0.68676 and round(ndcg_q2, 5) == 0.79671
    rules = doc["conventions"]["judgments"]
    assert "repeats 'last' (by file order): 1 (pair, rater) cells labelled more than once, 1 labels set aside" in rules
    assert "grade = mean of the raters' values, rounded half up" in rules


def test_rater_labels_majority_in_the_trec_eval_layout():
    got = run_evaluate(*RATER, "--aggregate", "majority", "--output", "trec_eval", "--measures", "AP", "nDCG@10")
    ndcg_q1 = (2 + 3 / LOG3) / (3 + 2 / LOG3)
    assert got.splitlines() == [
        "map                   \tq1\t1.0000", f"ndcg_cut_10           \tq1\t{ndcg_q1:6.4f}",
        "map                   \tq2\t0.5000", "ndcg_cut_10           \tq2\t0.6309",
        "map                   \tall\t0.7500", f"ndcg_cut_10           \tall\t{(ndcg_q1 + 1 / LOG3) / 2:6.4f}"]
    assert f"{ndcg_q1:6.4f}" == "0.9134"


@pytest.mark.parametrize("aggregate", ["mean", "median", "majority"])
def test_rater_labels_match_pytrec_eval_on_the_grades(aggregate):
    names = ["map", "bpref", "recip_rank", "P_5", "ndcg", "ndcg_cut_10"]
    got = run_evaluate(*RATER, "--aggregate", aggregate, "--output", "trec_eval", "--measures", *names).splitlines()
    qrels = rater_qrels(aggregate=aggregate)
    assert got == pytrec_lines(qrels, EVAL / "rater_run.txt", {"map", "bpref", "recip_rank", "P.5", "ndcg",
                                                               "ndcg_cut.10"}, names)


def test_rater_labels_with_label_words_and_a_time_column(tmp_path):
    labels = tmp_path / "labels.jsonl"
    labels.write_text("\n".join(json.dumps(r) for r in [
        {"query": "q1", "item": "m1", "rater": "a", "value": "relevant", "time": "2024-01-01T10:00:00"},
        {"query": "q1", "item": "m1", "rater": "b", "value": "irrelevant", "time": "2024-01-01T10:00:00"},
        {"query": "q1", "item": "m2", "rater": "a", "value": "relevant", "time": "2024-01-01T12:00:00"},
        # Listed later but labelled earlier: by time, "last" keeps the relevant label above.
        {"query": "q1", "item": "m2", "rater": "a", "value": "not_relevant", "time": "2024-01-01T11:00:00"},
    ]) + "\n")
    judgments = JUDGMENT_FORMATS["rater_labels"].read(labels)
    assert judgments.qrels == {"q1": {"m1": 1, "m2": 1}}  # m1: mean 0.5 rounds half up to 1
    assert "(by time)" in judgments.rules
    assert JUDGMENT_FORMATS["rater_labels"].read(labels, aggregate="majority").qrels == {"q1": {"m1": 0, "m2": 1}}


def test_a_unit_file_cannot_be_scored(tmp_path):
    raw = tmp_path / "raw_annotation.csv"
    raw.write_text("pair_id,worker,relevance\n0,4,4\n0,6,3\n")  # TVR-Ranking's raw layout
    message = refusal(EVAL / "rater_run.txt", "--judgments", raw, "--judgments-format", "rater_labels",
                      "--columns", "unit=pair_id,rater=worker,value=relevance")
    assert "raw_annotation.csv, line 2, field 'pair_id': the file names its units by one column" in message
    assert "--columns query=COLUMN,item=COLUMN" in message


@pytest.mark.parametrize("content, message", [
    ("query,item,rater,value\nq1,m1,a,2\nq1,m1,b,maybe\n",
     "labels.csv, line 3, field 'value': 'maybe' is not a number like the file's first value"),
    ("query,item,rater,value\nq1,m1,a,ambiguous\n",
     "labels.csv, line 2, field 'value': 'ambiguous' is not a grade"),
    ("query,item,rater,value\nq1,m1,a,-1\n", "labels.csv, line 2, field 'value': -1 is negative"),
    ("query,item,value\nq1,m1,2\n", "labels.csv, line 1: no column of the header for rater"),
])
def test_bad_rater_labels_are_refused_naming_line_and_field(tmp_path, content, message):
    labels = tmp_path / "labels.csv"
    labels.write_text(content)
    assert message in refusal(EVAL / "rater_run.txt", "--judgments", labels, "--judgments-format", "rater_labels")


def test_bad_columns_option_is_refused():
    assert "--columns expects name=column pairs" in refusal(*RATER[:-1], "query")


# --- DiDeMo ---------------------------------------------------------------------------------------

def test_didemo_scores_the_hand_worked_values_under_the_official_names():
    doc = as_json(EVAL / "didemo_pred.json", *DIDEMO)
    assert doc["measures"] == pytest.approx({"Average rank@1": 1 / 3, "Average rank@5": 2 / 3,
                                             "Average iou": 11 / 18})
    assert list(doc["measures"]) == ["Average rank@1", "Average rank@5", "Average iou"]
    assert doc["per_query"]["a1"] == pytest.approx({"Average rank@1": 0.0, "Average rank@5": 1.0,
                                                    "Average iou": 5 / 6})
    assert doc["queries"] == {"scored": 3, "unanswered": ["a3"], "without_judgments": []}
    assert doc["conventions"]["tool"] == "LocalizingMoments utils/eval.py"


def test_didemo_official_lines_and_the_aligned_array_layout():
    expected = ["Average rank@1: 0.333333", "Average rank@5: 0.666667", "Average iou: 0.611111"]
    assert run_evaluate(EVAL / "didemo_pred.json", *DIDEMO, "--output", "didemo").splitlines() == expected
    assert run_evaluate(EVAL / "didemo_pred_aligned.json", *DIDEMO, "--output", "didemo").splitlines() == expected
    two = run_evaluate(EVAL / "didemo_pred.json", EVAL / "didemo_pred_aligned.json", *DIDEMO, "--output", "didemo")
    assert two.splitlines() == ["didemo_pred.json", *expected, "didemo_pred_aligned.json", *expected]


def test_didemo_measures_by_short_names():
    doc = as_json(EVAL / "didemo_pred.json", *DIDEMO, "--measures", "miou", "rank@1")
    assert list(doc["measures"]) == ["Average rank@1", "Average iou"]


def _official_eval_predictions(segments, data):
    """LocalizingMoments utils/eval.py, eval_predictions, line for line (Python 3, no printing)."""
    def iou(pred, gt):
        intersection = max(0, min(pred[1], gt[1]) + 1 - max(pred[0], gt[0]))
        union = max(pred[1], gt[1]) + 1 - min(pred[0], gt[0])
        return float(intersection) / union

    def rank(pred, gt):
        return pred.index(tuple(gt)) + 1

    average_ranks, average_iou = [], []
    for s, d in zip(segments, data):
        pred = s[0]
        ious = [iou(pred, t) for t in d["times"]]
        average_iou.append(np.mean(np.sort(ious)[-3:]))
        ranks = [rank(s, t) for t in d["times"]]
        average_ranks.append(np.mean(np.sort(ranks)[:3]))
    rank1 = np.sum(np.array(average_ranks) <= 1) / float(len(average_ranks))
    rank5 = np.sum(np.array(average_ranks) <= 5) / float(len(average_ranks))
    return rank1, rank5, np.mean(average_iou)


@pytest.mark.parametrize("seed", range(3))
def test_didemo_equals_the_official_script_on_complete_rankings(tmp_path, seed):
    # DiDeMo's 21 candidate moments: every (first, last) with 0 <= first <= last <= 5. A complete
    # ranking holds all 21, so the official rank() always finds the annotators' windows.
    moments = [(i, j) for i, j in itertools.combinations_with_replacement(range(6), 2)]
    rng = np.random.default_rng(seed)
    data, segments = [], []
    for k in range(40):
        # Annotators mostly agree: three draws near one moment, one anywhere (2 to 5 annotators).
        base = moments[rng.integers(21)]
        times = [list(base) if rng.random() < 0.6 else list(moments[rng.integers(21)])
                 for _ in range(rng.integers(2, 6))]
        data.append({"annotation_id": f"a{k}", "description": "d", "video": f"v{k}", "times": times})
        segments.append([moments[i] for i in rng.permutation(21)])
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps(data))
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps([[list(m) for m in s] for s in segments]))
    rank1, rank5, miou = _official_eval_predictions(segments, data)
    got = run_evaluate(pred, "--judgments", gt, "--judgments-format", "didemo", "--output", "didemo").splitlines()
    assert got == [f"Average rank@1: {rank1:f}", f"Average rank@5: {rank5:f}", f"Average iou: {miou:f}"]
    doc = as_json(pred, "--judgments", gt, "--judgments-format", "didemo")
    assert doc["measures"]["Average iou"] == pytest.approx(miou, abs=1e-12)


def test_an_aligned_array_of_the_wrong_length_is_refused(tmp_path):
    pred = tmp_path / "pred.json"
    pred.write_text("[[[1, 1]], [[2, 3]]]\n")
    message = refusal(pred, *DIDEMO)
    assert "pred.json: an array of rankings is aligned with the ground truth by position, but it holds 2 rankings " \
           "for 3 annotations in didemo_gt.json" in message


@pytest.mark.parametrize("content, message", [
    ('{"a1": [[1, 1],\n [3, 2]]}', "pred.json, line 1, field 'a1[1][1]': last segment 2 is before first segment 3"),
    ('{"a1": [[1, 1]],\n "a1": [[2, 2]]}', "pred.json, line 2, field 'a1': 'a1' is listed twice"),
    ('[[[0, 0]],\n [[1.5, 2]]]', "pred.json, line 2, field '[1][0][0]': '1.5' is not a segment index"),
    ('"a1"', "pred.json, line 1: not a DiDeMo prediction file"),
    ('{"a1": [[1, 1]]', "pred.json, line 1: not valid JSON: expected ',' or '}'"),
])
def test_bad_didemo_prediction_file_names_line_and_field(tmp_path, content, message):
    pred = tmp_path / "pred.json"
    pred.write_text(content)
    assert message in refusal(pred, *DIDEMO)


def test_didemo_refuses_layouts_and_runs_that_do_not_apply():
    assert "--output trec_eval is not available for didemo judgments" in \
        refusal(EVAL / "didemo_pred.json", *DIDEMO, "--output", "trec_eval")
    assert "--run-format trec cannot be scored against didemo judgments" in \
        refusal(EVAL / "fire_run.txt", *DIDEMO, "--run-format", "trec")
    assert "--output didemo is not available for qrels judgments" in \
        refusal(EVAL / "fire_run.txt", "--judgments", EVAL / "fire_originals.qrels", "--judgments-format", "qrels",
                "--output", "didemo")
