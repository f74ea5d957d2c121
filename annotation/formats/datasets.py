"""Readers of dataset files: a generic manifest and the files the benchmarks ship.

Every reader yields `ClipRecord` and `CaptionRecord` objects in file order and reports problems
to an IssueCollector (file, line, field) instead of raising, so one import reports them all.
Clips are yielded before the captions that refer to them wherever the format allows; the
service resolves references after the whole file has been read.
"""
from __future__ import annotations

import csv
import json
import math
import string
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from annotation.analysis.storable_text import media_problem

from .errors import IssueCollector
from .fields import MAX_ID_LENGTH, check_text, csv_header, csv_records, is_scalar, json_object_lines, load_json, shown
from .text_lines import LineSource, NumberedLines


@dataclass(frozen=True)
class ClipRecord:
    line: int | None
    external_id: str
    video_id: str
    media: str = ""
    start: float | None = None
    end: float | None = None
    duration: float | None = None


@dataclass(frozen=True)
class CaptionRecord:
    line: int | None
    external_id: str
    text: str
    clip_external_id: str | None


Record = ClipRecord | CaptionRecord

DATASET_FORMATS = ("manifest-jsonl", "manifest-csv", "msrvtt-csv", "msvd-tsv", "youcook2-json", "epic100-csv")


class MediaTemplate:
    """Maps a clip to its file or URL, e.g. 'https://host/msrvtt/{video_id}.mp4'.

    Placeholders: {video_id}, {clip_id}, nothing else: no attribute or index access
    ({video_id.__class__}), no conversion or format spec, no positional fields. The template must
    give an http(s) URL or a path under MEDIA_ROOT. An empty template leaves media empty (set it
    later). Raises ValueError saying what is wrong.
    """

    FIELDS = ("video_id", "clip_id")

    def __init__(self, template: str | None) -> None:
        self.template = template or ""
        self._parts: list[tuple[str, str | None]] = []
        try:
            parsed = list(string.Formatter().parse(self.template))
        except ValueError as exc:
            raise ValueError(f"media template is malformed ({exc}); write placeholders as {{video_id}} or {{clip_id}}, "
                             f"and a literal brace as {{{{ or }}}}") from exc
        for literal, name, spec, conversion in parsed:
            if name is not None and (name not in self.FIELDS or spec or conversion):
                shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
                raise ValueError(f"media template placeholder {shown} is not allowed; use {{video_id}} or {{clip_id}}")
            self._parts.append((literal, name))
        if self.template:
            problem = media_problem(self(video_id="v", clip_id="c"))
            if problem:
                raise ValueError(f"media template {problem}")

    def __call__(self, *, video_id: str, clip_id: str) -> str:
        # Joined by hand, not str.format: the placeholders were checked once and nothing else runs.
        values = {"video_id": video_id, "clip_id": clip_id}
        return "".join(literal + (values[name] if name else "") for literal, name in self._parts)


def parse_seconds(value: str) -> float:
    """'HH:MM:SS.ff' (EPIC-KITCHENS) or plain seconds."""
    value = value.strip()
    if ":" in value:
        parts = value.split(":")
        if len(parts) != 3:
            raise ValueError(f"'{value}' is not HH:MM:SS.ff")
        hours, minutes, seconds = int(parts[0]), int(parts[1]), float(parts[2])
        if not (0 <= minutes < 60 and 0 <= seconds < 60):
            raise ValueError(f"'{value}' is not a valid time")
        return hours * 3600 + minutes * 60 + seconds
    return float(value)


def _optional_float(raw, issues: IssueCollector, line: int | None, field: str) -> tuple[bool, float | None]:
    if raw is None or (isinstance(raw, str) and raw.strip() == ""):
        return True, None
    try:
        value = float(raw) if not isinstance(raw, str) else parse_seconds(raw)
    except (TypeError, ValueError):
        issues.add(line, field, f"{shown(str(raw))} is not a number")
        return False, None
    if not math.isfinite(value):
        issues.add(line, field, f"{raw} is not a finite number")
        return False, None
    return True, value


def make_clip(issues: IssueCollector, line: int | None, *, clip_id, video_id=None, media="", start=None, end=None,
              duration=None, media_template: MediaTemplate, id_field: str = "id", video_field: str = "video_id",
              media_field: str = "url") -> ClipRecord | None:
    """A clip from one record's values, or None after reporting what is wrong with them. `media`
    given in the record (from `media_field`) wins over the template."""
    clip_id = "" if clip_id is None else str(clip_id).strip()
    if not clip_id:
        issues.add(line, id_field, "missing clip id")
        return None
    if not check_text(issues, line, id_field, clip_id, what="the clip id", max_length=MAX_ID_LENGTH):
        return None
    ok_s, start_v = _optional_float(start, issues, line, "start")
    ok_e, end_v = _optional_float(end, issues, line, "end")
    ok_d, duration_v = _optional_float(duration, issues, line, "duration")
    if not (ok_s and ok_e and ok_d):
        return None
    if (start_v is None) != (end_v is None):
        issues.add(line, "end" if end_v is None else "start", "a span needs both start and end")
        return None
    if start_v is not None:
        if start_v < 0:
            issues.add(line, "start", f"start {start_v:g} is negative")
            return None
        if end_v <= start_v:
            issues.add(line, "end", f"end {end_v:g} is not after start {start_v:g} (zero-length or inverted span)")
            return None
    if duration_v is not None and duration_v <= 0:
        issues.add(line, "duration", f"duration {duration_v:g} is not positive")
        return None
    own_video = video_id not in (None, "")
    video = str(video_id).strip() if own_video else clip_id
    if own_video and not check_text(issues, line, video_field, video, what="the video id", max_length=MAX_ID_LENGTH):
        return None
    given = str(media or "").strip()
    if given:
        problem = media_problem(given)
        if problem:
            issues.add(line, media_field, f"{shown(given)} {problem}")
            return None
        return ClipRecord(line, clip_id, video, given, start_v, end_v, duration_v)
    made = media_template(video_id=video, clip_id=clip_id)
    problem = media_problem(made)
    if problem:
        # The template itself was checked, so an id filled into it is at fault, e.g. '../x'.
        at_fault = video_field if own_video and media_problem(media_template(video_id=video, clip_id="c")) else id_field
        issues.add(line, at_fault, f"the media template makes it {shown(made)}, which {problem}")
        return None
    return ClipRecord(line, clip_id, video, made, start_v, end_v, duration_v)


def make_caption(issues: IssueCollector, line: int | None, *, caption_id, text, clip_id,
                 id_field: str = "id", text_field: str = "text") -> CaptionRecord | None:
    caption_id = "" if caption_id is None else str(caption_id).strip()
    text = "" if text is None else str(text).strip()
    if not caption_id:
        issues.add(line, id_field, "missing caption id")
        return None
    if not check_text(issues, line, id_field, caption_id, what="the caption id", max_length=MAX_ID_LENGTH):
        return None
    if not text:
        issues.add(line, text_field, "empty caption text")
        return None
    if not check_text(issues, line, text_field, text, what="the caption text"):
        return None
    clip = None if clip_id in (None, "") else str(clip_id).strip()
    return CaptionRecord(line, caption_id, text, clip)


# --- generic manifest -----------------------------------------------------------------------

def read_manifest_jsonl(source: LineSource, issues: IssueCollector, media_template: MediaTemplate) -> Iterator[Record]:
    """One JSON object a line: {"kind": "clip", "id", "url"|"path", "video_id", "start", "end",
    "duration"} or {"kind": "caption", "id", "text", "clip"}."""
    for line, obj in json_object_lines(source, issues):
        nested = [key for key in MANIFEST_CSV_COLUMNS if not is_scalar(obj.get(key))]
        if nested:
            issues.add(line, nested[0], "expected a string or a number, not a list or an object")
            continue
        yield from _manifest_record(obj, line, issues, media_template)


MANIFEST_CSV_COLUMNS = ("kind", "id", "video_id", "url", "path", "start", "end", "duration", "text", "clip")


def read_manifest_csv(source: LineSource, issues: IssueCollector, media_template: MediaTemplate) -> Iterator[Record]:
    """CSV with a header; columns kind,id and, as needed, video_id,url,path,start,end,duration,text,clip."""
    lines = NumberedLines(source)
    reader = csv.reader(line for _, line in lines)
    header = csv_header(reader, lines, issues)
    if header is None:
        return
    header = [h.strip().lower() for h in header]
    missing = {"kind", "id"} - set(header)
    if missing:
        issues.add(lines.current, None, f"header lacks column(s) {sorted(missing)}; expected {', '.join(MANIFEST_CSV_COLUMNS)}")
        return
    for row in csv_records(reader, lines, issues, header):
        line = lines.current
        if len(row) != len(header):
            issues.add(line, None, f"expected {len(header)} fields, found {len(row)}")
            continue
        yield from _manifest_record(dict(zip(header, row)), line, issues, media_template)


def _manifest_record(obj: dict, line: int, issues: IssueCollector, media_template: MediaTemplate) -> Iterator[Record]:
    kind = str(obj.get("kind", "")).strip().lower()
    if kind == "clip":
        record = make_clip(issues, line, clip_id=obj.get("id"), video_id=obj.get("video_id"),
                           media=obj.get("url") or obj.get("path") or "", start=obj.get("start"), end=obj.get("end"),
                           duration=obj.get("duration"), media_template=media_template,
                           media_field="url" if obj.get("url") else "path")
    elif kind == "caption":
        record = make_caption(issues, line, caption_id=obj.get("id"), text=obj.get("text"), clip_id=obj.get("clip"))
    else:
        issues.add(line, "kind", f"{shown(str(obj.get('kind', '')))} is not 'clip' or 'caption'")
        return
    if record:
        yield record


# --- benchmark files ------------------------------------------------------------------------

def read_msrvtt_csv(source: LineSource, issues: IssueCollector, media_template: MediaTemplate) -> Iterator[Record]:
    """MSR-VTT 1K-A: header key,vid_key,video_id,sentence; one caption per video."""
    lines = NumberedLines(source)
    reader = csv.reader(line for _, line in lines)
    header = csv_header(reader, lines, issues)
    if header is None:
        return
    header = [h.strip() for h in header]
    required = ["key", "video_id", "sentence"]
    if any(c not in header for c in required):
        issues.add(lines.current, None, f"header must contain {', '.join(required)}; found {', '.join(header)}")
        return
    index = {name: header.index(name) for name in required}
    seen_videos: set[str] = set()
    for row in csv_records(reader, lines, issues, header):
        line = lines.current
        if len(row) != len(header):
            issues.add(line, None, f"expected {len(header)} fields, found {len(row)}")
            continue
        video_id = row[index["video_id"]].strip()
        if video_id not in seen_videos:
            clip = make_clip(issues, line, clip_id=video_id, media_template=media_template, id_field="video_id")
            if clip is None:
                continue
            seen_videos.add(video_id)
            yield clip
        caption = make_caption(issues, line, caption_id=row[index["key"]], text=row[index["sentence"]], clip_id=video_id,
                               id_field="key", text_field="sentence")
        if caption:
            yield caption


def read_msvd_tsv(source: LineSource, issues: IssueCollector, media_template: MediaTemplate) -> Iterator[Record]:
    """MSVD test: captions joined by ', ' (with a trailing ', '), a tab, the video id.

    Caption ids are '<video_id>#<n>' with n counting that video's captions from 0.
    """
    for line, text in source:
        if "\t" not in text:
            issues.add(line, None, "expected '<captions>\\t<video_id>' (no tab found)")
            continue
        captions_part, video_id = text.rsplit("\t", 1)
        clip = make_clip(issues, line, clip_id=video_id, media_template=media_template, id_field="video_id")
        if clip is None:
            continue
        captions = [c.strip() for c in captions_part.split(", ") if c.strip()]
        if not captions:
            issues.add(line, "captions", "no captions before the tab")
            continue
        yield clip
        for n, caption in enumerate(captions):
            yield CaptionRecord(line, f"{clip.external_id}#{n}", caption, clip.external_id)


def read_youcook2_json(source: LineSource, issues: IssueCollector, media_template: MediaTemplate) -> Iterator[Record]:
    """Official YouCook2 annotation JSON: each segment becomes a clip with a span and its caption.

    Clip and caption ids are '<youtube_id>_<segment id>'. The file is one JSON document, so it
    is parsed whole (the official validation file is 0.6 MB).
    """
    text = "\n".join(t for _, t in source)
    if not text:
        return
    try:
        document = load_json(text)
    except json.JSONDecodeError as exc:
        issues.add(exc.lineno, None, f"malformed JSON: {exc.msg} at column {exc.colno}")
        return
    database = document.get("database") if isinstance(document, dict) else None
    if not isinstance(database, dict):
        issues.add(None, "database", "expected a top-level object with a 'database' object")
        return
    for video_id, entry in database.items():
        where = f"database.{video_id}"
        if not isinstance(entry, dict) or not isinstance(entry.get("annotations"), list):
            issues.add(None, f"{where}.annotations", "missing list of annotations")
            continue
        for position, annotation in enumerate(entry["annotations"]):
            field = f"{where}.annotations[{position}]"
            try:
                start, end = annotation["segment"]
                segment_id, sentence = annotation["id"], annotation["sentence"]
            except (KeyError, TypeError, ValueError):
                issues.add(None, field, "expected {segment: [start, end], id, sentence}")
                continue
            if not all(is_scalar(v) for v in (start, end, segment_id, sentence, entry.get("duration"))):
                issues.add(None, field, "expected {segment: [start, end], id, sentence} holding strings and numbers")
                continue
            clip_id = f"{video_id}_{segment_id}"
            clip = make_clip(issues, None, clip_id=clip_id, video_id=video_id, start=start, end=end,
                             duration=entry.get("duration"), media_template=media_template, id_field=f"{field}.id")
            caption = make_caption(issues, None, caption_id=clip_id, text=sentence, clip_id=clip_id,
                                   text_field=f"{field}.sentence")
            if clip and caption:
                yield clip
                yield caption


def read_epic100_csv(source: LineSource, issues: IssueCollector, media_template: MediaTemplate) -> Iterator[Record]:
    """EPIC-KITCHENS-100 retrieval CSV: narration_id, video_id, start/stop_timestamp (HH:MM:SS.ff), narration."""
    lines = NumberedLines(source)
    reader = csv.reader(line for _, line in lines)
    required = {"narration_id", "video_id", "start_timestamp", "stop_timestamp", "narration"}
    header = csv_header(reader, lines, issues)
    if header is None:
        return
    missing = required - set(header)
    if missing:
        issues.add(1, None, f"header lacks column(s) {sorted(missing)}")
        return
    for values in csv_records(reader, lines, issues, header):
        line = lines.current
        if len(values) != len(header):
            issues.add(line, None, f"expected {len(header)} fields")
            continue
        row = dict(zip(header, values))
        clip = make_clip(issues, line, clip_id=row["narration_id"], video_id=row["video_id"], start=row["start_timestamp"],
                         end=row["stop_timestamp"], media_template=media_template, id_field="narration_id")
        caption = make_caption(issues, line, caption_id=row["narration_id"], text=row["narration"],
                               clip_id=row["narration_id"], id_field="narration_id", text_field="narration")
        if clip and caption:
            yield clip
            yield caption


READERS = {
    "manifest-jsonl": read_manifest_jsonl,
    "manifest-csv": read_manifest_csv,
    "msrvtt-csv": read_msrvtt_csv,
    "msvd-tsv": read_msvd_tsv,
    "youcook2-json": read_youcook2_json,
    "epic100-csv": read_epic100_csv,
}


def guess_dataset_format(path: Path) -> str:
    name = Path(path).name.lower()
    if name.endswith(".jsonl"):
        return "manifest-jsonl"
    if name.endswith(".tsv"):
        return "msvd-tsv"
    if name.endswith(".json"):
        return "youcook2-json"
    if name.endswith(".csv"):
        with Path(path).open("rb") as handle:
            header = handle.readline().decode("utf-8", "replace").lstrip("\ufeff").strip().lower()
        if header.startswith("narration_id"):
            return "epic100-csv"
        if "sentence" in header and "video_id" in header:
            return "msrvtt-csv"
        return "manifest-csv"
    raise ValueError(f"cannot tell the format of '{Path(path).name}'; pass one of: {', '.join(DATASET_FORMATS)}")
