"""Readers of QVHighlights, TVR and DiDeMo files: what they read, and refusals that name the file,
the line and the field, with nothing returned from a refused file."""
from __future__ import annotations

import pytest

from annotation.formats.errors import ImportRejected
from annotation.formats.moment_files import (
    load_didemo_ground_truth,
    load_qvhighlights_ground_truth,
    load_qvhighlights_predictions,
    load_tvr_ground_truth,
    load_tvr_predictions,
)
from tests.conftest import FIXTURES

MOMENTS = FIXTURES / "moments"


def _refusals(loader, tmp_path, name: str, text: str) -> list[str]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ImportRejected) as caught:
        loader(path)
    return [str(issue) for issue in caught.value.issues]


# --- reading the fixtures -------------------------------------------------------------------------

def test_qvhighlights_files_keep_every_window_and_the_duplicated_prediction():
    gt = load_qvhighlights_ground_truth(MOMENTS / "qvh_gt.jsonl")
    assert list(gt) == ["1", "2", "3"]
    assert gt["1"].windows == ((0.0, 8.0), (20.0, 40.0), (60.0, 110.0))
    assert gt["1"].video == "vidA_0.0_150.0" and gt["1"].line == 1
    pred = load_qvhighlights_predictions(MOMENTS / "qvh_pred.jsonl")
    assert pred["1"].windows[:2] == ((20.0, 40.0, 0.9), (20.0, 40.0, 0.9))
    assert len(pred["1"].windows) == 5 and pred["2"].windows == ()


def test_tvr_files_read_one_window_or_annotators_windows_and_the_submission_per_task():
    gt = load_tvr_ground_truth(MOMENTS / "tvr_gt.jsonl")
    assert gt["101"].windows == ((10.0, 20.0),) and gt["101"].desc_type == "v"
    assert len(gt["103"].windows) == 4
    sub = load_tvr_predictions(MOMENTS / "tvr_pred.json")
    assert sub.video_index == {"a": 0, "b": 1, "c": 2, "x": 3}
    assert set(sub.tasks) == {"VCMR", "SVMR", "VR"}
    assert sub.tasks["VCMR"]["101"].tolist() == [[3, 10, 20], [0, 12, 20], [0, 10, 20]]
    assert "103" not in sub.tasks["SVMR"]


def test_tvr_submission_keeps_the_first_rows_only(tmp_path):
    rows = ", ".join(f"[0, {i}, {i + 1}, 0.5]" for i in range(150))
    path = tmp_path / "sub.json"
    path.write_text('{"VCMR": [{"desc_id": 1, "predictions": [' + rows + ']}], "video2idx": {"a": 0}}')
    assert load_tvr_predictions(path).tasks["VCMR"]["1"].shape == (100, 3)


def test_didemo_file_keeps_repeated_annotator_windows():
    gt = load_didemo_ground_truth(MOMENTS / "didemo_gt.json")
    assert gt["a2"].windows == ((0.0, 0.0), (2.0, 3.0), (2.0, 3.0), (2.0, 3.0))
    assert gt["a2"].line == 3 and gt["a2"].video == "v2.mp4"


# --- refusals -------------------------------------------------------------------------------------

def test_qvhighlights_ground_truth_refusals_name_line_and_field(tmp_path):
    problems = _refusals(load_qvhighlights_ground_truth, tmp_path, "gt.jsonl", "\n".join([
        '{"qid": 1, "vid": "v", "relevant_windows": [[0, 8]]}',
        '{"qid": 2, "vid": "v", "relevant_windows": [[0, 8], [10, 5]]}',
        '{"qid": 3, "vid": "v"}',
        '{"qid": 1, "vid": "v", "relevant_windows": [[0, 2]]}',
        '{"qid": 4, "vid": "v", "relevant_windows": [[0, NaN]]}',
        '{"qid": 5, "vid": "v", "relevant_windows": []}',
        '{"qid": 6, "vid": "v", "relevant_windows": [[-2, 4]]}',
        '{"qid": 7, "vid": "v", "relevant_windows": [[4, 4]]}',
        '{"qid": [7], "vid": "v", "relevant_windows": [[0, 4]]}',
        '{"qid": 8, "relevant_windows": [[0, 4]',
    ]) + "\n")
    assert problems == [
        "gt.jsonl, line 2, field 'relevant_windows[1][1]': end 5 is not after start 10 (inverted window)",
        "gt.jsonl, line 3, field 'relevant_windows': missing: this file has no ground truth (a test split?)",
        "gt.jsonl, line 4, field 'qid': '1' is listed twice (first on line 1)",
        "gt.jsonl, line 5, field 'relevant_windows[0][1]': nan is not a finite number",
        "gt.jsonl, line 6, field 'relevant_windows': has no window",
        "gt.jsonl, line 7, field 'relevant_windows[0][0]': start -2 is negative",
        "gt.jsonl, line 8, field 'relevant_windows[0][1]': end 4 is not after start 4 (zero-length window)",
        "gt.jsonl, line 9, field 'qid': '[7]' is not a string or whole number",
        "gt.jsonl, line 10: malformed JSON: Expecting ',' delimiter at column 39",
    ]


def test_qvhighlights_prediction_refusals_name_line_and_field(tmp_path):
    problems = _refusals(load_qvhighlights_predictions, tmp_path, "pred.jsonl", "\n".join([
        '{"qid": 1, "pred_relevant_windows": [[0, 8, 0.9], [0, 8, 0.9], [3, 3, 0.1]]}',  # fine
        '{"qid": 2, "pred_relevant_windows": [[0, 8]]}',
        '{"qid": 3, "pred_relevant_windows": [[0, 8, "high"]]}',
        '{"qid": 4}',
        '[1, 2]',
    ]) + "\n")
    assert problems == [
        "pred.jsonl, line 2, field 'pred_relevant_windows[0]': must be a list [start, end, score]",
        "pred.jsonl, line 3, field 'pred_relevant_windows[0][2]': '\"high\"' is not a number",
        "pred.jsonl, line 4, field 'pred_relevant_windows': missing or not a list of windows",
        "pred.jsonl, line 5: expected a JSON object",
    ]


def test_an_empty_file_is_refused(tmp_path):
    assert _refusals(load_qvhighlights_predictions, tmp_path, "p.jsonl", "\n\n") == ["p.jsonl: the file is empty"]


def test_tvr_ground_truth_refusals(tmp_path):
    problems = _refusals(load_tvr_ground_truth, tmp_path, "tvr.jsonl", "\n".join([
        '{"desc_id": 1, "vid_name": "a", "ts": [[0, 5], [1, 6]]}',
        '{"desc_id": 2, "vid_name": "a", "ts": [5, 2]}',
        '{"desc_id": 3, "vid_name": "a", "ts": [0, 2], "type": "x"}',
        '{"desc_id": 4, "ts": [0, 2]}',
    ]) + "\n")
    assert problems == [
        "tvr.jsonl, line 1, field 'ts': 2 windows: give one [start, end] or at least four annotators' windows",
        "tvr.jsonl, line 2, field 'ts[0][1]': end 2 is not after start 5 (inverted window)",
        "tvr.jsonl, line 3, field 'type': 'x' is not one of v, t, vt",
        "tvr.jsonl, line 4, field 'vid_name': missing or not a string or whole number",
    ]


def test_tvr_submission_refusals_name_the_record_and_its_line(tmp_path):
    problems = _refusals(load_tvr_predictions, tmp_path, "sub.json", "\n".join([
        '{"VCMR": [',
        '  {"desc_id": 1, "predictions": [[0, 1, 2, 0.5]]},',
        '  {"desc_id": 2, "predictions": [["a", 1, 2, 0.5]]},',
        '  {"desc_id": 1, "predictions": [[0, 1, 2, 0.5]]},',
        '  {"desc_id": 3, "predictions": [[0, 5, 2, 0.5]]}',
        ']}',
    ]) + "\n")
    assert problems == [
        "sub.json, line 3, field 'VCMR[1].predictions[0][0]': '\"a\"' is not a video index (a whole number)",
        "sub.json, line 4, field 'VCMR[2].desc_id': '1' is listed twice (first on line 2)",
        "sub.json, line 5, field 'VCMR[3].predictions[0][2]': end 2 is before start 5 (inverted window)",
        "sub.json, field 'video2idx': missing: the submission must map video names to the indices it uses",
    ]


def test_tvr_submission_broken_json_names_its_line(tmp_path):
    problems = _refusals(load_tvr_predictions, tmp_path, "sub.json",
                         '{"video2idx": {"a": 0},\n "VR": [\n {"desc_id": 1, "predictions": [[0, 0, 0 0]]}]}\n')
    assert problems == ["sub.json, line 3: not valid JSON: Expecting ',' delimiter"]


def test_tvr_video_index_must_be_one_to_one(tmp_path):
    problems = _refusals(load_tvr_predictions, tmp_path, "sub.json",
                         '{"video2idx": {"a": 0, "b": 0}, "VR": []}\n')
    assert problems == ["sub.json, line 1, field 'video2idx.b': index 0 is also 'a''s"]


def test_didemo_refusals(tmp_path):
    problems = _refusals(load_didemo_ground_truth, tmp_path, "didemo.json", "\n".join([
        '[{"annotation_id": "a", "video": "v", "times": [[1, 1], [3, 2]]},',
        ' {"annotation_id": "b", "video": "v", "times": [[0, 1.5]]},',
        ' {"annotation_id": "a", "video": "v", "times": [[0, 0]]},',
        ' {"annotation_id": "c", "video": "v", "times": []}]',
    ]) + "\n")
    assert problems == [
        "didemo.json, line 1, field '[0].times[1][1]': last segment 2 is before first segment 3",
        "didemo.json, line 2, field '[1].times[0][1]': '1.5' is not a segment index (a whole number >= 0)",
        "didemo.json, line 3, field '[2].annotation_id': 'a' is listed twice (first on line 1)",
        "didemo.json, line 4, field '[3].times': missing or not a non-empty list of [first, last] segment indices",
    ]
