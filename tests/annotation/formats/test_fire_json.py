import io
import json

import pytest

from annotation.formats import fire_json
from annotation.formats.errors import ImportRejected, IssueCollector
from annotation.formats.fire_json import FireJsonReader, FireJsonWriter


def _write(**kwargs):
    out = io.StringIO()
    with FireJsonWriter(out, metadata={"datasets": ["MSVD"], "license": "CC BY 4.0", "creator": "me"}) as writer:
        for record in kwargs["records"]:
            writer.write(**record)
    return out.getvalue(), writer


def _record(query, video, label, labels, ids=(), models=("A",)):
    return {"query": query, "video_id": video, "label": label, "annotator_labels": list(labels),
            "annotator_ids": list(ids), "models": list(models), "dataset": "MSVD", "response_ids": [], "queue_ids": []}


def _read(path):
    issues = IssueCollector(path.name)
    reader = FireJsonReader(path, issues)
    return list(reader), reader, [str(i) for i in issues.issues]


def test_writer_produces_the_published_layout():
    text, writer = _write(records=[
        _record("a man is cooking", "video1", "relevant", ["relevant", "not_relevant", "relevant"], [3, 4, 5]),
        _record("a man is cooking", "video2", None, ["relevant", "not_relevant"], [3, 4]),
        _record("a dog", "video3", "not_relevant", ["not_relevant"], [3]),
    ])
    data = json.loads(text)
    assert list(data) == ["annotations", "disagreements", "datasets", "license", "creator"]
    assert data["annotations"][0] == {"query": "a man is cooking", "video_id": "video1", "label": "relevant",
                                      "annotator_labels": ["relevant", "irrelevant", "relevant"],
                                      "annotator_ids": [3, 4, 5], "models": ["A"], "dataset": "MSVD",
                                      "response_ids": [], "queue_ids": []}
    assert data["annotations"][1]["label"] == "irrelevant"
    assert "label" not in data["disagreements"][0] and data["disagreements"][0]["video_id"] == "video2"
    assert writer.counts == {"annotations": 2, "disagreements": 1}


class _Text(str):
    pass


class _Number(int):
    pass


# Every kind of value a record can carry (imported raters' ids are whatever the published file held).
AWKWARD = ["=1+2", 'say "hi"\\', "tab\there\r\n", "café 日本 😀", "\x00\x01\x1f\x7f\u2028\u2029", "", _Text("sub"),
           0, -7, 2**70, True, False, None, 1.5, -0.0, 1e-07, 1e22, float("nan"), float("inf"), _Number(5),
           [], ["nested", 1, [None]], {"k": "v", "n": [1.5]}, ("a", 2)]


def test_writer_records_are_json_dumps_of_the_record_whatever_they_hold():
    """The writer encodes records without json.dumps (issue 40); each line is json.dumps of the
    record all the same (ensure_ascii=False, default separators), on every kind of value."""
    records = []
    for n in range(len(AWKWARD)):
        values = AWKWARD[n:] + AWKWARD[:n]
        records.append({"query": AWKWARD[n] if isinstance(AWKWARD[n], str) else "q", "video_id": f"v{n}",
                        "label": (None, "relevant", "not_relevant")[n % 3],
                        "annotator_labels": ["relevant", "not_relevant"][: n % 3], "annotator_ids": values[:5],
                        "models": [v for v in values if isinstance(v, str)], "dataset": "MSVD\u2028",
                        "response_ids": values[5:8], "queue_ids": [n, 2**40]})
    text, writer = _write(records=records)
    lines = text.split("\n")
    words = {"relevant": "relevant", "not_relevant": "irrelevant"}

    def dumped(record):
        fire = {key: value for key, value in record.items() if key != "label" or value is not None}
        fire["label"] = words.get(record["label"])
        order = ["query", "video_id", "label", "annotator_labels", "annotator_ids", "models", "dataset",
                 "response_ids", "queue_ids"]
        fire = {key: fire[key] for key in order if key != "label" or record["label"] is not None}
        fire["annotator_labels"] = [words[v] for v in record["annotator_labels"]]
        return json.dumps(fire, ensure_ascii=False)

    annotations = [dumped(r) for r in records if r["label"] is not None]
    disagreements = [dumped(r) for r in records if r["label"] is None]
    assert lines[1:1 + len(annotations)] == [line + "," for line in annotations[:-1]] + annotations[-1:]
    start = 1 + len(annotations) + 1
    assert lines[start:start + len(disagreements)] == [line + "," for line in disagreements[:-1]] + disagreements[-1:]
    with pytest.raises(TypeError, match="not JSON serializable"):  # as json.dumps refuses it
        _write(records=[_record("q", "v", "relevant", [], ids=[object()])])


def test_writer_with_nothing_is_still_valid_json():
    text, _ = _write(records=[])
    assert json.loads(text) == {"annotations": [], "disagreements": [], "datasets": ["MSVD"], "license": "CC BY 4.0",
                                "creator": "me"}


@pytest.mark.parametrize("chunk", [7, 64, 1 << 20])
def test_reader_streams_records_whatever_the_chunk_size(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(fire_json, "_CHUNK", chunk)
    text, _ = _write(records=[
        _record("a man is cooking", "video1", "relevant", ["relevant"], [12345678]),
        _record("ünïcode café", "video2", None, ["relevant", "not_relevant"], [1, 2]),
        _record("a dog", "video3", "not_relevant", ["not_relevant"], [3], models=["A", "B"]),
    ])
    path = tmp_path / "fire.json"
    path.write_text(text, encoding="utf-8")
    records, reader, problems = _read(path)
    assert problems == []
    assert [(r.section, r.index, r.query, r.video_id, r.label) for r in records] == [
        ("annotations", 0, "a man is cooking", "video1", "relevant"),
        ("annotations", 1, "a dog", "video3", "not_relevant"),
        ("disagreements", 0, "ünïcode café", "video2", None)]
    assert records[0].annotator_ids == [12345678]
    assert records[2].annotator_labels == ["relevant", "not_relevant"]
    assert records[1].models == ["A", "B"] and records[1].dataset == "MSVD"
    assert [r.line for r in records] == [2, 3, 5]
    assert reader.metadata == {"datasets": ["MSVD"], "license": "CC BY 4.0", "creator": "me"}


def test_reader_accepts_a_single_line_file_with_metadata_first(tmp_path, monkeypatch):
    monkeypatch.setattr(fire_json, "_CHUNK", 5)
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"datasets": ["MSRVTT"], "annotations": [
        {"query": "q", "video_id": "v", "label": "irrelevant"}], "created_ds": "2023-01-01"}))
    records, reader, problems = _read(path)
    assert problems == [] and len(records) == 1 and records[0].label == "not_relevant"
    assert records[0].annotator_labels == [] and records[0].line == 1
    assert reader.metadata == {"datasets": ["MSRVTT"], "created_ds": "2023-01-01"}


def test_record_problems_name_record_line_and_field(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"annotations": [\n'
                    '{"query": "", "video_id": "v1", "label": "relevant"},\n'
                    '{"query": "q", "video_id": "v1", "label": "maybe"},\n'
                    '{"query": "q", "video_id": 7, "label": "relevant", "annotator_labels": ["yes"]},\n'
                    '"not an object",\n'
                    '{"query": "q", "video_id": "v2", "label": "relevant", "models": "A"}\n'
                    '], "disagreements": [{"query": "q", "video_id": "v3"}]}')
    records, _, problems = _read(path)
    assert [(r.section, r.video_id) for r in records] == [("disagreements", "v3")]
    assert problems == [
        "bad.json, line 2, field 'annotations[0].query': missing or not a non-empty string",
        "bad.json, line 3, field 'annotations[1].label': 'maybe' is not 'relevant' or 'irrelevant'",
        "bad.json, line 4, field 'annotations[2].video_id': missing or not a non-empty string",
        "bad.json, line 5, field 'annotations[3]': each record must be a JSON object",
        "bad.json, line 6, field 'annotations[4].models': must be a list",
    ]


@pytest.mark.parametrize("text, message", [
    ('[1, 2]', "line 1: not valid JSON: expected '{' (a FIRE file is one JSON object), found '['"),
    ('{"annotations": [\n{"query": "q",\n "video_id": }]}', "line 3: not valid JSON: Expecting value"),
    ('{"annotations": [] ', "not valid JSON: expected ',' or '}', found the end of the file"),
    ('{"annotations": []} x', "not valid JSON: extra data after the top-level object"),
    ('{"annotations": {}}', "'annotations' must be an array"),
])
def test_broken_json_is_refused_at_once_with_its_line(tmp_path, text, message):
    path = tmp_path / "broken.json"
    path.write_text(text)
    with pytest.raises(ImportRejected) as caught:
        _read(path)
    assert message in str(caught.value.issues[0])
    assert str(caught.value.issues[0]).startswith("broken.json")


def test_a_file_without_annotations_is_reported(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"foo": 1}')
    records, _, problems = _read(path)
    assert records == []
    assert problems == ["other.json, field 'annotations': no 'annotations' array: is this a FIRE dataset file?"]


def test_bytes_that_are_not_utf8_are_refused(tmp_path):
    path = tmp_path / "latin.json"
    path.write_bytes(b'{"annotations": [{"query": "caf\xe9", "video_id": "v", "label": "relevant"}]}')
    with pytest.raises(ImportRejected, match="not valid UTF-8"):
        _read(path)


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("text, line, message", [
    # A record nested deeper than Python's recursion limit raised RecursionError (issue 22, finding 11).
    ('{"annotations": [\n{"query": "q", "video_id": "v", "label": "relevant"},\n' + DEEP + "]}", 3, "nested too deeply"),
    ('{"license": \n' + DEEP + ', "annotations": []}', 2, "nested too deeply"),
    ('{"annotations": [\n{"query": "q", "video_id": "v", "models": [' + "9" * 5000 + "]}]}", 2,
     "an integer with too many digits"),
])
def test_absurd_json_is_refused_with_its_line_like_the_other_readers(tmp_path, text, line, message):
    path = tmp_path / "deep.json"
    path.write_text(text)
    with pytest.raises(ImportRejected) as caught:
        _read(path)
    (issue,) = caught.value.issues
    assert (issue.file, issue.line) == ("deep.json", line) and message in issue.message, str(issue)
