"""Run imports: TREC, CSV, JSONL, JSON and moment runs; every kind of bad input refused with file,
line and field named, nothing written; the same file twice never creates a second run."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotation.formats.errors import ImportRejected
from annotation.models import Caption, Clip, Dataset, Prediction, Run
from annotation.services.datasets.runs import run_import

pytestmark = pytest.mark.django_db


@pytest.fixture
def dataset():
    ds = Dataset.objects.create(name="toy")
    clips = [Clip.objects.create(dataset=ds, external_id=f"v{i}", video_id=f"v{i}") for i in range(1, 6)]
    for i in range(1, 4):
        Caption.objects.create(dataset=ds, external_id=f"q{i}", text=f"caption {i}", original_clip=clips[i - 1])
    return ds


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


GOOD_TREC = "q1 Q0 v1 1 0.9 sys\nq1 Q0 v2 2 0.8 sys\nq1 Q0 v3 3 0.8 sys\nq2 Q0 v2 1 3.0 sys\nq2 Q0 v1 2 -1.5 sys\n"


def test_trec_run(tmp_path, dataset):
    outcome = run_import(dataset=dataset, path=write(tmp_path, "a.trec", GOOD_TREC))
    run = outcome.run
    assert outcome.created and run.name == "sys" and run.kind == Run.Kind.CLIP
    assert (run.depth, run.prediction_count, run.caption_count) == (3, 5, 2)
    assert run.source_name == "a.trec" and len(run.checksum) == 64
    rows = list(Prediction.objects.filter(run=run, caption__external_id="q1").order_by("rank")
                .values_list("clip__external_id", "rank", "score"))
    assert rows == [("v1", 1, 0.9), ("v2", 2, 0.8), ("v3", 3, 0.8)]  # equal scores are allowed


def test_same_file_twice_returns_the_first_run(tmp_path, dataset):
    path = write(tmp_path, "a.trec", GOOD_TREC)
    first = run_import(dataset=dataset, path=path)
    again = run_import(dataset=dataset, path=path, name="other-name")
    assert not again.created and again.run.pk == first.run.pk
    assert Run.objects.count() == 1 and Prediction.objects.count() == 5


def test_csv_jsonl_and_json_runs(tmp_path, dataset):
    csv_run = run_import(dataset=dataset, path=write(tmp_path, "r.csv", "query_id,doc_id,rank,score\nq1,v1,1,0.5\nq1,v2,2,0.4\n")).run
    assert csv_run.name == "r" and csv_run.prediction_count == 2
    jsonl = "\n".join(json.dumps({"caption_id": "q2", "clip_id": f"v{r}", "rank": r, "score": 1 / r}) for r in (1, 2, 3))
    assert run_import(dataset=dataset, path=write(tmp_path, "r2.jsonl", jsonl)).run.depth == 3
    doc = {"q3": [{"clip_id": "v5", "score": 0.9}, {"clip_id": "v4", "score": 0.7}]}
    json_run = run_import(dataset=dataset, path=write(tmp_path, "r3.json", json.dumps(doc))).run
    assert list(Prediction.objects.filter(run=json_run).order_by("rank").values_list("clip__external_id", "rank")) == [("v5", 1), ("v4", 2)]


def test_moment_run(tmp_path, dataset):
    content = "q1 Q0 v1 1 0.9 m 0 5.5\nq1 Q0 v1 2 0.8 m 10 12\nq1 Q0 v2 3 0.7 m 1 2\n"
    run = run_import(dataset=dataset, path=write(tmp_path, "m.trec", content)).run
    assert run.kind == Run.Kind.MOMENT
    assert list(Prediction.objects.filter(run=run).order_by("rank").values_list("start", "end")) == [(0, 5.5), (10, 12), (1, 2)]


BAD_CASES = [
    ("qX Q0 v1 1 0.9 s\n", 1, "query_id", "unknown caption id 'qX'"),
    ("q1 Q0 vX 1 0.9 s\n", 1, "doc_id", "unknown clip id 'vX'"),
    ("q1 Q0 v1 1 0.9 s\nq1 Q0 v2 1 0.8 s\n", 2, "rank", "has rank 1 twice (first on line 1)"),
    ("q1 Q0 v1 0 0.9 s\n", 1, "rank", "not positive"),
    ("q1 Q0 v1 -3 0.9 s\n", 1, "rank", "not positive"),
    ("q1 Q0 v1 one 0.9 s\n", 1, "rank", "not a whole number"),
    ("q1 Q0 v1 1 0.5 s\nq1 Q0 v2 2 0.7 s\n", 2, "score", "scores contradict ranks"),
    ("q1 Q0 v1 1 nan s\n", 1, "score", "not a finite number"),
    ("q1 Q0 v1 1 inf s\n", 1, "score", "not a finite number"),
    ("q1 Q0 v1 1 high s\n", 1, "score", "not a number"),
    ("q1 Q0 v1 1 0.9 s\nq1 Q0 v1 2 0.8 s\n", 2, "doc_id", "the same clip twice (first on line 1)"),
    ("q1 Q0 v1 1 0.9 s\nq1 Q0 v2 2\n", 2, None, "expected 6 fields"),
    ("q1 Q0 v1 1001 0.9 s\n", 1, "rank", "deeper than the maximum run depth 1000"),
    ("q1 Q0 v1 1 0.9 s 5 5\n", 1, "end", "zero-length or inverted"),
    ("q1 Q0 v1 1 0.9 s 6 2\n", 1, "end", "zero-length or inverted"),
    ("q1 Q0 v1 1 0.9 s 0 2\nq1 Q0 v2 2 0.8 s\n", 2, "start", "moment prediction"),
]


@pytest.mark.parametrize("content, line, field, words", BAD_CASES)
def test_bad_trec_input(tmp_path, dataset, content, line, field, words):
    with pytest.raises(ImportRejected) as caught:
        run_import(dataset=dataset, path=write(tmp_path, "bad.trec", content))
    issues = caught.value.issues
    assert any((i.file, i.line, i.field) == ("bad.trec", line, field) and words in i.message for i in issues), issues
    assert Run.objects.count() == 0 and Prediction.objects.count() == 0


def test_undecodable_bytes_and_empty_file(tmp_path, dataset):
    with pytest.raises(ImportRejected) as caught:
        run_import(dataset=dataset, path=write(tmp_path, "b.trec", b"q1 Q0 v1 1 0.9 s\nq1 Q0 v\xfe2 2 0.8 s\n"))
    assert (caught.value.issues[0].line, "UTF-8" in caught.value.issues[0].message) == (2, True)
    with pytest.raises(ImportRejected) as caught:
        run_import(dataset=dataset, path=write(tmp_path, "e.trec", ""))
    assert caught.value.issues[0].message == "the file is empty"
    assert Run.objects.count() == 0


def test_configured_max_depth(tmp_path, dataset):
    with pytest.raises(ImportRejected) as caught:
        run_import(dataset=dataset, path=write(tmp_path, "d.trec", "q1 Q0 v1 1 0.9 s\nq1 Q0 v2 3 0.8 s\n"), max_depth=2)
    assert caught.value.issues[0].line == 2 and "maximum run depth 2" in caught.value.issues[0].message


def test_all_problems_are_reported_in_line_order(tmp_path, dataset):
    content = "q1 Q0 v1 1 0.9 s\nq1 Q0 v2 1 0.8 s\nqX Q0 v3 1 0.7 s\nq2 Q0 v1 0 0.1 s\nq2 Q0 v2 2\n"
    with pytest.raises(ImportRejected) as caught:
        run_import(dataset=dataset, path=write(tmp_path, "many.trec", content))
    assert [i.line for i in caught.value.issues] == [2, 3, 4, 5]


def test_error_cap(tmp_path, dataset, settings):
    settings.REJUDGE = settings.REJUDGE | {"IMPORT_ERROR_CAP": 3}
    content = "".join(f"q1 Q0 nope{i} {i} 0.5 s\n" for i in range(1, 50))
    with pytest.raises(ImportRejected) as caught:
        run_import(dataset=dataset, path=write(tmp_path, "cap.trec", content))
    assert len(caught.value.issues) == 3 and caught.value.truncated


def test_csv_and_json_errors_name_their_fields(tmp_path, dataset):
    with pytest.raises(ImportRejected) as caught:
        run_import(dataset=dataset, path=write(tmp_path, "r.csv", "caption_id,clip_id,rank,score\nq1,v1,1,x\n"))
    assert (caught.value.issues[0].line, caught.value.issues[0].field) == (2, "score")
    with pytest.raises(ImportRejected) as caught:
        run_import(dataset=dataset, path=write(tmp_path, "r.csv", "caption_id,rank,score\nq1,1,0.3\n"))
    assert "clip_id" in caught.value.issues[0].message
    with pytest.raises(ImportRejected) as caught:
        run_import(dataset=dataset, path=write(tmp_path, "r.json", json.dumps({"q1": [{"clip_id": "v1", "score": "x"}]})))
    assert caught.value.issues[0].field == "q1[0].score"
    with pytest.raises(ImportRejected) as caught:
        run_import(dataset=dataset, path=write(tmp_path, "r.jsonl", '{"caption_id": "q1"\n'))
    assert "malformed JSON" in caught.value.issues[0].message
    assert Run.objects.count() == 0


def test_a_big_run_streams_through_several_batches(tmp_path, dataset, monkeypatch):
    from annotation.services.datasets import runs as module

    monkeypatch.setattr(module._StagingTable, "BATCH", 7)
    lines = [f"q{q} Q0 v{c} {c} {1 - c / 10} big\n" for q in (1, 2, 3) for c in range(1, 6)]
    run = run_import(dataset=dataset, path=write(tmp_path, "big.trec", "".join(lines))).run
    assert run.prediction_count == 15 and Prediction.objects.filter(run=run).count() == 15


UNGROUPED = "q1 Q0 v1 1 0.9 s\nq2 Q0 v1 1 0.9 s\nq1 Q0 v2 2 0.8 s\n"


def test_ungrouped_files_are_checked_too(tmp_path, dataset):
    # q1's rows are not together: the whole-run checks run over the staging table instead.
    run = run_import(dataset=dataset, path=write(tmp_path, "u.trec", UNGROUPED)).run
    assert run.prediction_count == 3
    bad = UNGROUPED + "q1 Q0 v3 1 0.95 s\nq1 Q0 v1 3 0.5 s\nq2 Q0 v2 2 0.99 s\n"
    with pytest.raises(ImportRejected) as caught:
        run_import(dataset=dataset, path=write(tmp_path, "u2.trec", bad))
    found = {(i.line, i.field) for i in caught.value.issues}
    assert {(4, "rank"), (5, "doc_id"), (6, "score")} <= found
