"""Import of existing judgments (a published FIRE JSON file or TREC qrels) for a dataset.

Imported verdicts are stored as `ImportedJudgment`s; pool builds then take them as the resolution
of the pairs they cover instead of queueing those pairs, so a new run only adds its unjudged pairs
to the queue (incremental pooling against published labels, see services/pools.py).

Joins:
- qrels name captions and clips by their ids (`query_id` = caption external id, `doc_id` = clip
  external id).
- FIRE JSON names a caption by its TEXT ("query") and a clip by its video file name ("video_id").
  A caption text that several caption rows share (MSR-VTT 1K-A has 1,000 rows but 995 distinct
  texts; MSVD repeats many) stands for all of them: the judgment is about the words and the video,
  so every caption row with that exact text gets it. "video_id" is matched to a clip's external
  id, or else to its video id when exactly one clip of the dataset has it.

The file is refused whole (nothing written) if any record names an unknown caption or clip, has a
bad field, or contradicts another record or an earlier import for the same pair; each problem
names the file, the line (and, for FIRE, the record) and the field. A record repeating another
with the same verdict is merged into it. Importing the same file again returns the first import.
"""
from __future__ import annotations

import io
import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, connection, transaction

from annotation.formats.errors import FileIssue, ImportRejected, IssueCollector
from annotation.formats.fire_json import FireJsonReader
from annotation.formats.qrels import NOT_JUDGED, read_qrels
from annotation.formats.text_lines import LineSource, ProgressFn, file_checksum
from annotation.models import Caption, Clip, Dataset
from annotation.models.reports import ImportedJudgment, JudgmentSet

JUDGMENT_FORMATS = tuple(JudgmentSet.Format.values)
BATCH = 5000
_LABEL_CODES = {ImportedJudgment.Label.RELEVANT: 0, ImportedJudgment.Label.NOT_RELEVANT: 1,
                ImportedJudgment.Label.DISAGREEMENT: 2}
_LABELS = {code: label for label, code in _LABEL_CODES.items()}
_FIRE_WORDS = {"relevant": "'relevant'", "not_relevant": "'irrelevant'", "disagreement": "a disagreement"}


class JudgmentsImportError(ValueError):
    """A judgments import request that cannot start; the message says why."""


@dataclass(frozen=True)
class JudgmentsImportResult:
    judgment_set: JudgmentSet
    created: bool  # False when the same file had already been imported


def guess_judgments_format(path: Path) -> str:
    with Path(path).open("rb") as handle:
        head = handle.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return JudgmentSet.Format.FIRE_JSON if head.startswith(b"{") else JudgmentSet.Format.QRELS


class _Stage:
    """The judgments read so far, checked against each other and against earlier imports.

    Pairs are keyed by one integer (caption id << 32 | clip id) and each remembers its label and
    where it was first seen, packed into one integer too, so a 700K-record file costs tens of MB.
    Rows go to the database in batches; if any problem turns up the transaction is rolled back.
    """

    def __init__(self, judgment_set: JudgmentSet, issues: IssueCollector, known: dict[int, tuple[str, str]]) -> None:
        self.judgment_set = judgment_set
        self.issues = issues
        self.known = known  # pairs judged by earlier imports: key -> (label, set name)
        self.seen: dict[int, int] = {}
        self.places: list[str] = []  # where each stored record was, by record number
        self.batch: list[tuple] = []
        self.counts: Counter = Counter()

    def add(self, *, caption_id: int, clip_id: int, label: str, line: int, field: str, place: str,
            extra: dict | None = None) -> None:
        key = caption_id << 32 | clip_id
        code = _LABEL_CODES[label]
        earlier = self.seen.get(key)
        if earlier is not None:
            if earlier & 3 != code:
                first = self.places[earlier >> 2]
                self.issues.add(line, field, f"says {_FIRE_WORDS[label]} but {first} says "
                                             f"{_FIRE_WORDS[_LABELS[earlier & 3]]} for the same pair")
            else:
                self.counts["repeated_pairs_merged"] += 1
            return
        self.seen[key] = len(self.places) << 2 | code
        self.places.append(place)
        previous = self.known.get(key)
        if previous is not None:
            if previous[0] != label:
                self.issues.add(line, field, f"says {_FIRE_WORDS[label]} but the earlier import '{previous[1]}' "
                                             f"says {_FIRE_WORDS[previous[0]]} for the same pair")
            else:
                self.counts["already_imported"] += 1
            return
        self.counts[label] += 1
        if self.issues:
            return  # the file will be refused; stop writing
        extra = extra or {}
        self.batch.append((caption_id, clip_id, label, extra.get("annotator_labels", []),
                           extra.get("annotator_ids", []), extra.get("models_proposing", []), place[:100]))
        if len(self.batch) >= BATCH:
            self.flush()

    def flush(self) -> None:
        if self.batch and not self.issues:
            _write_judgments(self.judgment_set, self.batch)
        self.batch = []


_COLUMNS = ["judgment_set_id", "dataset_id", "caption_id", "clip_id", "label", "annotator_labels", "annotator_ids",
            "models_proposing", "source_record"]


def _write_judgments(judgment_set: JudgmentSet, rows: list[tuple]) -> None:
    """COPY on PostgreSQL (building 700K model instances would take most of the import), batched
    INSERTs elsewhere."""
    if connection.vendor != "postgresql":
        ImportedJudgment.objects.bulk_create([
            ImportedJudgment(judgment_set=judgment_set, dataset_id=judgment_set.dataset_id, caption_id=caption,
                             clip_id=clip, label=label, annotator_labels=labels, annotator_ids=ids,
                             models_proposing=models, source_record=place)
            for caption, clip, label, labels, ids, models, place in rows])
        return
    buffer = io.StringIO()
    escape = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
    for caption, clip, label, labels, ids, models, place in rows:
        fields = [judgment_set.pk, judgment_set.dataset_id, caption, clip, label, json.dumps(labels), json.dumps(ids),
                  json.dumps(models), place]
        buffer.write("\t".join(str(v).translate(escape) for v in fields) + "\n")
    buffer.seek(0)
    with connection.cursor() as cursor:
        cursor.cursor.copy_expert(f"COPY {ImportedJudgment._meta.db_table} ({', '.join(_COLUMNS)}) FROM STDIN", buffer)


def _clip_lookup(dataset: Dataset) -> dict[str, int]:
    """Clip external id -> pk, plus video ids that name exactly one clip (FIRE's file names)."""
    by_external: dict[str, int] = {}
    by_video: dict[str, list[int]] = defaultdict(list)
    for pk, external_id, video_id in Clip.objects.filter(dataset=dataset).values_list("id", "external_id", "video_id"):
        by_external[external_id] = pk
        by_video[video_id].append(pk)
    lookup = {video: pks[0] for video, pks in by_video.items() if len(pks) == 1}
    lookup.update(by_external)
    return lookup


def _read_fire(path: Path, issues: IssueCollector, stage: _Stage, dataset: Dataset, only_dataset: str | None,
               progress: ProgressFn | None) -> None:
    captions_by_text: dict[str, list[int]] = defaultdict(list)
    for pk, text in Caption.objects.filter(dataset=dataset).values_list("id", "text"):
        captions_by_text[text.strip()].append(pk)
    clips = _clip_lookup(dataset)
    reader = FireJsonReader(path, issues, progress)
    for record in reader:
        stage.counts["records"] += 1
        if only_dataset and record.dataset and record.dataset != only_dataset:
            stage.counts["records_of_other_datasets"] += 1
            continue
        caption_ids = captions_by_text.get(record.query)
        clip_id = clips.get(record.video_id)
        if not caption_ids:
            issues.add(record.line, f"{record.where}.query", f"no caption of '{dataset.name}' has the text {record.query!r}")
        if clip_id is None:
            issues.add(record.line, f"{record.where}.video_id", f"no clip '{record.video_id}' in '{dataset.name}'")
        if not caption_ids or clip_id is None:
            continue
        if len(caption_ids) > 1:
            stage.counts["extra_captions_sharing_text"] += len(caption_ids) - 1
        label = record.label or ImportedJudgment.Label.DISAGREEMENT
        extra = {"annotator_labels": record.annotator_labels, "annotator_ids": record.annotator_ids,
                 "models_proposing": record.models}
        field = f"{record.where}.label" if record.label else f"{record.where}.query"
        for caption_id in caption_ids:
            stage.add(caption_id=caption_id, clip_id=clip_id, label=label, line=record.line, field=field,
                      place=f"{record.where} (line {record.line})", extra=extra)
        if issues.full:
            break
    stage.counts["file_datasets"] = reader.metadata.get("datasets") or []


def _read_qrels(path: Path, issues: IssueCollector, stage: _Stage, dataset: Dataset, progress: ProgressFn | None) -> None:
    captions = dict(Caption.objects.filter(dataset=dataset).values_list("external_id", "id"))
    clips = dict(Clip.objects.filter(dataset=dataset).values_list("external_id", "id"))
    source = LineSource(path, issues, progress)
    for row in read_qrels(source, issues):
        stage.counts["records"] += 1
        if row.relevance == NOT_JUDGED:
            stage.counts["not_judged_lines"] += 1
            continue
        caption_id, clip_id = captions.get(row.caption_id), clips.get(row.clip_id)
        if caption_id is None:
            issues.add(row.line, "query_id", f"no caption '{row.caption_id}' in '{dataset.name}'")
        if clip_id is None:
            issues.add(row.line, "doc_id", f"no clip '{row.clip_id}' in '{dataset.name}'")
        if caption_id is None or clip_id is None:
            continue
        label = ImportedJudgment.Label.RELEVANT if row.relevance > 0 else ImportedJudgment.Label.NOT_RELEVANT
        stage.add(caption_id=caption_id, clip_id=clip_id, label=label, line=row.line, field="relevance",
                  place=f"line {row.line}")
        if issues.full:
            break
    source.check_not_empty()


def judgments_import(*, dataset: Dataset, path: Path, fmt: str | None = None, name: str | None = None,
                     source_name: str | None = None, only_dataset: str | None = None, created_by=None,
                     progress: ProgressFn | None = None) -> JudgmentsImportResult:
    """Reads a FIRE JSON or qrels file into the dataset's imported judgments, all or nothing.

    `only_dataset` keeps only FIRE records whose "dataset" is that tag (the published files may
    cover MSR-VTT and MSVD together); records without a tag are kept.
    """
    path = Path(path)
    display = source_name or path.name
    fmt = fmt or guess_judgments_format(path)
    if fmt not in JUDGMENT_FORMATS:
        raise ImportRejected([FileIssue(display, None, "format",
                                        f"unknown judgments format '{fmt}'; use one of {', '.join(JUDGMENT_FORMATS)}")])
    checksum = file_checksum(path)
    existing = JudgmentSet.objects.filter(dataset=dataset, checksum=checksum).first()
    if existing:
        return JudgmentsImportResult(existing, created=False)
    name = name or Path(display).stem
    if JudgmentSet.objects.filter(dataset=dataset, name=name).exists():
        raise ImportRejected([FileIssue(display, None, "name", f"judgments named '{name}' already exist in '{dataset.name}'")])

    issues = IssueCollector(display, settings.REJUDGE["IMPORT_ERROR_CAP"])
    known = {caption << 32 | clip: (label, set_name) for caption, clip, label, set_name in
             ImportedJudgment.objects.filter(dataset=dataset)
             .values_list("caption_id", "clip_id", "label", "judgment_set__name").iterator(chunk_size=10_000)}
    try:
        with transaction.atomic():
            judgment_set = JudgmentSet.objects.create(dataset=dataset, name=name, source_format=fmt, source_name=display,
                                                      checksum=checksum, created_by=created_by)
            stage = _Stage(judgment_set, issues, known)
            if fmt == JudgmentSet.Format.FIRE_JSON:
                _read_fire(path, issues, stage, dataset, only_dataset, progress)
            else:
                _read_qrels(path, issues, stage, dataset, progress)
            stage.flush()
            if not issues and not any(stage.counts[label] for label in _LABEL_CODES):
                issues.add(None, None, "the file judges no new pair" if stage.counts["records"] else "the file holds no judgment")
            issues.raise_if_any()
            judgment_set.counts = dict(stage.counts)
            judgment_set.save(update_fields=["counts"])
    except IntegrityError:
        # The same file or name was imported concurrently; that import stands.
        existing = JudgmentSet.objects.filter(dataset=dataset, checksum=checksum).first()
        if existing:
            return JudgmentsImportResult(existing, created=False)
        raise
    return JudgmentsImportResult(judgment_set, created=True)

