"""`manage.py evaluate` on moment benchmarks (QVHighlights, TVR): the command prints the numbers
worked by hand in tests/annotation/analysis/test_moment_eval.py (see the comments there for every
step), in the JSON and table layouts, and refuses the layouts and options that do not apply."""
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.conftest import FIXTURES

MOMENTS = FIXTURES / "moments"
QVH = [MOMENTS / "qvh_pred.jsonl", "--judgments", MOMENTS / "qvh_gt.jsonl", "--judgments-format", "qvhighlights"]
TVR = [MOMENTS / "tvr_pred.json", "--judgments", MOMENTS / "tvr_gt.jsonl", "--judgments-format", "tvr"]

# The hand-worked values of test_qvhighlights_fixture_worked_by_hand.
QVH_MEASURES = {
    "MR-full-R1@0.5": 66.67, "MR-full-R1@0.7": 33.33,
    "MR-full-mAP": 46.11, "MR-full-mAP@0.5": 61.11, "MR-full-mAP@0.75": 44.44,
    "MR-long-mAP": 17.5, "MR-middle-mAP": 85.0, "MR-short-mAP": 11.67,
}


def run_evaluate(*args) -> str:
    out = StringIO()
    call_command("evaluate", *[str(a) for a in args], stdout=out)
    return out.getvalue()


def test_qvhighlights_json_gives_the_hand_worked_numbers():
    doc = json.loads(run_evaluate(*QVH, "--output", "json"))
    assert doc["measures"] == QVH_MEASURES
    assert list(doc["measures"]) == sorted(QVH_MEASURES)  # Moment-DETR's brief block order
    assert doc["conventions"]["tool"] == "Moment-DETR standalone_eval"
    assert doc["conventions"]["name"] == "qvhighlights" and doc["conventions"]["max_result_size"] == 10
    q1 = doc["per_query"]["1"]
    assert q1["MR-full-mAP"] == pytest.approx(100 * 41 / 60)
    assert q1["MR-full-mAP@0.5"] == pytest.approx(100 * 5 / 6)
    assert q1["MR-short-mAP"] == pytest.approx(100 * 7 / 30)
    assert q1["MR-full-R1@0.7"] == 100.0
    # Query 2 has no prediction: scored 0 in the bins it is in, and reported as unanswered.
    assert doc["per_query"]["2"] == {"MR-short-mAP": 0.0, "MR-full-mAP": 0.0, "MR-full-mAP@0.5": 0.0,
                                     "MR-full-mAP@0.75": 0.0, "MR-full-R1@0.5": 0.0, "MR-full-R1@0.7": 0.0}
    assert doc["per_query"]["3"]["MR-full-R1@0.5"] == 100.0 and doc["per_query"]["3"]["MR-full-R1@0.7"] == 0.0
    assert "MR-long-mAP" not in doc["per_query"]["3"]
    assert doc["queries"] == {"scored": 3, "unanswered": ["2"], "without_judgments": []}


def test_qvhighlights_run_format_named_explicitly_gives_the_same_result():
    assert run_evaluate(*QVH, "--run-format", "qvhighlights", "--output", "json") == \
        run_evaluate(*QVH, "--output", "json")


def test_qvhighlights_measures_can_be_chosen():
    doc = json.loads(run_evaluate(*QVH, "--output", "json", "--measures", "MR-full-mAP", "MR-full-R1@0.5"))
    assert doc["measures"] == {"MR-full-R1@0.5": 66.67, "MR-full-mAP": 46.11}
    assert set(doc["per_query"]["1"]) == {"MR-full-R1@0.5", "MR-full-mAP"}


def test_qvhighlights_table_names_the_tool_and_what_happened_to_unanswered_queries():
    got = run_evaluate(*QVH)
    assert "conventions: qvhighlights (Moment-DETR standalone_eval)" in got
    header, row = got.splitlines()[2:4]
    assert header.split()[:3] == ["run", "MR-full-R1@0.5", "MR-full-R1@0.7"]
    assert row.split() == ["qvh_pred.jsonl", "66.6700", "33.3300", "46.1100", "61.1100", "44.4400", "17.5000",
                           "85.0000", "11.6700", "3"]
    assert "1 judged queries not in the run, scored 0: 2" in got


def test_tvr_json_gives_the_hand_worked_numbers():
    # test_tvr_fixture_worked_by_hand's values.
    doc = json.loads(run_evaluate(*TVR, "--output", "json"))
    m = doc["measures"]
    assert doc["conventions"]["tool"] == "TVRetrieval standalone_eval"
    assert (m["VCMR-0.5-r1"], m["VCMR-0.5-r5"], m["VCMR-0.7-r1"], m["VCMR-0.7-r5"]) == (0.0, 100.0, 0.0, 33.33)
    assert m["VCMR-0.5-r100"] == 100.0
    assert (m["SVMR-0.5-r1"], m["SVMR-0.7-r1"], m["SVMR-0.7-r5"]) == (66.67, 66.67, 66.67)
    assert (m["VR-r1"], m["VR-r5"], m["VR-r10"]) == (33.33, 66.67, 100.0)
    assert doc["per_query"]["103"]["VCMR-0.5-r5"] == 100.0 and doc["per_query"]["103"]["VCMR-0.7-r5"] == 0.0
    assert list(doc["per_query"]) == ["101", "102", "103"]


def test_tvr_table():
    got = run_evaluate(*TVR, "--measures", "VR-r1", "VCMR-0.7-r5")
    assert "conventions: tvr (TVRetrieval standalone_eval)" in got
    assert got.splitlines()[3].split() == ["tvr_pred.json", "33.3300", "33.3300", "3"]


@pytest.mark.parametrize("args", [QVH, TVR], ids=["qvhighlights", "tvr"])
@pytest.mark.parametrize("output", ["trec_eval", "sample_eval"])
def test_official_ranked_layouts_are_refused_for_moments(args, output):
    with pytest.raises(CommandError, match=rf"--output {output} is not available .* \(choose from table, json\)"):
        run_evaluate(*args, "--output", output)


def test_run_format_must_fit_the_judgments():
    with pytest.raises(CommandError, match="--run-format trec cannot be scored against qvhighlights judgments"):
        run_evaluate(*QVH, "--run-format", "trec")
    with pytest.raises(CommandError, match="--run-format tvr cannot be scored against qvhighlights judgments"):
        run_evaluate(*QVH, "--run-format", "tvr")
    qrels = FIXTURES / "evaluation" / "trec.qrels"
    with pytest.raises(CommandError, match="--run-format qvhighlights cannot be scored against qrels judgments"):
        run_evaluate(MOMENTS / "qvh_pred.jsonl", "--judgments", qrels, "--judgments-format", "qrels",
                     "--run-format", "qvhighlights")


def test_ranked_retrieval_conventions_and_unknown_measures_are_refused():
    with pytest.raises(CommandError, match="scored under the 'qvhighlights' conventions only"):
        run_evaluate(*QVH, "--conventions", "trec")
    with pytest.raises(CommandError, match="unknown measure 'map' for qvhighlights judgments"):
        run_evaluate(*QVH, "--measures", "map")


def test_a_bad_ground_truth_line_names_file_line_and_field(tmp_path):
    gt = tmp_path / "gt.jsonl"
    gt.write_text('{"qid": 1, "query": "q", "vid": "v", "relevant_windows": [[0, 8]]}\n'
                  '{"qid": 2, "query": "q", "vid": "v", "relevant_windows": "soon"}\n')
    out = StringIO()
    with pytest.raises(CommandError) as exc:
        call_command("evaluate", str(MOMENTS / "qvh_pred.jsonl"), "--judgments", str(gt),
                     "--judgments-format", "qvhighlights", "--output", "json", stdout=out)
    assert "gt.jsonl, line 2, field 'relevant_windows'" in str(exc.value)
    assert out.getvalue() == ""


def test_a_bad_prediction_line_names_file_line_and_field(tmp_path):
    pred = tmp_path / "pred.jsonl"
    pred.write_text('{"qid": 1, "pred_relevant_windows": [[0, 8]]}\n')
    with pytest.raises(CommandError, match=r"pred.jsonl, line 1, field 'pred_relevant_windows\[0\]': must be a "
                                           r"list \[start, end, score\]"):
        run_evaluate(pred, *QVH[1:])


def test_a_length_bin_without_queries_is_null_in_json(tmp_path):
    # Only a 20 s window: no query in the short or long bins, which Moment-DETR prints as NaN.
    gt = tmp_path / "gt.jsonl"
    gt.write_text('{"qid": 1, "query": "q", "vid": "v", "relevant_windows": [[20, 40]]}\n')
    pred = tmp_path / "pred.jsonl"
    pred.write_text('{"qid": 1, "pred_relevant_windows": [[20, 40, 0.9]]}\n')
    text = run_evaluate(pred, "--judgments", gt, "--judgments-format", "qvhighlights", "--output", "json")
    doc = json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))
    assert doc["measures"]["MR-short-mAP"] is None and doc["measures"]["MR-long-mAP"] is None
    assert doc["measures"]["MR-middle-mAP"] == 100.0 and doc["measures"]["MR-full-R1@0.7"] == 100.0
