"""Imports refuse what the database cannot hold, naming file, line and field (issue 12, finding 4):
a CSV field over the csv module's limit, NUL characters, ids over 200 characters, media that points
outside MEDIA_ROOT or to another scheme, and media templates with anything but their two fields.

Before, each of these failed on the database or in the csv module, with no line or field."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotation.formats.datasets import MediaTemplate
from annotation.formats.errors import FileIssue, ImportRejected
from annotation.analysis.storable_text import media_problem
from annotation.formats.fields import split_csv_line
from annotation.models import Caption, Clip, Dataset, Run
from annotation.services.datasets.imports import dataset_import
from annotation.services.datasets.runs import run_import
from tests.factories import make_dataset

pytestmark = pytest.mark.django_db

BIG = "x" * (128 * 1024 + 10)
LONG_ID = "c" * 201


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def refusal(**kwargs) -> list[tuple[str, int | None, str | None]]:
    with pytest.raises(ImportRejected) as caught:
        dataset_import(**kwargs)
    assert not Dataset.objects.exists() and not Clip.objects.exists() and not Caption.objects.exists()
    return [(i.file, i.line, i.field) for i in caught.value.issues]


def jsonl(*records: dict) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


CLIP = {"kind": "clip", "id": "c1"}
CAPTION = {"kind": "caption", "id": "q1", "text": "a dog", "clip": "c1"}


# --- what the database cannot hold -------------------------------------------------------------

@pytest.mark.parametrize(("name", "content", "where"), [
    # a field over the csv module's 131072-character limit, in each CSV reader
    ("m.csv", f"kind,id,text,clip\nclip,c1,,\ncaption,q1,{BIG},c1\n", ("m.csv", 3, "text")),
    ("m.csv", f'kind,id,text,clip\nclip,c1,,\ncaption,q1,"{BIG}",c1\n', ("m.csv", 3, "text")),
    ("msrvtt.csv", f"key,vid_key,video_id,sentence\nret0,v1,video1,{BIG}\n", ("msrvtt.csv", 2, "sentence")),
    ("epic.csv", "narration_id,participant_id,video_id,narration_timestamp,start_timestamp,stop_timestamp,"
                 f"start_frame,stop_frame,narration\nP01_1,P01,P01_01,0,00:00:01.00,00:00:02.00,1,2,{BIG}\n",
     ("epic.csv", 2, "narration")),
    # NUL characters in text and in ids
    ("m.jsonl", jsonl(CLIP, CAPTION | {"text": "a\x00dog"}), ("m.jsonl", 2, "text")),
    ("m.jsonl", jsonl(CLIP | {"id": "c\x001"}), ("m.jsonl", 1, "id")),
    ("m.csv", "kind,id,text,clip\nclip,c1,,\ncaption,q1,a\x00dog,c1\n", ("m.csv", 3, "text")),
    ("m.tsv", "a dog, \tvid\x00eo1\n", ("m.tsv", 1, "video_id")),
    # a JSON escape for half a surrogate pair: not text any database can store
    ("m.jsonl", '{"kind": "clip", "id": "c1"}\n{"kind": "caption", "id": "q1", "text": "a\\ud800", "clip": "c1"}\n',
     ("m.jsonl", 2, "text")),
    ("m.jsonl", '{"kind": "clip", "id": "c\\udfff"}\n', ("m.jsonl", 1, "id")),
    # ids over the 200 characters their columns hold
    ("m.jsonl", jsonl(CLIP | {"id": LONG_ID}), ("m.jsonl", 1, "id")),
    ("m.jsonl", jsonl(CLIP | {"video_id": "v" * 201}), ("m.jsonl", 1, "video_id")),
    ("m.jsonl", jsonl(CLIP, CAPTION | {"id": "q" * 201}), ("m.jsonl", 2, "id")),
    ("msrvtt.csv", f"key,vid_key,video_id,sentence\nret0,v1,{LONG_ID},a dog\n", ("msrvtt.csv", 2, "video_id")),
    ("m.jsonl", jsonl(CLIP | {"url": "https://cdn.example/" + "x" * 1000}), ("m.jsonl", 1, "url")),
    # values a JSON record may not nest
    ("m.jsonl", jsonl(CLIP | {"id": ["c1"]}), ("m.jsonl", 1, "id")),
    ("m.jsonl", '{"kind": "clip", "id": ' + "[" * 5000 + "]" * 5000 + "}\n", ("m.jsonl", 1, None)),
])
def test_dataset_values_the_database_cannot_hold_are_refused_with_line_and_field(tmp_path, name, content, where):
    path = write(tmp_path, name, content)
    assert refusal(path=path, name="d") == [where]


def test_the_longest_id_that_fits_is_accepted(tmp_path):
    path = write(tmp_path, "m.jsonl", jsonl(CLIP | {"id": "c" * 200}, CAPTION | {"id": "q" * 200, "clip": "c" * 200}))
    dataset = dataset_import(path=path, name="d")
    assert Clip.objects.get(dataset=dataset).external_id == "c" * 200
    assert Caption.objects.get(dataset=dataset).original_clip.external_id == "c" * 200


def test_a_csv_error_does_not_stop_the_other_lines_being_checked(tmp_path):
    content = f"kind,id,text,clip\ncaption,q1,{BIG},c1\nclip,{LONG_ID},,\nclip,c2,,\n"
    assert refusal(path=write(tmp_path, "m.csv", content), name="d") == [("m.csv", 2, "text"), ("m.csv", 3, "id")]


def test_a_dataset_name_over_200_characters_is_refused_naming_the_field(tmp_path):
    path = write(tmp_path, "m.jsonl", jsonl(CLIP))
    assert refusal(path=path, name="n" * 201) == [("m.jsonl", None, "name")]


# --- media: MEDIA_ROOT or http(s) only ---------------------------------------------------------

@pytest.mark.parametrize("media", ["../secret.mp4", "a/../../b.mp4", "/etc/passwd", "//evil.example/x.mp4",
                                   "javascript:alert(1)", "JavaScript:alert(1)", "data:video/mp4;base64,AAAA",
                                   "file:///etc/passwd", "ftp://host/x.mp4", "https:///nohost.mp4", "a\\..\\b.mp4"])
def test_clip_media_outside_media_root_or_not_http_is_refused(tmp_path, media):
    for key in ("url", "path"):
        path = write(tmp_path, "m.jsonl", jsonl(CLIP | {key: media}))
        assert refusal(path=path, name="d") == [("m.jsonl", 1, key)]


def test_clip_media_in_a_manifest_csv_names_its_column(tmp_path):
    content = "kind,id,path\nclip,c1,ok/x.mp4\nclip,c2,../x.mp4\n"
    assert refusal(path=write(tmp_path, "m.csv", content), name="d") == [("m.csv", 3, "path")]


@pytest.mark.parametrize("media", ["msrvtt/video1.mp4", "video1.mp4", "a/b..c/d.mp4", "https://cdn.example/x.mp4",
                                   "http://127.0.0.1:8000/media/x.mp4", "HTTPS://cdn.example/x.mp4"])
def test_media_under_media_root_or_http_is_accepted(tmp_path, media):
    dataset = dataset_import(path=write(tmp_path, "m.jsonl", jsonl(CLIP | {"path": media})), name="d")
    assert Clip.objects.get(dataset=dataset).media == media


def test_an_id_that_escapes_media_root_through_the_template_names_the_id_field(tmp_path):
    content = jsonl(CLIP | {"video_id": "../../etc/passwd"}, CLIP | {"id": "c2", "video_id": "fine"})
    path = write(tmp_path, "m.jsonl", content)
    assert refusal(path=path, name="d", media_template="videos/{video_id}.mp4") == [("m.jsonl", 1, "video_id")]
    msrvtt = write(tmp_path, "msrvtt.csv", "key,vid_key,video_id,sentence\nret0,v1,../x,a dog\n")
    assert refusal(path=msrvtt, name="d", media_template="{video_id}.mp4") == [("msrvtt.csv", 2, "video_id")]


@pytest.mark.parametrize("template", ["{video_id.__class__}", "{video_id.__class__.__init__.__globals__}",
                                      "{video_id[0]}", "{0}", "{}", "{name}", "{video_id!r}", "{video_id:>300}",
                                      "{video_id", "x}", "../{video_id}.mp4", "/abs/{video_id}.mp4",
                                      "//evil.example/{video_id}.mp4", "javascript:{video_id}", "ftp://h/{video_id}"])
def test_a_bad_media_template_is_refused_naming_the_field(tmp_path, template):
    with pytest.raises(ValueError):
        MediaTemplate(template)
    path = write(tmp_path, "m.jsonl", jsonl(CLIP))
    assert refusal(path=path, name="d", media_template=template) == [("m.jsonl", None, "media_template")]


def test_media_template_fills_only_its_two_fields():
    template = MediaTemplate("https://cdn.example/{video_id}/{clip_id}.mp4?a={{b}}")
    filled = template(video_id="v{clip_id}", clip_id="c.__class__")
    assert filled == "https://cdn.example/v{clip_id}/c.__class__.mp4?a={b}"
    assert MediaTemplate("")(video_id="v", clip_id="c") == ""


# --- runs ---------------------------------------------------------------------------------------

def test_run_files_with_oversized_fields_nul_or_nesting_name_line_and_field(tmp_path):
    dataset = make_dataset(clips=3, captions=2)
    cases = [
        ("run.csv", f"caption_id,clip_id,rank,score\nq1,v1,1,0.9\nq1,{BIG},2,0.8\n", ("run.csv", 3, "clip_id")),
        ("run.trec", f"q1 Q0 v1 1 0.9 {'t' * 201}\n", ("run.trec", 1, "run_tag")),
        ("run.trec", "q1 Q0 v1 1 0.9 t\x00g\n", ("run.trec", 1, "run_tag")),
        ("run.jsonl", '{"caption_id": "q1", "clip_id": ["v1"], "rank": 1, "score": 1}\n', ("run.jsonl", 1, "clip_id")),
        ("run.jsonl", "[" * 5000 + "]" * 5000 + "\n", ("run.jsonl", 1, None)),
        ("run.json", '{"q1": [{"clip_id": "v1", "score": {"a": 1}}]}', ("run.json", None, "q1[0].score")),
    ]
    for name, content, where in cases:
        with pytest.raises(ImportRejected) as caught:
            run_import(dataset=dataset, path=write(tmp_path, name, content))
        assert [(i.file, i.line, i.field) for i in caught.value.issues] == [where], name
    assert not Run.objects.exists()


def test_a_run_id_with_nul_or_a_surrogate_is_unknown_and_the_refusal_can_be_stored(tmp_path):
    """The refusal quotes the id; a NUL or half a surrogate pair in it must not reach the job's JSON
    errors as such (jsonb refuses both)."""
    from annotation.models import Job

    dataset = make_dataset(clips=3, captions=2)
    with pytest.raises(ImportRejected) as caught:
        run_import(dataset=dataset, path=write(tmp_path, "run.trec", "q\x001 Q0 v1 1 0.9 t\n"))
    assert [(i.line, i.field) for i in caught.value.issues] == [(1, "query_id")]
    with pytest.raises(ImportRejected) as surrogate:
        run_import(dataset=dataset, path=write(tmp_path, "run.jsonl", '{"caption_id": "q\\ud800", "clip_id": "v1", '
                                                                        '"rank": 1, "score": 1}\n'))
    job = Job.objects.create(kind="import_run", params={}, errors=caught.value.as_list() + surrogate.value.as_list())
    job.refresh_from_db()
    assert "\\x00" in job.errors[0]["message"] and "\\ud800" in job.errors[1]["message"]


# --- helpers, on hand-worked lines --------------------------------------------------------------

def test_split_csv_line_matches_the_csv_module_on_quoted_fields():
    assert split_csv_line('a,"b,c",d') == ["a", '"b,c"', "d"]
    assert split_csv_line('a,"b""x",') == ["a", '"b""x"', ""]
    assert split_csv_line('a,"open, to the end') == ["a", '"open, to the end']
    assert split_csv_line("") == [""]


def test_media_problem_on_hand_picked_values():
    assert media_problem("") is None
    assert media_problem("x/y.mp4") is None
    assert "'..'" in media_problem("x/../y.mp4")
    assert "http(s)" in media_problem("javascript:alert(1)")
    assert "NUL" in media_problem("a\x00b")


def test_file_issue_escapes_nul_and_surrogates_and_cuts_long_fields():
    issue = FileIssue("f\x00.csv", 1, "k" * 300, "bad \x00 value \ud800 é")
    assert issue.file == "f\\x00.csv" and issue.message == "bad \\x00 value \\ud800 é"
    assert issue.field == "k" * 200 + "..."


@pytest.mark.parametrize(("media", "url"), [
    ("msrvtt/v1.mp4", "/media/msrvtt/v1.mp4"),
    ("/media/msrvtt/v1.mp4", "/media/msrvtt/v1.mp4"),  # the legacy absolute form of the same file
    ("https://cdn.example/v1.mp4", "https://cdn.example/v1.mp4"),
    ("//evil.example/x.mp4", ""),
    ("javascript:alert(1)", ""),
    ("/etc/passwd", ""),
    ("/media/../secret.mp4", ""),
    ("../secret.mp4", ""),
])
def test_playback_url_plays_nothing_that_points_elsewhere(media, url):
    """Media set outside an import (Django's admin) is checked again where the rater's page gets it."""
    assert Clip(media=media).playback_url == url



def test_an_integer_over_pythons_digit_limit_is_a_malformed_line_not_a_crash(tmp_path):
    """json.loads raises a bare ValueError (not JSONDecodeError) past 4,300 digits, which escaped the
    run and manifest readers; every JSON-lines reader now goes through one helper that reports it."""
    dataset = make_dataset(clips=3, captions=2)
    huge = "9" * 5000
    with pytest.raises(ImportRejected) as run_refused:
        run_import(dataset=dataset, path=write(tmp_path, "run.jsonl",
                                               '{"caption_id": "q1", "clip_id": "v1", "rank": 1, "score": 1}\n'
                                               f'{{"caption_id": "q1", "clip_id": "v2", "rank": {huge}, "score": 0}}\n'))
    assert [(i.file, i.line, i.field) for i in run_refused.value.issues] == [("run.jsonl", 2, None)]
    assert "malformed JSON" in run_refused.value.issues[0].message and not Run.objects.exists()
    with pytest.raises(ImportRejected) as manifest_refused:
        dataset_import(path=write(tmp_path, "m.jsonl", f'{{"kind": "clip", "id": "c1", "duration": {huge}}}\n'),
                       name="digits", fmt="manifest-jsonl")
    assert [(i.line, i.field) for i in manifest_refused.value.issues] == [(1, None)]
    assert not Dataset.objects.filter(name="digits").exists()


# --- media paths after percent-decoding (issue 22, finding 9) ---------------------------------------

ENCODED_ESCAPES = [
    "%2e%2e/%2e%2e/api/v1/me/",  # the finding: browsers resolve %2e%2e as '..'
    "%2E%2E/secret.mp4",
    ".%2e/secret.mp4",
    "a/%252e%252e/%252e%252e/api/v1/me/",  # encoded twice: decoded until stable
    "a/..%2fb.mp4",  # an encoded separator making a '..' segment
    "..%5csecret.mp4",  # an encoded backslash: browsers read it as '/'
    "a/%2e%2e%5c%2e%2e%5capi.mp4",
    "%2fetc/passwd",  # absolute once decoded
    "%5c%5cevil.example/x.mp4",
    "a%00b.mp4",
]


@pytest.mark.parametrize("media", ENCODED_ESCAPES)
def test_percent_encoded_escapes_are_media_problems(media):
    assert media_problem(media) is not None
    assert Clip(media=media).playback_url == ""


@pytest.mark.parametrize("media", ["msrvtt/v%201.mp4", "a/b%2Bc.webm", "100%25/x.mp4", "a/..b/c.mp4", "a/b..mp4",
                                   "https://cdn.example/a/%2e%2e/b.mp4"])
def test_harmless_percent_signs_and_dots_pass(media):
    assert media_problem(media) is None


def test_an_encoded_escape_in_a_manifest_names_file_line_and_field(tmp_path):
    content = jsonl(CLIP, CLIP | {"id": "c2", "path": "%2e%2e/%2e%2e/api/v1/me/"})
    assert refusal(path=write(tmp_path, "m.jsonl", content), name="d", fmt="manifest-jsonl") == [("m.jsonl", 2, "path")]
    made = jsonl(CLIP | {"video_id": "%2e%2e"})
    assert refusal(path=write(tmp_path, "m.jsonl", made), name="d", fmt="manifest-jsonl",
                   media_template="x/{video_id}/{video_id}/api.mp4") == [("m.jsonl", 1, "video_id")]


@pytest.mark.parametrize("template", ["%2e%2e/%2e%2e/{video_id}.mp4", "x/..%5c{video_id}.mp4", "%2f{video_id}.mp4"])
def test_an_encoded_escape_in_a_media_template_is_refused(template):
    with pytest.raises(ValueError, match="media template"):
        MediaTemplate(template)
