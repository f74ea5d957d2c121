"""Readers of the moment-retrieval benchmarks' own files: QVHighlights, TVR and DiDeMo.

* QVHighlights ground truth (JSON Lines): ``{"qid", "query", "vid", "relevant_windows": [[s, e],
  ...]}``, one or more windows a query.
* QVHighlights predictions (JSON Lines): ``{"qid", "vid"?, "pred_relevant_windows": [[s, e,
  score], ...]}`` in the model's order. A query that lists the same window twice is read as it
  is: the official evaluation keeps both (the second can only be a false positive unless another
  window fits it), and so does :mod:`annotation.analysis.moment_eval`.
* TVR ground truth (JSON Lines): ``{"desc_id", "desc", "vid_name", "ts": [s, e], "type"?}``; ``ts``
  may also be a list of four or more annotators' windows (DiDeMo in TVR's layout).
* TVR predictions (one JSON object): ``{"video2idx": {name: index}, "VCMR"|"SVMR"|"VR": [{"desc_id",
  "predictions": [[video_index, s, e, score], ...]}, ...]}``.
* DiDeMo ground truth (one JSON array): ``[{"annotation_id", "description", "video", "times":
  [[first, last], ...]}, ...]`` with several annotators' ``times`` in 5-second segment indices
  (inclusive end, so ``first == last`` is a 5-second moment).
* DiDeMo predictions (one JSON document): what LocalizingMoments' ``eval_predictions(segments,
  data)`` takes, written as JSON: for each annotation, its candidate moments ``[first, last]``
  ranked best first (21 in DiDeMo). Either an object keyed by ``annotation_id`` (the key its
  test_network.py stores results under) or an array with one ranking per annotation, aligned
  with the ground-truth file's order, as ``segments`` is.

Every reader streams: JSON Lines one line at a time, the two JSON documents one record at a time
(the TVR prediction file of the val split holds 3 x 10,895 x 100 predictions). Problems go to an
:class:`IssueCollector` with file, line and field (``relevant_windows[1][0]``), and the ``load_*``
helpers raise :class:`ImportRejected` when there is any, so nothing is half-read. A query listed
twice is refused: the official scripts disagree with themselves on it (QVHighlights' mAP merges
the two lists while its R1 keeps the last one) and no reading of it is safe.

Spans: ground-truth windows need ``0 <= start < end``; predictions need ``0 <= start <= end``
(a zero-length prediction is a miss, not an error, and TVR's VR rows carry ``0, 0``); DiDeMo
indices are whole numbers with ``0 <= first <= last``. NaN and infinity are refused everywhere.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from annotation.analysis.storable_text import text_problem

from .errors import IssueCollector
from .fields import MAX_ID_LENGTH, json_object_lines, shown
from .fire_json import _Buffer
from .text_lines import LineSource, ProgressFn

__all__ = [
    "MomentTruth",
    "MomentRun",
    "TvrSubmission",
    "read_qvhighlights_ground_truth",
    "read_qvhighlights_predictions",
    "read_tvr_ground_truth",
    "read_tvr_predictions",
    "read_didemo_ground_truth",
    "read_didemo_predictions",
    "load_qvhighlights_ground_truth",
    "load_qvhighlights_predictions",
    "load_tvr_ground_truth",
    "load_tvr_predictions",
    "load_didemo_ground_truth",
    "load_didemo_predictions",
]

TVR_TASKS = ("VCMR", "SVMR", "VR")
TVR_DESC_TYPES = ("v", "t", "vt")


class MomentTruth(NamedTuple):
    line: int
    qid: str
    query: str | None
    video: str | None
    windows: tuple[tuple[float, float], ...]
    desc_type: str | None = None  # TVR's v / t / vt


class MomentRun(NamedTuple):
    line: int
    qid: str
    video: str | None
    windows: tuple[tuple[float, float, float], ...]  # (start, end, score) in the file's order


class TvrSubmission(NamedTuple):
    video_index: dict[str, int]
    #: tasks[task][desc_id] = float array (n, 3): video index, start, end, in the file's order
    tasks: dict[str, dict[str, np.ndarray]]


# --- shared checks ----------------------------------------------------------------------------

def _id(value: Any, issues: IssueCollector, line: int | None, field: str) -> str | None:
    """A query or video id: a non-empty string or a whole number, stored as text."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        issues.add(line, field, "missing or not a string or whole number" if value is None
                   else f"{shown(json.dumps(value))} is not a string or whole number")
        return None
    text = str(value).strip()
    if not text:
        issues.add(line, field, "is empty")
        return None
    problem = text_problem(text, max_length=MAX_ID_LENGTH)
    if problem:
        issues.add(line, field, f"the id {problem}")
        return None
    return text


def _text(value: Any, issues: IssueCollector, line: int | None, field: str) -> str | None | bool:
    """Optional free text (the query); False when present but unusable."""
    if value is None:
        return None
    if not isinstance(value, str):
        issues.add(line, field, "must be a string")
        return False
    problem = text_problem(value)
    if problem:
        issues.add(line, field, f"the text {problem}")
        return False
    return value


def _number(value: Any, issues: IssueCollector, line: int | None, field: str) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        issues.add(line, field, f"{shown(json.dumps(value))} is not a number")
        return None
    number = float(value)
    if not math.isfinite(number):
        issues.add(line, field, f"{value} is not a finite number")
        return None
    return number


def _windows(value: Any, issues: IssueCollector, line: int | None, field: str, *, size: int,
             zero_length: bool, allow_empty: bool = False) -> list[tuple[float, ...]] | None:
    """A list of ``[start, end(, score)]`` lists; None after reporting the first bad one."""
    if not isinstance(value, list):
        issues.add(line, field, "missing or not a list of windows" if value is None
                   else "must be a list of windows [start, end" + (", score]" if size == 3 else "]"))
        return None
    if not value and not allow_empty:
        issues.add(line, field, "has no window")
        return None
    out = []
    for i, window in enumerate(value):
        where = f"{field}[{i}]"
        if not isinstance(window, list) or len(window) < size or (size == 2 and len(window) != 2):
            shape = "[start, end, score]" if size == 3 else "[start, end]"
            issues.add(line, where, f"must be a list {shape}")
            return None
        numbers = []
        for j in range(size):
            number = _number(window[j], issues, line, f"{where}[{j}]")
            if number is None:
                return None
            numbers.append(number)
        start, end = numbers[0], numbers[1]
        if start < 0:
            issues.add(line, f"{where}[0]", f"start {start:g} is negative")
            return None
        if end < start or (end == start and not zero_length):
            kind = "inverted" if end < start else "zero-length"
            issues.add(line, f"{where}[1]", f"end {end:g} is not after start {start:g} ({kind} window)")
            return None
        out.append(tuple(numbers))
    return out


def _json_lines(source: LineSource, issues: IssueCollector) -> Iterator[tuple[int, dict]]:
    return json_object_lines(source, issues)


class _SeenIds:
    """Refuses a query id that appears twice, naming the line that had it first."""

    def __init__(self, issues: IssueCollector, field: str) -> None:
        self.issues = issues
        self.field = field
        self.first: dict[str, int | None] = {}

    def new(self, qid: str, line: int | None, field: str | None = None) -> bool:
        if qid in self.first:
            earlier = self.first[qid]
            self.issues.add(line, field or self.field,
                            f"{shown(qid)} is listed twice" + (f" (first on line {earlier})" if earlier else ""))
            return False
        self.first[qid] = line
        return True


# --- QVHighlights -------------------------------------------------------------------------------

def read_qvhighlights_ground_truth(source: LineSource, issues: IssueCollector) -> Iterator[MomentTruth]:
    seen = _SeenIds(issues, "qid")
    for line, obj in _json_lines(source, issues):
        qid = _id(obj.get("qid"), issues, line, "qid")
        if "relevant_windows" not in obj:
            issues.add(line, "relevant_windows", "missing: this file has no ground truth (a test split?)")
            continue
        windows = _windows(obj["relevant_windows"], issues, line, "relevant_windows", size=2, zero_length=False)
        video = _id(obj["vid"], issues, line, "vid") if "vid" in obj else None
        query = _text(obj.get("query"), issues, line, "query")
        fresh = qid is not None and seen.new(qid, line)
        if fresh and windows is not None and not ("vid" in obj and video is None) and query is not False:
            yield MomentTruth(line, qid, query, video, tuple(windows))


def read_qvhighlights_predictions(source: LineSource, issues: IssueCollector) -> Iterator[MomentRun]:
    seen = _SeenIds(issues, "qid")
    for line, obj in _json_lines(source, issues):
        qid = _id(obj.get("qid"), issues, line, "qid")
        windows = _windows(obj.get("pred_relevant_windows"), issues, line, "pred_relevant_windows", size=3,
                           zero_length=True, allow_empty=True)
        video = _id(obj["vid"], issues, line, "vid") if "vid" in obj else None
        fresh = qid is not None and seen.new(qid, line)
        if fresh and windows is not None and not ("vid" in obj and video is None):
            yield MomentRun(line, qid, video, tuple(windows))


# --- TVR --------------------------------------------------------------------------------------

def read_tvr_ground_truth(source: LineSource, issues: IssueCollector) -> Iterator[MomentTruth]:
    seen = _SeenIds(issues, "desc_id")
    for line, obj in _json_lines(source, issues):
        qid = _id(obj.get("desc_id"), issues, line, "desc_id")
        video = _id(obj.get("vid_name"), issues, line, "vid_name")
        ts = obj.get("ts")
        windows = None
        if isinstance(ts, list) and len(ts) == 2 and not any(isinstance(v, list) for v in ts):
            windows = _windows([ts], issues, line, "ts", size=2, zero_length=True)
        elif isinstance(ts, list) and ts and all(isinstance(v, list) for v in ts):
            if len(ts) in (2, 3):
                # The official script reads a list of two or three windows as one [start, end]
                # pair and scores nonsense; four or more are annotators' windows (two must agree).
                issues.add(line, "ts", f"{len(ts)} windows: give one [start, end] or at least four annotators' windows")
            else:
                windows = _windows(ts, issues, line, "ts", size=2, zero_length=True)
        else:
            issues.add(line, "ts", "missing or not [start, end] (or a list of annotators' windows)")
        desc_type = obj.get("type")
        type_ok = desc_type is None or desc_type in TVR_DESC_TYPES
        if not type_ok:
            issues.add(line, "type", f"{shown(str(desc_type))} is not one of v, t, vt")
        query = _text(obj.get("desc"), issues, line, "desc")
        fresh = qid is not None and seen.new(qid, line)
        if fresh and type_ok and video is not None and windows is not None and query is not False:
            yield MomentTruth(line, qid, query, video, tuple(windows), desc_type)


def _top_level_object(buf: _Buffer, decoder: json.JSONDecoder) -> Iterator[str]:
    """Walks a top-level JSON object, yielding each key with the cursor on its value; the caller
    must consume the value (``buf.value`` or a nested walk) before asking for the next key."""
    buf.expect("{", "'{' (the file must be one JSON object)")
    if buf.peek() == "}":
        buf.pos += 1
    else:
        while True:
            key = buf.value(decoder)
            if not isinstance(key, str):
                buf.fail("not valid JSON: object keys must be strings")
            buf.expect(":", "':'")
            yield key
            if buf.expect(",}", "',' or '}'") == "}":
                break
    if buf.peek():
        buf.fail("not valid JSON: extra data after the top-level object")


def _array_items(buf: _Buffer, decoder: json.JSONDecoder, what: str) -> Iterator[tuple[int, int, Any]]:
    """(index, line, value) of each element of the JSON array at the cursor, decoded one at a time."""
    if buf.peek() != "[":
        buf.fail(f"{what} must be an array")
    buf.pos += 1
    if buf.peek() == "]":
        buf.pos += 1
        return
    index = 0
    while True:
        buf.peek()
        line = buf.line()
        yield index, line, buf.value(decoder)
        index += 1
        if buf.expect(",]", "',' or ']'") == "]":
            return


def read_tvr_predictions(path: Path, issues: IssueCollector, progress: ProgressFn | None = None,
                         *, max_pred_per_query: int | None = None) -> TvrSubmission:
    """Reads a TVR submission; ``max_pred_per_query`` keeps only the first rows of each query (the
    official evaluation reads 100), which bounds memory on oversized files."""
    decoder = json.JSONDecoder()
    video_index: dict[str, int] | None = None
    has_index = False
    tasks: dict[str, dict[str, np.ndarray]] = {}
    with Path(path).open("rb") as handle:
        buf = _Buffer(handle, issues.file, progress)
        for key in _top_level_object(buf, decoder):
            if key == "video2idx":
                buf.peek()  # onto the value, so the line named is the value's
                line = buf.line()
                has_index = True
                video_index = _video_index(buf.value(decoder), issues, line)
            elif key in TVR_TASKS:
                if key in tasks:
                    buf.fail(f"'{key}' appears twice")
                tasks[key] = {}
                seen = _SeenIds(issues, key)
                for index, line, record in _array_items(buf, decoder, f"'{key}'"):
                    qid, rows = _tvr_record(record, issues, line, f"{key}[{index}]", max_pred_per_query,
                                            key == "VR")
                    if qid is not None and seen.new(qid, line, f"{key}[{index}].desc_id") and rows is not None:
                        tasks[key][qid] = rows
            else:
                buf.value(decoder)  # other keys are left alone
    if not has_index:
        issues.add(None, "video2idx", "missing: the submission must map video names to the indices it uses")
    if not tasks:
        issues.add(None, None, "no 'VCMR', 'SVMR' or 'VR' list: is this a TVR submission?")
    return TvrSubmission(video_index or {}, tasks)


def _video_index(value: Any, issues: IssueCollector, line: int) -> dict[str, int] | None:
    if not isinstance(value, dict):
        issues.add(line, "video2idx", "must be an object {video name: index}")
        return None
    owners: dict[int, str] = {}
    for name, index in value.items():
        if isinstance(index, bool) or not isinstance(index, int):
            issues.add(line, f"video2idx.{name}", f"{shown(json.dumps(index))} is not a whole number")
            return None
        if index in owners:
            issues.add(line, f"video2idx.{name}", f"index {index} is also {shown(owners[index])}'s")
            return None
        owners[index] = name
    return dict(value)


def _tvr_record(record: Any, issues: IssueCollector, line: int, where: str, limit: int | None,
                is_vr: bool) -> tuple[str | None, np.ndarray | None]:
    """(desc_id, rows); either is None when unusable (the problem is reported)."""
    if not isinstance(record, dict):
        issues.add(line, where, "each entry must be an object {desc_id, predictions}")
        return None, None
    qid = _id(record.get("desc_id"), issues, line, f"{where}.desc_id")
    rows = record.get("predictions")
    if not isinstance(rows, list):
        issues.add(line, f"{where}.predictions", "missing or not a list of [video_index, start, end, score]")
        return qid, None
    if limit is not None:
        rows = rows[:limit]
    out = np.empty((len(rows), 3))
    for i, row in enumerate(rows):
        field = f"{where}.predictions[{i}]"
        if not isinstance(row, list) or len(row) < 3:
            issues.add(line, field, "must be a list [video_index, start, end, score]")
            return qid, None
        if isinstance(row[0], bool) or not isinstance(row[0], int):
            issues.add(line, f"{field}[0]", f"{shown(json.dumps(row[0]))} is not a video index (a whole number)")
            return qid, None
        start = _number(row[1], issues, line, f"{field}[1]")
        end = _number(row[2], issues, line, f"{field}[2]")
        if start is None or end is None:
            return qid, None
        if end < start and not is_vr:  # VR rows carry placeholder times the evaluation ignores
            issues.add(line, f"{field}[2]", f"end {end:g} is before start {start:g} (inverted window)")
            return qid, None
        out[i] = (row[0], start, end)
    return qid, out


# --- DiDeMo -----------------------------------------------------------------------------------

def read_didemo_ground_truth(path: Path, issues: IssueCollector,
                             progress: ProgressFn | None = None) -> Iterator[MomentTruth]:
    decoder = json.JSONDecoder()
    seen = _SeenIds(issues, "annotation_id")
    with Path(path).open("rb") as handle:
        buf = _Buffer(handle, issues.file, progress)
        if buf.peek() != "[":
            buf.fail("not a DiDeMo file: expected a JSON array of annotations")
        for index, line, record in _array_items(buf, decoder, "the file"):
            where = f"[{index}]"
            if not isinstance(record, dict):
                issues.add(line, where, "each annotation must be an object")
                continue
            qid = _id(record.get("annotation_id"), issues, line, f"{where}.annotation_id")
            video = _id(record.get("video"), issues, line, f"{where}.video")
            query = _text(record.get("description"), issues, line, f"{where}.description")
            times = _didemo_times(record.get("times"), issues, line, f"{where}.times")
            fresh = qid is not None and seen.new(qid, line, f"{where}.annotation_id")
            if fresh and video is not None and times is not None and query is not False:
                yield MomentTruth(line, qid, query, video, times)
        if buf.peek():
            buf.fail("not valid JSON: extra data after the array")


def read_didemo_predictions(path: Path, issues: IssueCollector,
                            progress: ProgressFn | None = None) -> dict[str, tuple] | list[tuple | None]:
    """{annotation_id: ranked moments} for an object, or [ranked moments] for an array aligned
    with the ground truth; a ranking that cannot be used is reported and left out (None in an array,
    so the positions of the others hold)."""
    decoder = json.JSONDecoder()
    with Path(path).open("rb") as handle:
        buf = _Buffer(handle, issues.file, progress)
        first = buf.peek()
        if first == "[":
            aligned: list[tuple | None] = []
            for index, line, record in _array_items(buf, decoder, "the file"):
                aligned.append(_didemo_times(record, issues, line, f"[{index}]", allow_empty=True))
            if buf.peek():
                buf.fail("not valid JSON: extra data after the array")
            return aligned
        if first != "{":
            buf.fail("not a DiDeMo prediction file: expected a JSON object {annotation_id: [[first, last], ...]} "
                     "or an array of rankings aligned with the ground truth")
        keyed: dict[str, tuple] = {}
        for key in _top_level_object(buf, decoder):
            buf.peek()  # onto the value, so the line named is the value's
            line = buf.line()
            where = f"{key}" if len(key) <= 60 else f"{key[:60]}..."
            qid = _id(key, issues, line, where)
            times = _didemo_times(buf.value(decoder), issues, line, where, allow_empty=True)
            if qid is not None and qid in keyed:
                issues.add(line, where, f"{shown(qid)} is listed twice")
            elif qid is not None and times is not None:
                keyed[qid] = times
        return keyed


def _didemo_times(value: Any, issues: IssueCollector, line: int, field: str, *, allow_empty: bool = False):
    if not isinstance(value, list) or (not value and not allow_empty):
        issues.add(line, field, "missing or not a non-empty list of [first, last] segment indices")
        return None
    out = []
    for i, window in enumerate(value):
        where = f"{field}[{i}]"
        if not isinstance(window, list) or len(window) != 2:
            issues.add(line, where, "must be a list [first, last] of segment indices")
            return None
        for j, v in enumerate(window):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                issues.add(line, f"{where}[{j}]", f"{shown(json.dumps(v))} is not a segment index (a whole number >= 0)")
                return None
        if window[1] < window[0]:
            issues.add(line, f"{where}[1]", f"last segment {window[1]} is before first segment {window[0]}")
            return None
        out.append((float(window[0]), float(window[1])))
    return tuple(out)


# --- whole files ------------------------------------------------------------------------------

def _display(path: Path, display: str | None) -> str:
    return display or Path(path).name


def _load_lines_by_qid(path: Path, display: str | None, reader) -> dict:
    """A JSON-lines file read whole by `reader`, keyed by query id; refused whole on any problem."""
    issues = IssueCollector(_display(path, display))
    source = LineSource(path, issues)
    records = {r.qid: r for r in reader(source, issues)}
    source.check_not_empty()
    issues.raise_if_any()
    return records


def load_qvhighlights_ground_truth(path: Path, display: str | None = None) -> dict[str, MomentTruth]:
    return _load_lines_by_qid(path, display, read_qvhighlights_ground_truth)


def load_qvhighlights_predictions(path: Path, display: str | None = None) -> dict[str, MomentRun]:
    return _load_lines_by_qid(path, display, read_qvhighlights_predictions)


def load_tvr_ground_truth(path: Path, display: str | None = None) -> dict[str, MomentTruth]:
    return _load_lines_by_qid(path, display, read_tvr_ground_truth)


def load_tvr_predictions(path: Path, display: str | None = None, *,
                         max_pred_per_query: int | None = 100) -> TvrSubmission:
    issues = IssueCollector(_display(path, display))
    submission = read_tvr_predictions(path, issues, max_pred_per_query=max_pred_per_query)
    issues.raise_if_any()
    return submission


def load_didemo_ground_truth(path: Path, display: str | None = None) -> dict[str, MomentTruth]:
    issues = IssueCollector(_display(path, display))
    records = {r.qid: r for r in read_didemo_ground_truth(path, issues)}
    issues.raise_if_any()
    return records


def load_didemo_predictions(path: Path, display: str | None = None) -> dict[str, tuple] | list[tuple]:
    issues = IssueCollector(_display(path, display))
    predictions = read_didemo_predictions(path, issues)
    issues.raise_if_any()
    return predictions
