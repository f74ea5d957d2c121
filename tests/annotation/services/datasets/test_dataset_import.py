"""Dataset imports: every supported format on good input, and each kind of bad input refused with
file, line and field named and nothing written."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotation.formats.errors import ImportRejected
from annotation.models import Caption, Clip, Dataset
from annotation.services.datasets.imports import dataset_import

pytestmark = pytest.mark.django_db


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def assert_nothing_written():
    assert Dataset.objects.count() == 0
    assert Clip.objects.count() == 0
    assert Caption.objects.count() == 0


# --- real benchmark excerpts ------------------------------------------------------------------

def test_msrvtt_1ka_excerpt(fixtures_dir):
    dataset = dataset_import(path=fixtures_dir / "datasets/msrvtt_1ka_head30.csv", name="msrvtt",
                             media_template="https://videos.example/msrvtt/{video_id}.mp4")
    assert dataset.source_format == "msrvtt-csv"
    assert dataset.clips.count() == 30 and dataset.captions.count() == 30
    caption = Caption.objects.get(dataset=dataset, external_id="ret2")
    assert caption.text == "a woman creating a fondant baby and flower"
    assert caption.original_clip.external_id == "video7020"
    assert caption.original_clip.media == "https://videos.example/msrvtt/video7020.mp4"
    assert caption.original_clip.start is None


def test_msvd_excerpt_splits_captions(fixtures_dir):
    dataset = dataset_import(path=fixtures_dir / "datasets/msvd_test_head5.tsv", name="msvd", media_template="msvd/{video_id}.avi")
    assert dataset.clips.count() == 5
    # 37 + 38 + 58 + 46 + 58 captions, counted independently from the file.
    assert dataset.captions.count() == 237
    first = Caption.objects.get(dataset=dataset, external_id="eyhzdC936uk_15_27#0")
    assert first.text == "a boy playing with dog"
    assert first.original_clip.media == "msvd/eyhzdC936uk_15_27.avi"
    assert Caption.objects.filter(dataset=dataset, original_clip__external_id="fBA_lxUiwSg_2_4").count() == 58


def test_youcook2_segments_become_clips_with_spans(fixtures_dir):
    dataset = dataset_import(path=fixtures_dir / "datasets/youcook2_val_4videos.json", name="yc2",
                             media_template="yc2/{video_id}.mp4")
    assert dataset.clips.count() == 27 and dataset.captions.count() == 27
    clip = Clip.objects.get(dataset=dataset, external_id="xHr8X2Wpmno_1")
    assert (clip.video_id, clip.start, clip.end, clip.duration) == ("xHr8X2Wpmno", 67, 89, 206.86)
    assert clip.media == "yc2/xHr8X2Wpmno.mp4"
    assert Caption.objects.get(dataset=dataset, external_id="xHr8X2Wpmno_1").text.startswith("combine lemon juice")


def test_epic100_timestamps(fixtures_dir):
    dataset = dataset_import(path=fixtures_dir / "datasets/epic100_retrieval_test_head40.csv", name="epic")
    assert dataset.clips.count() == 40
    clip = Clip.objects.get(dataset=dataset, external_id="P01_11_1")
    # 00:00:01.56 -> 1.56 s, 00:00:02.45 -> 2.45 s
    assert clip.video_id == "P01_11"
    assert clip.start == pytest.approx(1.56) and clip.end == pytest.approx(2.45)
    assert Caption.objects.get(dataset=dataset, external_id="P01_11_1").text == "put down plate"


# --- generic manifest ---------------------------------------------------------------------------

def test_manifest_jsonl_captions_may_precede_their_clip(tmp_path):
    path = write(tmp_path, "m.jsonl", "\n".join(json.dumps(o) for o in [
        {"kind": "caption", "id": "q1", "text": "a dog runs", "clip": "c2"},
        {"kind": "clip", "id": "c1", "url": "https://x/c1.mp4", "start": 1.5, "end": 4},
        {"kind": "clip", "id": "c2", "path": "local/c2.webm"},
        {"kind": "caption", "id": "q2", "text": "a cat sleeps", "clip": "c1"},
    ]))
    dataset = dataset_import(path=path, name="m")
    assert Caption.objects.get(external_id="q1").original_clip.external_id == "c2"
    assert Clip.objects.get(external_id="c1").start == 1.5
    assert Clip.objects.get(external_id="c2").media == "local/c2.webm"
    assert dataset.captions.count() == 2


def test_manifest_csv(tmp_path):
    path = write(tmp_path, "m.csv", "kind,id,url,start,end,text,clip\nclip,c1,https://x/1.mp4,,,,\n"
                                    "clip,c2,https://x/2.mp4,0,3.5,,\ncaption,q1,,,,\"a man, cooking\",c1\n")
    dataset = dataset_import(path=path, name="m")
    assert dataset.clips.count() == 2
    assert Caption.objects.get(external_id="q1").text == "a man, cooking"
    assert Clip.objects.get(external_id="c2").end == 3.5


# --- bad input: the message names line and field, nothing is written ----------------------------

@pytest.mark.parametrize("content, line, field, words", [
    ('{"kind": "clip", "id": "c1"}\n{"kind": "clip", "id": "c1"}\n', 2, "id", "already defined on line 1"),
    ('{"kind": "clip", "id": "c1", "start": 5, "end": 5}\n', 1, "end", "zero-length or inverted"),
    ('{"kind": "clip", "id": "c1", "start": 6, "end": 5}\n', 1, "end", "not after start"),
    ('{"kind": "clip", "id": "c1", "start": -1, "end": 5}\n', 1, "start", "negative"),
    ('{"kind": "clip", "id": "c1", "start": 1}\n', 1, "end", "both start and end"),
    ('{"kind": "clip", "id": "c1", "start": "soon", "end": 5}\n', 1, "start", "not a number"),
    ('{"kind": "clip", "id": "c1", "start": NaN, "end": 5}\n', 1, "start", "not a finite number"),
    ('{"kind": "clip", "id": "c1"}\n{"kind": "caption", "id": "q1", "text": "x", "clip": "nope"}\n', 2, "clip", "unknown clip 'nope'"),
    ('{"kind": "clip", "id": "c1"}\n{"kind": "caption", "id": "q1", "text": "", "clip": "c1"}\n', 2, "text", "empty caption"),
    ('{"kind": "clip", "id": "c1"}\n{"kind": "video", "id": "c2"}\n', 2, "kind", "not 'clip' or 'caption'"),
    ('{"kind": "clip", "id": "c1"}\n{"kind": "clip", "id": \n', 2, None, "malformed JSON"),
    ('{"kind": "clip", "id": "c1"}\n[1, 2]\n', 2, None, "expected a JSON object"),
])
def test_manifest_errors(tmp_path, content, line, field, words):
    path = write(tmp_path, "bad.jsonl", content)
    with pytest.raises(ImportRejected) as caught:
        dataset_import(path=path, name="bad")
    issue = caught.value.issues[0]
    assert (issue.file, issue.line, issue.field) == ("bad.jsonl", line, field)
    assert words in issue.message
    assert f"bad.jsonl, line {line}" in str(issue)
    assert_nothing_written()


def test_undecodable_bytes_name_the_line(tmp_path):
    path = write(tmp_path, "bad.jsonl", b'{"kind": "clip", "id": "c1"}\n{"kind": "clip", "id": "c\xff2"}\n')
    with pytest.raises(ImportRejected) as caught:
        dataset_import(path=path, name="bad")
    assert caught.value.issues[0].line == 2 and "UTF-8" in caught.value.issues[0].message
    assert_nothing_written()


def test_empty_file_is_refused(tmp_path):
    with pytest.raises(ImportRejected) as caught:
        dataset_import(path=write(tmp_path, "empty.jsonl", "\n\n"), name="e")
    assert "empty" in caught.value.issues[0].message
    assert_nothing_written()


def test_errors_are_collected_up_to_the_cap(tmp_path, settings):
    settings.REJUDGE = settings.REJUDGE | {"IMPORT_ERROR_CAP": 5}
    rows = [json.dumps({"kind": "clip", "id": f"c{i}", "start": 3, "end": 1}) for i in range(20)]
    with pytest.raises(ImportRejected) as caught:
        dataset_import(path=write(tmp_path, "many.jsonl", "\n".join(rows)), name="m")
    assert [i.line for i in caught.value.issues] == [1, 2, 3, 4, 5]
    assert caught.value.truncated
    assert_nothing_written()


def test_late_error_rolls_back_rows_already_inserted(tmp_path, settings):
    # Small batches so that rows are inserted before the bad line is read.
    settings.REJUDGE = settings.REJUDGE | {"IMPORT_BATCH_SIZE": 2}
    rows = [json.dumps({"kind": "clip", "id": f"c{i}"}) for i in range(10)]
    rows.append(json.dumps({"kind": "caption", "id": "q", "text": "t", "clip": "missing"}))
    with pytest.raises(ImportRejected):
        dataset_import(path=write(tmp_path, "late.jsonl", "\n".join(rows)), name="late")
    assert_nothing_written()


def test_existing_name_is_refused(tmp_path):
    path = write(tmp_path, "m.jsonl", '{"kind": "clip", "id": "c1"}\n')
    dataset_import(path=path, name="same")
    with pytest.raises(ImportRejected) as caught:
        dataset_import(path=path, name="same")
    assert "already exists" in caught.value.issues[0].message
    assert Dataset.objects.count() == 1


def test_malformed_benchmark_rows(tmp_path):
    path = write(tmp_path, "bad.csv", "key,vid_key,video_id,sentence\nret0,msr1,video1,a dog\nret1,msr2,video2\n")
    with pytest.raises(ImportRejected) as caught:
        dataset_import(path=path, name="x", fmt="msrvtt-csv")
    assert caught.value.issues[0].line == 3 and "expected 4 fields" in caught.value.issues[0].message
    path = write(tmp_path, "bad.tsv", "a dog, a cat, \tvid1\nno tab here\n")
    with pytest.raises(ImportRejected) as caught:
        dataset_import(path=path, name="y", fmt="msvd-tsv")
    assert caught.value.issues[0].line == 2
    path = write(tmp_path, "bad_epic.csv", "narration_id,video_id,start_timestamp,stop_timestamp,narration\n"
                                           "P1_0,P1,00:00:01.00,00:00:0x.00,take plate\n")
    with pytest.raises(ImportRejected) as caught:
        dataset_import(path=path, name="z", fmt="epic100-csv")
    assert (caught.value.issues[0].line, caught.value.issues[0].field) == (2, "end")
    assert_nothing_written()


def test_media_template_placeholders_are_checked(tmp_path):
    with pytest.raises(ImportRejected) as caught:
        dataset_import(path=write(tmp_path, "m.jsonl", '{"kind": "clip", "id": "c1"}'), name="m", media_template="/v/{vid}.mp4")
    assert "placeholder" in caught.value.issues[0].message
