"""Readers of run files (one model's ranked predictions): TREC run, CSV, JSON Lines and JSON.

TREC run: `query_id Q0 doc_id rank score run_tag [start end]` (query = caption id, doc = clip
id; the optional start/end columns make it a moment run). Each reader yields `RunRow`s with the
line they came from and reports per-line problems (malformed line, non-numeric or non-finite
values, non-positive ranks, bad spans) to an IssueCollector. Cross-line checks (duplicates, score
order, unknown ids) belong to the import service, which sees the whole run.
"""
from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from annotation.analysis.storable_text import text_problem

from .errors import IssueCollector
from .fields import MAX_ID_LENGTH, csv_header, csv_records, is_scalar, json_object_lines, load_json, shown
from .text_lines import LineSource, NumberedLines, whole_text

# npz: a score matrix, read by formats.score_matrix; qvhighlights: Moment-DETR's prediction jsonl;
# tvr: TVRetrieval's submission JSON (its VCMR list).
RUN_FORMATS = ("trec", "csv", "jsonl", "json", "npz", "qvhighlights", "tvr")
#: Formats whose predictions keep the file's order as their ranks, as the official evaluation reads
#: them: a window may repeat and scores need not fall (Moment-DETR's standalone_eval takes R1 from
#: the first window in the file and sorts by score only for mAP; TVRetrieval's ignores scores).
FILE_ORDER_FORMATS = ("qvhighlights", "tvr")
#: Formats read as one JSON document rather than line by line.
WHOLE_FILE_FORMATS = ("tvr",)


class RunRow(NamedTuple):
    line: int | None
    caption_id: str
    clip_id: str
    rank: int
    score: float | None
    start: float | None = None
    end: float | None = None
    tag: str | None = None
    where: str | None = None  # for formats without lines (JSON): the record's path


def _rank(raw, issues: IssueCollector, line, field: str = "rank") -> int | None:
    try:
        value = int(str(raw).strip())
    except (TypeError, ValueError):
        issues.add(line, field, f"{shown(str(raw))} is not a whole number")
        return None
    if value < 1:
        issues.add(line, field, f"rank {value} is not positive (ranks start at 1)")
        return None
    return value


def _number(raw, issues: IssueCollector, line, field: str, *, required: bool) -> tuple[bool, float | None]:
    if raw is None or (isinstance(raw, str) and raw.strip() == ""):
        if required:
            issues.add(line, field, "missing value")
            return False, None
        return True, None
    try:
        value = float(raw)
    except (TypeError, ValueError):
        issues.add(line, field, f"{shown(str(raw))} is not a number")
        return False, None
    if not math.isfinite(value):
        issues.add(line, field, f"{raw} is not a finite number (NaN and infinity are refused)")
        return False, None
    return True, value


def make_row(issues: IssueCollector, line, *, caption_id, clip_id, rank, score, start=None, end=None, tag=None,
             fields=("query_id", "doc_id", "rank", "score"), where=None, score_required: bool = True) -> RunRow | None:
    caption_id = "" if caption_id is None else str(caption_id).strip()
    clip_id = "" if clip_id is None else str(clip_id).strip()
    if not caption_id:
        issues.add(line, fields[0], "missing caption id")
        return None
    if not clip_id:
        issues.add(line, fields[1], "missing clip id")
        return None
    rank_v = _rank(rank, issues, line, fields[2])
    ok_score, score_v = _number(score, issues, line, fields[3], required=score_required)
    ok_start, start_v = _number(start, issues, line, "start", required=False)
    ok_end, end_v = _number(end, issues, line, "end", required=False)
    if rank_v is None or not (ok_score and ok_start and ok_end):
        return None
    if (start_v is None) != (end_v is None):
        issues.add(line, "end" if end_v is None else "start", "a moment needs both start and end")
        return None
    if start_v is not None:
        if start_v < 0:
            issues.add(line, "start", f"start {start_v:g} is negative")
            return None
        if end_v <= start_v:
            issues.add(line, "end", f"end {end_v:g} is not after start {start_v:g} (zero-length or inverted span)")
            return None
    return RunRow(line, caption_id, clip_id, rank_v, score_v, start_v, end_v, tag, where)


def read_trec(source: LineSource, issues: IssueCollector) -> Iterator[RunRow]:
    isfinite = math.isfinite
    checked_tag = None
    for line, text in source:
        parts = text.split()
        if len(parts) in (6, 8) and parts[5] != checked_tag:
            # The tag may name the run (Run.name, 200 characters); checked once per distinct tag.
            problem = text_problem(parts[5], max_length=MAX_ID_LENGTH)
            if problem:
                issues.add(line, "run_tag", f"the run tag {problem}")
                continue
            checked_tag = parts[5]
        if len(parts) == 6:
            # Fast path for the common, well-formed line; anything unusual goes through make_row,
            # which names the field at fault.
            try:
                rank, score = int(parts[3]), float(parts[4])
            except ValueError:
                rank, score = 0, math.nan
            if rank >= 1 and isfinite(score):
                yield RunRow(line, parts[0], parts[2], rank, score, None, None, parts[5], None)
                continue
        if len(parts) not in (6, 8):
            issues.add(line, None, f"expected 6 fields 'query_id Q0 doc_id rank score run_tag' "
                                   f"(or 8 with 'start end'), found {len(parts)}")
            continue
        row = make_row(issues, line, caption_id=parts[0], clip_id=parts[2], rank=parts[3], score=parts[4], tag=parts[5],
                       start=parts[6] if len(parts) == 8 else None, end=parts[7] if len(parts) == 8 else None)
        if row:
            yield row


def trec_scores(path) -> tuple[str, dict[str, dict[str, float]]] | None:
    """(first run tag, `{query: {doc: score}}`) of a well-formed 6-column TREC run in one pass, for
    scoring (about 4x faster than read_trec on 100,000 lines). None when any line is not, or a doc is
    listed twice for a query: the caller then reads with read_trec, which names every problem."""
    text = whole_text(path)
    if text is None:
        return None
    lines = text.split("\n")
    blank = 0
    scores: dict[str, dict[str, float]] = {}
    query = docs = first_tag = checked_tag = None
    try:
        for fields in map(str.split, lines):
            if not fields:
                blank += 1
                continue
            q, _, doc, rank, score, tag = fields  # ValueError unless 6 fields
            if q != query:  # a run lists a query's lines together, as a rule
                query = q
                docs = scores.get(q)
                if docs is None:
                    docs = scores[q] = {}
            if tag != checked_tag:
                if text_problem(tag, max_length=MAX_ID_LENGTH):
                    return None
                checked_tag = tag
                first_tag = first_tag or tag
            if int(rank) < 1:
                return None
            docs[doc] = float(score)
    except ValueError:
        return None
    # Checked once over the whole file rather than line by line: a doc listed twice leaves fewer
    # docs than lines.
    isfinite = math.isfinite
    if (not scores or sum(map(len, scores.values())) != len(lines) - blank
            or not all(all(map(isfinite, docs.values())) for docs in scores.values())):
        return None
    return first_tag or "", scores


CSV_ALIASES = {
    "caption_id": ("caption_id", "query_id", "query", "qid"),
    "clip_id": ("clip_id", "doc_id", "video_id", "docno"),
    "rank": ("rank",),
    "score": ("score",),
    "start": ("start",),
    "end": ("end",),
}


def read_csv(source: LineSource, issues: IssueCollector) -> Iterator[RunRow]:
    """CSV with a header: caption_id (or query_id), clip_id (or doc_id/video_id), rank, score[, start, end]."""
    numbered = NumberedLines(source)
    reader = csv.reader(text for _, text in numbered)
    header = csv_header(reader, numbered, issues)
    if header is None:
        return
    header = [h.strip().lower() for h in header]
    columns: dict[str, int] = {}
    for name, aliases in CSV_ALIASES.items():
        for alias in aliases:
            if alias in header:
                columns[name] = header.index(alias)
                break
    missing = [n for n in ("caption_id", "clip_id", "rank", "score") if n not in columns]
    if missing:
        issues.add(numbered.current, None, f"header lacks column(s) {', '.join(missing)}")
        return
    names = {n: header[i] for n, i in columns.items()}
    fields = (names["caption_id"], names["clip_id"], "rank", "score")
    for row in csv_records(reader, numbered, issues, header):
        line = numbered.current
        if len(row) != len(header):
            issues.add(line, None, f"expected {len(header)} fields, found {len(row)}")
            continue
        get = lambda n: row[columns[n]] if n in columns else None  # noqa: E731
        made = make_row(issues, line, caption_id=get("caption_id"), clip_id=get("clip_id"), rank=get("rank"),
                        score=get("score"), start=get("start"), end=get("end"), fields=fields)
        if made:
            yield made


def _from_object(obj, issues: IssueCollector, line, where=None) -> RunRow | None:
    if not isinstance(obj, dict):
        issues.add(line, where, "expected a JSON object")
        return None
    caption = obj.get("caption_id", obj.get("query_id"))
    clip = obj.get("clip_id", obj.get("doc_id", obj.get("video_id")))
    prefix = f"{where}." if where else ""
    values = {"caption_id": caption, "clip_id": clip, "rank": obj.get("rank"), "score": obj.get("score"),
              "start": obj.get("start"), "end": obj.get("end")}
    nested = [name for name, value in values.items() if not is_scalar(value)]
    if nested:
        issues.add(line, prefix + nested[0], "expected a string or a number, not a list or an object")
        return None
    return make_row(issues, line, caption_id=caption, clip_id=clip, rank=obj.get("rank"), score=obj.get("score"),
                    start=obj.get("start"), end=obj.get("end"), where=where,
                    fields=(f"{prefix}caption_id", f"{prefix}clip_id", f"{prefix}rank", f"{prefix}score"))


def read_jsonl(source: LineSource, issues: IssueCollector) -> Iterator[RunRow]:
    """One object a line: {"caption_id", "clip_id", "rank", "score"[, "start", "end"]}."""
    for line, obj in json_object_lines(source, issues):
        row = _from_object(obj, issues, line)
        if row:
            yield row


def read_json(source: LineSource, issues: IssueCollector) -> Iterator[RunRow]:
    """The layout retrieval code writes: {caption_id: [{"clip_id", "score"[, "rank", "start", "end"]}, ...]}
    in rank order (rank defaults to the position), or a list of row objects. Parsed whole."""
    text = "\n".join(t for _, t in source)
    if not text:
        return
    try:
        document = load_json(text)
    except json.JSONDecodeError as exc:
        issues.add(exc.lineno, None, f"malformed JSON: {exc.msg} at column {exc.colno}")
        return
    if isinstance(document, dict) and isinstance(document.get("predictions"), (dict, list)):
        document = document["predictions"]
    if isinstance(document, list):
        for position, obj in enumerate(document):
            row = _from_object(obj, issues, None, where=f"[{position}]")
            if row:
                yield row
        return
    if not isinstance(document, dict):
        issues.add(None, None, "expected an object {caption_id: [predictions]} or a list of predictions")
        return
    for caption_id, predictions in document.items():
        if not isinstance(predictions, list):
            issues.add(None, caption_id, "expected a list of predictions")
            continue
        for position, obj in enumerate(predictions, start=1):
            where = f"{caption_id}[{position - 1}]"
            if isinstance(obj, dict):
                obj = {"caption_id": caption_id, "rank": position} | obj
            row = _from_object(obj, issues, None, where=where)
            if row:
                yield row


def read_qvhighlights(source: LineSource, issues: IssueCollector) -> Iterator[RunRow]:
    """QVHighlights predictions (`{"qid", "vid", "pred_relevant_windows": [[start, end, score], ...]}`
    a line) as moment rows: caption = qid, clip = vid, rank = position in the file's list."""
    from .moment_files import read_qvhighlights_predictions  # moment_files is large; only this format needs it

    for record in read_qvhighlights_predictions(source, issues):
        if record.video is None:
            issues.add(record.line, "vid", "missing: a stored moment run needs the video of each query")
            continue
        for rank, (start, end, score) in enumerate(record.windows, start=1):
            where = f"pred_relevant_windows[{rank - 1}]"
            if end <= start:
                issues.add(record.line, where, f"the window [{start:g}, {end:g}] has no length, so it cannot be stored "
                                               f"as a moment (evaluate scores the file as it is, IoU 0 for it)")
                continue
            yield RunRow(record.line, record.qid, record.video, rank, score, start, end)


def read_tvr(source: LineSource, issues: IssueCollector) -> Iterator[RunRow]:
    """A TVR submission's VCMR list (video corpus moment retrieval) as moment rows: caption =
    desc_id, clip = the video named by video2idx, rank = position in the file (the official
    evaluation ignores scores, and the reader keeps none). SVMR and VR lists are not stored."""
    from .moment_files import read_tvr_predictions

    submission = read_tvr_predictions(source.path, issues, source.progress)
    if issues:
        return
    if "VCMR" not in submission.tasks:
        issues.add(None, "VCMR", "missing: a stored run takes the VCMR list (video corpus moment retrieval)")
        return
    names = {index: name for name, index in submission.video_index.items()}
    for qid, rows in submission.tasks["VCMR"].items():
        for rank, (index, start, end) in enumerate(rows.tolist(), start=1):
            where = f"VCMR[desc_id={qid}].predictions[{rank - 1}]"
            video = names.get(int(index))
            if video is None:
                issues.add(None, f"{where}[0]", f"video index {int(index)} is not in video2idx")
                continue
            if end <= start:
                issues.add(None, where, f"the window [{start:g}, {end:g}] has no length, so it cannot be stored as a "
                                        f"moment (evaluate scores the file as it is)")
                continue
            yield RunRow(None, qid, video, rank, None, start, end, None, f"VCMR[desc_id={qid}]")


READERS = {"trec": read_trec, "csv": read_csv, "jsonl": read_jsonl, "json": read_json,
           "qvhighlights": read_qvhighlights, "tvr": read_tvr}


def guess_run_format(path: Path) -> str:
    name = Path(path).name.lower()
    for suffix, fmt in ((".csv", "csv"), (".jsonl", "jsonl"), (".json", "json"), (".npz", "npz")):
        if name.endswith(suffix):
            return fmt
    # A zip archive under another name is a score matrix (np.savez's output), never a TREC run.
    # Imported here: zipfile is a few milliseconds `evaluate` on run files never needs.
    from .score_matrix import is_npz

    return "npz" if is_npz(path) else "trec"
