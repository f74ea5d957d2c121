"""The FIRE dataset JSON (published with the FIRE paper), read and written as a stream.

Layout (formats.md): one object with "annotations" (resolved pairs, each with "label"),
"disagreements" (judged pairs without a majority, no "label"), "datasets" and free metadata
("license", "creator", "created_ds", ...). An annotation joins on the caption TEXT ("query") and
the video file name ("video_id"), carries every rater's label ("annotator_labels", values
"relevant"/"irrelevant"), their pseudonymous ids ("annotator_ids") and the runs whose top-k
proposed the pair ("models").

The published files hold 683K annotations; `json.load` would need gigabytes. The reader therefore
walks the top-level object itself and decodes one record at a time with the standard library's
`raw_decode`, holding one buffer of the file, and names each record by its array index and the
line it starts on. The writer streams annotations into the output and parks disagreements in a
temporary file until the annotations are done, so it too holds one record at a time.
"""
from __future__ import annotations

import codecs
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple, TextIO

from .errors import FileIssue, ImportRejected, IssueCollector
from .fields import NESTED_TOO_DEEPLY, TOO_MANY_DIGITS
from .text_lines import ProgressFn

SECTIONS = ("annotations", "disagreements")
#: FIRE's label words, and ours.
LABEL_WORDS = {"relevant": "relevant", "irrelevant": "not_relevant", "not_relevant": "not_relevant"}
FIRE_WORD = {"relevant": "relevant", "not_relevant": "irrelevant"}

_CHUNK = 1 << 20
_WS = " \t\r\n"


class FireRecord(NamedTuple):
    section: str  # "annotations" or "disagreements"
    index: int  # position in its array, from 0
    line: int  # line the record starts on
    query: str
    video_id: str
    label: str | None  # "relevant" / "not_relevant"; None in disagreements
    annotator_labels: list[str]
    annotator_ids: list
    models: list[str]
    dataset: str | None  # the record's "dataset" ("MSRVTT", "MSVD"), when given

    @property
    def where(self) -> str:
        return f"{self.section}[{self.index}]"


class _Buffer:
    """A sliding window over a UTF-8 file with line counting, for a hand-driven JSON walk."""

    def __init__(self, handle, display: str, progress=None) -> None:
        self.handle = handle
        self.progress = progress
        self.size = os.fstat(handle.fileno()).st_size
        self.bytes_read = 0
        self.display = display
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.text = ""
        self.pos = 0
        self.eof = False
        self.lines_before = 0  # newlines in text already dropped from the window
        self.counted_to = 0  # newlines counted in text[:counted_to]
        self.lines_counted = 0
        self.first = True

    def fail(self, message: str) -> None:
        raise ImportRejected([FileIssue(self.display, self.line(), None, message)])

    def line(self) -> int:
        self.lines_counted += self.text.count("\n", self.counted_to, self.pos)
        self.counted_to = self.pos
        return self.lines_before + self.lines_counted + 1

    def fill(self) -> bool:
        """Appends the next chunk of the file; False (and nothing changed) at the end."""
        if self.eof:
            return False
        raw = self.handle.read(_CHUNK)
        self.bytes_read += len(raw)
        if self.progress:
            self.progress(self.bytes_read, self.size)
        try:
            chunk = self.decoder.decode(raw, final=not raw)
        except UnicodeDecodeError as exc:
            self.fail(f"not valid UTF-8 ({exc.reason})")
        if not raw:
            self.eof = True
            return False
        if self.first:
            chunk = chunk.lstrip("\ufeff")
            self.first = False
        if self.pos > _CHUNK:
            self.line()  # count what is about to be dropped
            self.lines_before += self.lines_counted
            self.lines_counted = 0
            self.text = self.text[self.pos:]
            self.pos = self.counted_to = 0
        self.text += chunk
        return True

    def peek(self) -> str:
        """The next non-blank character ('' at the end of the file), without consuming it."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.fill():
                return ""

    def expect(self, chars: str, what: str) -> str:
        ch = self.peek()
        if not ch or ch not in chars:
            self.fail(f"not valid JSON: expected {what}, found {repr(ch) if ch else 'the end of the file'}")
        self.pos += 1
        return ch

    def value(self, decoder: json.JSONDecoder) -> Any:
        """Decodes the JSON value at the cursor, reading more of the file until it is complete."""
        self.peek()
        while True:
            try:
                value, end = decoder.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                if self.fill():
                    continue
                self.pos = exc.pos
                self.fail(f"not valid JSON: {exc.msg}")
            except RecursionError:
                # Deeper than the stack, however much more of the file is read: named at the line
                # the value starts on, as the JSON-lines readers (fields.load_json) name theirs.
                self.fail(f"not valid JSON: {NESTED_TOO_DEEPLY}")
            except ValueError:  # int("9" * 5000): the only other ValueError raw_decode raises
                self.fail(f"not valid JSON: {TOO_MANY_DIGITS}")
            # A number or literal that ends with the window may continue in the next chunk.
            if end < len(self.text) or not self.fill():
                self.pos = end
                return value


class FireJsonReader:
    """Iterates the records of a FIRE JSON file; `metadata` holds the other top-level keys once
    the iteration is over. Record-level problems go to `issues`; broken JSON raises at once."""

    def __init__(self, path: Path, issues: IssueCollector, progress: ProgressFn | None = None) -> None:
        self.path = Path(path)
        self.issues = issues
        self.progress = progress
        self.metadata: dict[str, Any] = {}
        self.seen_sections: set[str] = set()

    def __iter__(self) -> Iterator[FireRecord]:
        decoder = json.JSONDecoder()
        with self.path.open("rb") as handle:
            buf = _Buffer(handle, self.issues.file, self.progress)
            buf.expect("{", "'{' (a FIRE file is one JSON object)")
            if buf.peek() == "}":
                buf.pos += 1
            else:
                while True:
                    key = buf.value(decoder)
                    if not isinstance(key, str):
                        buf.fail("not valid JSON: object keys must be strings")
                    buf.expect(":", "':'")
                    if key in SECTIONS:
                        if key in self.seen_sections:
                            buf.fail(f"'{key}' appears twice")
                        self.seen_sections.add(key)
                        yield from self._section(buf, decoder, key)
                    else:
                        self.metadata[key] = buf.value(decoder)
                    if buf.expect(",}", "',' or '}'") == "}":
                        break
            if buf.peek():
                buf.fail("not valid JSON: extra data after the top-level object")
        if "annotations" not in self.seen_sections:
            self.issues.add(None, "annotations", "no 'annotations' array: is this a FIRE dataset file?")

    def _section(self, buf: _Buffer, decoder: json.JSONDecoder, section: str) -> Iterator[FireRecord]:
        if buf.peek() != "[":
            buf.fail(f"'{section}' must be an array")
        buf.pos += 1
        if buf.peek() == "]":
            buf.pos += 1
            return
        index = 0
        while True:
            buf.peek()
            line = buf.line()
            record = self._record(section, index, line, buf.value(decoder))
            if record:
                yield record
            index += 1
            if buf.expect(",]", "',' or ']'") == "]":
                return

    def _record(self, section: str, index: int, line: int, obj: Any) -> FireRecord | None:
        where = f"{section}[{index}]"
        add = self.issues.add
        if not isinstance(obj, dict):
            add(line, where, "each record must be a JSON object")
            return None
        ok = True
        texts = {}
        for field in ("query", "video_id"):
            value = obj.get(field)
            if not isinstance(value, str) or not value.strip():
                add(line, f"{where}.{field}", "missing or not a non-empty string")
                ok = False
            texts[field] = value
        label = None
        if section == "annotations":
            raw = obj.get("label")
            label = LABEL_WORDS.get(raw) if isinstance(raw, str) else None
            if label is None:
                add(line, f"{where}.label", f"{raw!r} is not 'relevant' or 'irrelevant'")
                ok = False
        lists = {}
        for field in ("annotator_labels", "annotator_ids", "models"):
            value = obj.get(field, [])
            if not isinstance(value, list):
                add(line, f"{where}.{field}", "must be a list")
                ok = False
            lists[field] = value
        if ok:
            bad = [v for v in lists["annotator_labels"] if v not in LABEL_WORDS]
            if bad:
                add(line, f"{where}.annotator_labels", f"{bad[0]!r} is not 'relevant' or 'irrelevant'")
                ok = False
            if not all(isinstance(m, str) for m in lists["models"]):
                add(line, f"{where}.models", "must be a list of run names")
                ok = False
        if not ok:
            return None
        return FireRecord(section, index, line, texts["query"].strip(), texts["video_id"].strip(), label,
                          [LABEL_WORDS[v] for v in lists["annotator_labels"]], lists["annotator_ids"], lists["models"],
                          obj.get("dataset") if isinstance(obj.get("dataset"), str) else None)


def _json_encoder():
    """json.dumps(value, ensure_ascii=False), for the writer's millions of records: json.dumps makes
    a JSONEncoder for each call; one, made once, encodes the same text (3.7 against 4.6 us a record).
    (The C encoder the json module makes inside encode() would save as much again if made once, but
    only through its private c_make_encoder: not worth leaning on.)"""
    return json.JSONEncoder(ensure_ascii=False).encode


_record_json = _json_encoder()


class FireJsonWriter:
    """Writes a FIRE dataset JSON one record at a time.

    Use as a context manager around `write()` calls; the closing part (disagreements and the
    metadata keys) is written on exit. Records are one per line, which keeps the file valid JSON
    and lets a reader's error name a line.
    """

    def __init__(self, handle: TextIO, *, metadata: dict[str, Any]) -> None:
        self.handle = handle
        self.metadata = metadata
        self.counts = {"annotations": 0, "disagreements": 0}
        self._parked: TextIO | None = None

    def __enter__(self) -> "FireJsonWriter":
        self._parked = tempfile.TemporaryFile("w+", encoding="utf-8")
        self.handle.write('{"annotations": [')
        return self

    def write(self, *, query: str, video_id: str, label: str | None, annotator_labels: list[str],
              annotator_ids: list, models: list[str], dataset: str, response_ids: list, queue_ids: list) -> None:
        """`label` and `annotator_labels` in our words ('relevant'/'not_relevant'); None makes the
        record a disagreement."""
        words = [FIRE_WORD[v] for v in annotator_labels]
        if label is not None:
            record = {"query": query, "video_id": video_id, "label": FIRE_WORD[label], "annotator_labels": words,
                      "annotator_ids": annotator_ids, "models": models, "dataset": dataset,
                      "response_ids": response_ids, "queue_ids": queue_ids}
            section, out = "annotations", self.handle
        else:
            record = {"query": query, "video_id": video_id, "annotator_labels": words, "annotator_ids": annotator_ids,
                      "models": models, "dataset": dataset, "response_ids": response_ids, "queue_ids": queue_ids}
            section, out = "disagreements", self._parked
        out.write(("\n" if self.counts[section] == 0 else ",\n") + _record_json(record))
        self.counts[section] += 1

    def __exit__(self, exc_type, exc, tb) -> None:
        parked = self._parked
        try:
            if exc_type is None:
                self.handle.write('\n], "disagreements": [')
                parked.seek(0)
                for block in iter(lambda: parked.read(_CHUNK), ""):
                    self.handle.write(block)
                self.handle.write("\n]")
                for key, value in self.metadata.items():
                    self.handle.write(f", {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}")
                self.handle.write("}\n")
        finally:
            parked.close()
