"""QVHighlights and TVR prediction files imported as stored moment runs: ranks are the file's order, a
repeated window and scores out of order are kept (Moment-DETR's standalone_eval reads them so),
and what cannot be stored is refused with line and field."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotation.formats.errors import ImportRejected
from annotation.models import Prediction, Run
from annotation.services.datasets.runs import run_import

from tests.annotation.services.judgment_sets.helpers import dataset_from_ids

pytestmark = pytest.mark.django_db
PRED = Path(__file__).resolve().parents[3] / "fixtures" / "moments" / "qvh_pred.jsonl"


@pytest.fixture
def dataset(tmp_path):
    records = [json.loads(line) for line in PRED.read_text().splitlines()]
    return dataset_from_ids(tmp_path, queries=[str(r["qid"]) for r in records], items=[r["vid"] for r in records],
                            name="qvh")


def test_windows_keep_the_files_order_repeats_included(dataset):
    run = run_import(dataset=dataset, path=PRED, fmt="qvhighlights", name="moment-detr").run
    assert (run.kind, run.source_format, run.caption_count, run.prediction_count, run.depth) == (
        Run.Kind.MOMENT, "qvhighlights", 2, 7, 5)
    rows = list(Prediction.objects.filter(run=run).order_by("caption__external_id", "rank")
                .values_list("caption__external_id", "clip__external_id", "rank", "start", "end", "score"))
    # qid 1 lists [20, 40] twice at the top (both kept, as the official evaluation keeps them);
    # qid 3's scores rise nowhere, qid 2 has no window and no row.
    assert rows == [("1", "vidA_0.0_150.0", 1, 20, 40, 0.9), ("1", "vidA_0.0_150.0", 2, 20, 40, 0.9),
                    ("1", "vidA_0.0_150.0", 3, 0, 10, 0.8), ("1", "vidA_0.0_150.0", 4, 60, 100, 0.5),
                    ("1", "vidA_0.0_150.0", 5, 120, 130, 0.4),
                    ("3", "vidC_0.0_150.0", 1, 40, 60, 0.7), ("3", "vidC_0.0_150.0", 2, 30, 60, 0.6)]


def test_scores_that_rise_are_kept_in_file_order(dataset, tmp_path):
    path = tmp_path / "rising.jsonl"
    path.write_text('{"qid": 1, "vid": "vidA_0.0_150.0", "pred_relevant_windows": [[0, 5, 0.2], [10, 20, 0.9]]}\n')
    run = run_import(dataset=dataset, path=path, fmt="qvhighlights").run
    assert list(Prediction.objects.filter(run=run).order_by("rank").values_list("score", flat=True)) == [0.2, 0.9]


def test_what_cannot_be_stored_is_refused_by_line_and_field(dataset, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"qid": 1, "vid": "vidA_0.0_150.0", "pred_relevant_windows": [[5, 5, 0.3]]}\n'
                    '{"qid": 3, "vid": "nope", "pred_relevant_windows": [[1, 2, 0.3]]}\n'
                    '{"qid": 77, "pred_relevant_windows": [[1, 2, 0.3]]}\n')
    with pytest.raises(ImportRejected) as caught:
        run_import(dataset=dataset, path=path, fmt="qvhighlights")
    assert [str(issue) for issue in caught.value.issues] == [
        "bad.jsonl, line 1, field 'pred_relevant_windows[0]': the window [5, 5] has no length, so it cannot be stored "
        "as a moment (evaluate scores the file as it is, IoU 0 for it)",
        "bad.jsonl, line 2, field 'vid': unknown clip id 'nope' (not in this dataset)",
        "bad.jsonl, line 3, field 'vid': missing: a stored moment run needs the video of each query"]
    assert not Run.objects.exists()


def test_a_moment_pool_merges_the_repeated_window_into_one_judged_span(dataset):
    from annotation.models import PooledPair
    from annotation.services.pools.moments import moment_pool_create

    run = run_import(dataset=dataset, path=PRED, fmt="qvhighlights").run
    pool = moment_pool_create(dataset=dataset, name="p", runs=[run], depth=10, iou_threshold=0.7)
    spans = sorted(PooledPair.objects.filter(pool=pool, caption__external_id="1", role="pool")
                   .values_list("start", "end"))
    # [20, 40] twice -> one span; [0, 10], [60, 100], [120, 130] overlap nothing at IoU 0.7.
    assert spans == [(0, 10), (20, 40), (60, 100), (120, 130)]


TVR_PRED = PRED.parent / "tvr_pred.json"


def test_a_tvr_submissions_vcmr_list_becomes_a_moment_run_in_file_order(tmp_path):
    submission = json.loads(TVR_PRED.read_text())
    dataset = dataset_from_ids(tmp_path, queries=[str(r["desc_id"]) for r in submission["VCMR"]],
                               items=list(submission["video2idx"]), name="tvr")
    run = run_import(dataset=dataset, path=TVR_PRED, fmt="tvr", name="xml").run
    names = {index: name for name, index in submission["video2idx"].items()}
    expected = [(str(r["desc_id"]), names[p[0]], rank, float(p[1]), float(p[2]))
                for r in submission["VCMR"] for rank, p in enumerate(r["predictions"], start=1)]
    rows = list(Prediction.objects.filter(run=run).order_by("caption__external_id", "rank")
                .values_list("caption__external_id", "clip__external_id", "rank", "start", "end"))
    assert rows == sorted(expected, key=lambda row: (row[0], row[2])) and run.kind == Run.Kind.MOMENT
    assert set(Prediction.objects.filter(run=run).values_list("score", flat=True)) == {None}  # TVR ignores scores


def test_a_tvr_file_without_vcmr_or_with_an_unknown_video_is_refused(tmp_path):
    dataset = dataset_from_ids(tmp_path, queries=["101"], items=["a"], name="tvr")
    bad = tmp_path / "bad.json"
    bad.write_text('{"video2idx": {"a": 0}, "VCMR": [{"desc_id": 101, "predictions": [[5, 1, 2, 0.3]]}]}')
    with pytest.raises(ImportRejected, match="field 'VCMR\\[desc_id=101\\].predictions\\[0\\]\\[0\\]': video index 5 "
                                             "is not in video2idx"):
        run_import(dataset=dataset, path=bad, fmt="tvr")
    only_vr = tmp_path / "vr.json"
    only_vr.write_text('{"video2idx": {"a": 0}, "VR": [{"desc_id": 101, "predictions": [[0, 0, 0, 0.3]]}]}')
    with pytest.raises(ImportRejected, match="field 'VCMR': missing: a stored run takes the VCMR list"):
        run_import(dataset=dataset, path=only_vr, fmt="tvr")
    assert not Run.objects.exists()
