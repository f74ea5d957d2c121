"""`manage.py evaluate`: the official tools' layouts line by line, parity with pytrec_eval, errors.

Fixtures in tests/fixtures/evaluation (see tests/annotation/analysis/test_sample_eval.py for the
hand-worked sample_eval values). trec.qrels / trec_run_a.txt by hand: query q1 ties d1 and d2 at
score 3.0 and trec_eval puts d2 first (doc id descending), so run A ranks q1 as d2 N, d1 R,
d5 unjudged, d3 R (grade 2), d4 (-1); relevant d1, d3, d7: AP = (1/2 + 2/4) / 3 = 1/3, P@5 = 2/5,
RR = 1/2. q2: d9 N, d1 R: AP = RR = 1/2. q3 has no relevant document: 0. q4 is not in the run
(skipped, as trec_eval without -c skips it), q5 has no qrels (ignored).
"""
import json
from io import StringIO
from pathlib import Path

import pytest
import pytrec_eval
from django.core.management import CommandError, call_command

from tests.annotation.analysis.test_sample_eval import (AP9, EST9, EST10, IDEAL10_TRECVID, NDCG9, S10)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "evaluation"


def run_evaluate(*args) -> str:
    out = StringIO()
    call_command("evaluate", *[str(a) for a in args], stdout=out)
    return out.getvalue()


def sample_eval_args(*runs, output="sample_eval", extra=()):
    return [*(FIXTURES / r for r in runs), "--judgments", FIXTURES / "trecvid.qrels",
            "--judgments-format", "sample_eval", "--output", output, *extra]


def test_sample_eval_layout_line_by_line():
    got = run_evaluate(*sample_eval_args("trecvid_run_a.txt")).splitlines()
    ndcg10 = 1.5 / IDEAL10_TRECVID
    ranks = (5, 10, 15, 20, 30, 100, 200, 500, 1000)

    def block(topic, ap, ndcg, est, depth, rel, num_ret):
        lines = [f"infAP\t\t{topic}\t\t{ap:6.4f}", f"infNDCG\t\t{topic}\t\t{ndcg:6.4f}"]
        lines += [f"iP{k}\t\t{topic}\t\t{(est[k - 1] if k <= depth else est[-1]) / k:6.4f}" for k in ranks]
        return lines + [f"inum_rel_ret\t{topic}\t{est[-1]:14.4f}", f"inum_rel\t{topic}\t{rel:14.4f}",
                        f"num_ret\t\t{topic}\t{num_ret:9d}"]

    recall9 = [EST9[0]] * 6 + [EST9[3] / 4] * 3 + [EST9[5] / 6, 0.0]
    recall10 = [EST10[0]] + [0.0] * 10
    expected = block("9", AP9, NDCG9, EST9, 6, 4, 6) + block("10", S10 / 1000, ndcg10, EST10, 3, 1002, 3)
    expected += [f"infAP\t\tall\t\t{(AP9 + S10 / 1000) / 2:6.4f}", f"infNDCG\t\tall\t\t{(NDCG9 + ndcg10) / 2:6.4f}"]
    expected += [f"iprec@rec{i / 10:4.2f}\tall\t\t{(a + b) / 2:6.4f}" for i, (a, b) in enumerate(zip(recall9, recall10))]
    expected += [f"iP{k}\t\tall\t\t{((EST9[k - 1] if k <= 6 else EST9[-1]) / k + EST10[-1] / k) / 2:6.4f}"
                 for k in ranks]
    expected += [f"inum_rel_ret\tall\t{EST9[-1] + EST10[-1]:14.4f}", f"inum_rel\tall\t{1007:14.4f}",
                 f"num_ret\t\tall\t{9:9d}"]
    assert got == expected
    # The digits a reader compares, written out.
    assert got[0] == "infAP\t\t9\t\t0.7083"
    assert "infAP\t\t10\t\t0.6677" in got  # 0.6663 without the max-result rule
    assert got[-3:] == ["inum_rel_ret\tall\t        5.9999", "inum_rel\tall\t     1007.0000", "num_ret\t\tall\t        9"]


def test_trec_conventions_turn_the_max_result_rule_off():
    got = run_evaluate(*sample_eval_args("trecvid_run_a.txt", extra=["--conventions", "trec", "--measures", "infAP"]))
    assert got.splitlines() == ["infAP\t\t9\t\t0.7083", "infAP\t\t10\t\t0.6663",
                                f"infAP\t\tall\t\t{(AP9 + S10 / 1002) / 2:6.4f}"]


def test_json_names_conventions_and_skipped_queries():
    doc = json.loads(run_evaluate(*sample_eval_args("trecvid_run_a.txt", output="json")))
    assert doc["conventions"]["name"] == "trecvid" and doc["conventions"]["max_result_size"] == 1000
    assert doc["measures"]["infAP"] == pytest.approx((AP9 + S10 / 1000) / 2)
    assert doc["measures"]["num_ret"] == 9 and isinstance(doc["measures"]["num_ret"], int)
    assert "iprec@rec0.50" in doc["measures"] and "iP10" in doc["per_query"]["9"]
    assert list(doc["per_query"]) == ["9", "10"]
    assert doc["queries"] == {"scored": 2, "unanswered": ["11"], "without_judgments": ["99"]}


def test_table_prints_conventions_and_every_run():
    got = run_evaluate(*sample_eval_args("trecvid_run_a.txt", "trecvid_run_b.txt", output="table"))
    assert "conventions: trecvid" in got and "first 1000 results per query" in got
    assert "trecvid_run_a.txt" in got and "trecvid_run_b.txt" in got
    assert "trecvid_run_b.txt: 1 judged queries not in the run, skipped: 10" in got


def trec_args(*runs, measures, output="trec_eval", extra=()):
    return [*(FIXTURES / r for r in runs), "--judgments", FIXTURES / "trec.qrels", "--judgments-format", "qrels",
            "--output", output, "--measures", *measures, *extra]


TREC_EVAL_MEASURES = {"map": "AP", "P_5": "P@5", "P_10": "P@10", "ndcg_cut_10": "nDCG@10", "recip_rank": "RR",
                      "bpref": "bpref", "success_1": "Success@1", "recall_5": "R@5", "ndcg": "nDCG",
                      "num_ret": "NumRet", "num_rel": "NumRel", "num_rel_ret": "NumRelRet", "Rprec": "Rprec"}
ORDER = ["num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank", "P_5", "P_10", "recall_5",
         "ndcg", "ndcg_cut_10", "success_1"]  # trec_eval's measure table order


@pytest.mark.parametrize("run", ["trec_run_a.txt", "trec_run_b.txt"])
@pytest.mark.parametrize("spelling", ["ir_measures", "trec_eval"])
def test_trec_eval_layout_matches_pytrec_eval_line_by_line(run, spelling):
    names = list(TREC_EVAL_MEASURES.values()) if spelling == "ir_measures" else list(TREC_EVAL_MEASURES)
    got = run_evaluate(*trec_args(run, measures=names)).splitlines()
    with open(FIXTURES / "trec.qrels") as q, open(FIXTURES / run) as r:
        qrels, scores = pytrec_eval.parse_qrel(q), pytrec_eval.parse_run(r)
    # trec_eval's own tie rule applies to the file's raw scores here.
    params = {"map", "P.5,10", "ndcg_cut.10", "recip_rank", "bpref", "success.1", "recall.5", "ndcg", "num_ret",
              "num_rel", "num_rel_ret", "Rprec"}
    results = pytrec_eval.RelevanceEvaluator(qrels, params).evaluate(scores)
    counts = {"num_ret", "num_rel", "num_rel_ret"}

    def line(name, query, value):
        return f"{name:<22}\t{query}\t{int(value) if name in counts else format(value, '6.4f')}"

    expected = [line(n, q, results[q][n]) for q in sorted(results) for n in ORDER]
    expected += [line(n, "all", sum(results[q][n] for q in results) / (1 if n in counts else len(results)))
                 for n in ORDER]
    assert got == expected


def test_trec_eval_values_by_hand():
    got = run_evaluate(*trec_args("trec_run_a.txt", measures=["map", "P.5", "recip_rank", "num_q"])).splitlines()
    assert got == [
        "map                   \tq1\t0.3333", "recip_rank            \tq1\t0.5000", "P_5                   \tq1\t0.4000",
        "map                   \tq2\t0.5000", "recip_rank            \tq2\t0.5000", "P_5                   \tq2\t0.2000",
        "map                   \tq3\t0.0000", "recip_rank            \tq3\t0.0000", "P_5                   \tq3\t0.0000",
        "num_q                 \tall\t3",
        "map                   \tall\t0.2778", "recip_rank            \tall\t0.3333", "P_5                   \tall\t0.2000",
    ]


def test_judged_at_k_and_json_for_qrels():
    doc = json.loads(run_evaluate(*trec_args("trec_run_a.txt", measures=["Judged@3", "AP"], output="json")))
    assert doc["conventions"]["name"] == "trec" and doc["conventions"]["max_result_size"] is None
    # q1's top 3: d2, d1 judged, d5 not. ir_measures divides by the list's length when it is
    # shorter than k: q2 2 of 2, q3 1 of 1.
    assert doc["per_query"]["q1"]["Judged@3"] == pytest.approx(2 / 3)
    assert doc["per_query"]["q2"]["Judged@3"] == 1.0
    assert doc["per_query"]["q3"]["Judged@3"] == 1.0
    assert doc["measures"] == pytest.approx({"map": (1 / 3 + 1 / 2) / 3, "Judged@3": (2 / 3 + 1 + 1) / 3})


def test_trecvid_conventions_cut_qrels_runs_at_1000(tmp_path):
    run = tmp_path / "deep.txt"
    run.write_text("".join(f"q1 Q0 n{i:04d} {i + 1} {2000 - i} deep\n" for i in range(1000)) + "q1 Q0 d1 1001 1 deep\n")
    args = [run, "--judgments", FIXTURES / "trec.qrels", "--judgments-format", "qrels", "--output", "json",
            "--measures", "num_ret", "num_rel_ret"]
    trec = json.loads(run_evaluate(*args))["per_query"]["q1"]
    trecvid = json.loads(run_evaluate(*args, "--conventions", "trecvid"))["per_query"]["q1"]
    assert (trec["num_ret"], trec["num_rel_ret"]) == (1001, 1)
    assert (trecvid["num_ret"], trecvid["num_rel_ret"]) == (1000, 0)


@pytest.mark.parametrize("content, message", [
    ("q1 Q0 d1 1 high runA\n", "bad.txt, line 1, field 'score': 'high' is not a number"),
    ("q1 Q0 d1 1 2 runA\nq1 Q0 d1 2 1 runA\n", "bad.txt, line 2, field 'doc_id': document 'd1' is already listed"),
    ("q1 Q0 d1 1 2\n", "bad.txt, line 1: expected 6 fields"),
    ("q1 Q0 d1 1 2 runA 0 5\n", "bad.txt, line 1, field 'start'"),
])
def test_bad_run_file_is_refused_naming_line_and_field(tmp_path, content, message):
    bad = tmp_path / "bad.txt"
    bad.write_text(content)
    with pytest.raises(CommandError) as caught:
        run_evaluate(bad, *trec_args(measures=["AP"]))
    assert message in str(caught.value)


def test_four_column_qrels_given_as_sample_eval_is_refused_with_a_hint():
    with pytest.raises(CommandError, match=r"trec.qrels, line 1: expected 5 fields .* use --judgments-format qrels"):
        run_evaluate(FIXTURES / "trec_run_a.txt", "--judgments", FIXTURES / "trec.qrels",
                     "--judgments-format", "sample_eval")


@pytest.mark.parametrize("fmt, measure, message", [
    ("qrels", "P", "needs a cutoff"),
    ("qrels", "ERR@10", "is not offered"),
    ("qrels", "P(rel=2)@10", "only the default parameters"),
    ("qrels", "bogus((", "unknown measure"),
    ("sample_eval", "AP", "unknown measure 'AP' for sample_eval judgments"),
])
def test_unknown_or_unsupported_measures_are_refused(fmt, measure, message):
    judgments = "trec.qrels" if fmt == "qrels" else "trecvid.qrels"
    with pytest.raises(CommandError, match=message.replace("(", r"\(")):
        run_evaluate(FIXTURES / "trec_run_a.txt", "--judgments", FIXTURES / judgments, "--judgments-format", fmt,
                     "--measures", measure)


def test_no_query_in_common_is_refused():
    with pytest.raises(CommandError, match="no topic of the run is in the judgments"):
        run_evaluate(FIXTURES / "trec_run_a.txt", "--judgments", FIXTURES / "trecvid.qrels",
                     "--judgments-format", "sample_eval")
