"""Import of existing judgments for a dataset: a named JudgmentSet from one file, all or nothing.

Formats (JudgmentSet.Format): TREC qrels, TRECVID sample_eval qrels, FIRE JSON, raw multi-rater
labels (`rater_labels`) and moment ground truth (QVHighlights, TVR, DiDeMo). Every file is checked
by the same reader `manage.py evaluate` uses, then kept as imported (storage.py), so a stored set
scores exactly as its file does.

Verdicts on caption–clip pairs (qrels, sample_eval, FIRE) are also stored as `ImportedJudgment`s
when the set seeds pools (the default for those formats): pool builds then take them as the
resolution of the pairs they cover instead of queueing those pairs, so a new run only adds its
unjudged pairs to the queue (incremental pooling against published labels, see services/pools.py).
Only seeding sets must agree with each other; a set imported with `seeds_pools=False` may
contradict them (a re-judged copy of a benchmark's qrels, say) and writes no verdict rows. Raw
multi-rater labels and moment windows are not verdicts on pairs and never seed pools.

Joins:
- qrels name captions and clips by their ids (`query_id` = caption external id, `doc_id` = clip
  external id).
- FIRE JSON names a caption by its TEXT ("query") and a clip by its video file name ("video_id").
  A caption text that several caption rows share (MSR-VTT 1K-A has 1,000 rows but 995 distinct
  texts; MSVD repeats many) stands for all of them: the judgment is about the words and the video,
  so every caption row with that exact text gets it. "video_id" is matched to a clip's external
  id, or else to its video id when exactly one clip of the dataset has it.

- sample_eval qrels name topics (captions) and shots (clips) by id; `-1` lines (pooled, not judged)
  are counted and kept in the file, which holds the strata the estimators need.
- rater_labels with query/item columns name captions and clips by id; a file with a single `unit`
  column names no pair of the dataset and is stored as it is.
- Moment ground truth is checked as a file only: its query and video ids are the benchmark's own.

The file is refused whole (nothing written) if any record names an unknown caption or clip, has a
bad field, or contradicts another record or an earlier seeding import for the same pair; each
problem names the file, the line (and, for FIRE, the record) and the field. A record repeating
another with the same verdict is merged into it. Importing the same file again returns the first
import.
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
from annotation.analysis.repeats import REPEAT_RULES
from annotation.formats import moment_files, rater_labels
from annotation.formats.fire_json import FireJsonReader
from annotation.formats.qrels import NOT_JUDGED, read_qrels
from annotation.formats.sample_eval_qrels import unique_sample_eval_rows
from annotation.formats.text_lines import LineSource, ProgressFn, file_checksum
from annotation.models import Caption, Clip, Dataset
from annotation.models.judgment_sets import ImportedJudgment, JudgmentSet

from . import storage

#: Formats a file can be imported from (a pool's labels become a set through from_pool.py).
JUDGMENT_FORMATS = tuple(f for f in JudgmentSet.Format.values if f != JudgmentSet.Format.POOL)
#: Formats whose records are verdicts on caption–clip pairs, so the set can seed pools.
VERDICT_FORMATS = (JudgmentSet.Format.QRELS, JudgmentSet.Format.SAMPLE_EVAL, JudgmentSet.Format.FIRE_JSON)
MOMENT_FORMATS = (JudgmentSet.Format.QVHIGHLIGHTS, JudgmentSet.Format.TVR, JudgmentSet.Format.DIDEMO)
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
    """fire_json for a JSON object, sample_eval when the first line has 5 fields, qrels otherwise;
    other formats are named explicitly."""
    with Path(path).open("rb") as handle:
        head = handle.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"{"):
        return JudgmentSet.Format.FIRE_JSON
    first = head.split(b"\n", 1)[0].split()
    return JudgmentSet.Format.SAMPLE_EVAL if len(first) == 5 else JudgmentSet.Format.QRELS


class _Stage:
    """The judgments read so far, checked against each other and against earlier imports.

    Pairs are keyed by one integer (caption id << 32 | clip id) and each remembers its label and
    where it was first seen, packed into one integer too, so a 700K-record file costs tens of MB.
    Rows go to the database in batches; if any problem turns up the transaction is rolled back.
    """

    def __init__(self, judgment_set: JudgmentSet, issues: IssueCollector, known: dict[int, tuple[str, str]]) -> None:
        self.judgment_set = judgment_set
        self.writes = judgment_set.seeds_pools  # a set that seeds no pool keeps its verdicts in its file only
        self.issues = issues
        self.known = known  # pairs judged by earlier imports: key -> (label, set name)
        self.seen: dict[int, int] = {}
        self.places: list[str] = []  # where each stored record was, by record number
        self.batch: list[tuple] = []
        self.counts: Counter = Counter()

    def add(self, *, caption_id: int, clip_id: int, label: str, line: int, field: str, place: str,
            extra: dict | None = None) -> None:
        label = str(label)  # counts are shown to people: "relevant", never an enum's repr
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
        if self.issues or not self.writes:
            return  # the file will be refused, or its verdicts stay in the file
        extra = extra or {}
        self.batch.append((caption_id, clip_id, label, extra.get("annotator_labels", []),
                           extra.get("annotator_ids", []), extra.get("models_proposing", []), place[:100],
                           extra.get("relevance"), extra.get("stratum", "")))
        if len(self.batch) >= BATCH:
            self.flush()

    def flush(self) -> None:
        if self.batch and not self.issues:
            _write_judgments(self.judgment_set, self.batch)
        self.batch = []


_COLUMNS = ["judgment_set_id", "dataset_id", "caption_id", "clip_id", "label", "annotator_labels", "annotator_ids",
            "models_proposing", "source_record", "relevance", "stratum"]


def _write_judgments(judgment_set: JudgmentSet, rows: list[tuple]) -> None:
    """COPY on PostgreSQL (building 700K model instances would take most of the import), batched
    INSERTs elsewhere."""
    if connection.vendor != "postgresql":
        ImportedJudgment.objects.bulk_create([
            ImportedJudgment(judgment_set=judgment_set, dataset_id=judgment_set.dataset_id, caption_id=caption,
                             clip_id=clip, label=label, annotator_labels=labels, annotator_ids=ids,
                             models_proposing=models, source_record=place, relevance=relevance, stratum=stratum)
            for caption, clip, label, labels, ids, models, place, relevance, stratum in rows])
        return
    buffer = io.StringIO()
    escape = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
    for caption, clip, label, labels, ids, models, place, relevance, stratum in rows:
        fields = [judgment_set.pk, judgment_set.dataset_id, caption, clip, label, json.dumps(labels), json.dumps(ids),
                  json.dumps(models), place]
        text = [str(v).translate(escape) for v in fields]
        text += ["\\N" if relevance is None else str(relevance), stratum.translate(escape)]  # \N: COPY's NULL
        buffer.write("\t".join(text) + "\n")
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
                 "models_proposing": record.models,
                 "relevance": {ImportedJudgment.Label.RELEVANT: 1, ImportedJudgment.Label.NOT_RELEVANT: 0}.get(label)}
        field = f"{record.where}.label" if record.label else f"{record.where}.query"
        for caption_id in caption_ids:
            stage.add(caption_id=caption_id, clip_id=clip_id, label=label, line=record.line, field=field,
                      place=f"{record.where} (line {record.line})", extra=extra)
        if issues.full:
            break
    stage.counts["file_datasets"] = reader.metadata.get("datasets") or []


def _pair(issues: IssueCollector, dataset: Dataset, line: int, captions: dict[str, int], clips: dict[str, int],
          query: tuple[str, str], item: tuple[str, str]) -> tuple[int, int] | None:
    """(caption pk, clip pk) of a record naming them by id as (field, value), or None after saying
    which of the two the dataset lacks."""
    caption_id, clip_id = captions.get(query[1]), clips.get(item[1])
    if caption_id is None:
        issues.add(line, query[0], f"no caption '{query[1]}' in '{dataset.name}'")
    if clip_id is None:
        issues.add(line, item[0], f"no clip '{item[1]}' in '{dataset.name}'")
    return None if caption_id is None or clip_id is None else (caption_id, clip_id)


def _read_qrels(path: Path, issues: IssueCollector, stage: _Stage, dataset: Dataset, progress: ProgressFn | None) -> None:
    captions = dict(Caption.objects.filter(dataset=dataset).values_list("external_id", "id"))
    clips = dict(Clip.objects.filter(dataset=dataset).values_list("external_id", "id"))
    source = LineSource(path, issues, progress)
    for row in read_qrels(source, issues):
        stage.counts["records"] += 1
        if row.relevance == NOT_JUDGED:
            stage.counts["not_judged_lines"] += 1
            continue
        pair = _pair(issues, dataset, row.line, captions, clips, ("query_id", row.caption_id), ("doc_id", row.clip_id))
        if pair is None:
            continue
        caption_id, clip_id = pair
        label = ImportedJudgment.Label.RELEVANT if row.relevance > 0 else ImportedJudgment.Label.NOT_RELEVANT
        stage.add(caption_id=caption_id, clip_id=clip_id, label=label, line=row.line, field="relevance",
                  place=f"line {row.line}", extra={"relevance": row.relevance})
        if issues.full:
            break
    source.check_not_empty()


def _read_sample_eval(path: Path, issues: IssueCollector, stage: _Stage, dataset: Dataset,
                      progress: ProgressFn | None) -> None:
    """Topics are captions and shots clips, by id. A `-1` line (pooled, not judged) is no verdict:
    it is counted, and the stored file keeps it for the strata's sizes."""
    captions = dict(Caption.objects.filter(dataset=dataset).values_list("external_id", "id"))
    clips = dict(Clip.objects.filter(dataset=dataset).values_list("external_id", "id"))
    source = LineSource(path, issues, progress)
    strata: set[tuple[str, str]] = set()
    for row in unique_sample_eval_rows(source, issues):
        stage.counts["records"] += 1
        strata.add((row.topic, row.stratum))
        pair = _pair(issues, dataset, row.line, captions, clips, ("topic", row.topic), ("shot", row.shot))
        if pair is None:
            continue
        caption_id, clip_id = pair
        if row.rel == NOT_JUDGED:
            stage.counts["pooled_not_judged"] += 1
            continue
        label = ImportedJudgment.Label.RELEVANT if row.rel > 0 else ImportedJudgment.Label.NOT_RELEVANT
        stage.add(caption_id=caption_id, clip_id=clip_id, label=label, line=row.line, field="rel",
                  place=f"line {row.line}", extra={"relevance": row.rel, "stratum": row.stratum})
        if issues.full:
            break
    source.check_not_empty()
    stage.counts["topics"] = len({topic for topic, _ in strata})
    stage.counts["strata"] = len(strata)


def _read_rater_labels(path: Path, issues: IssueCollector, stage: _Stage, dataset: Dataset, options: dict,
                       progress: ProgressFn | None) -> None:
    """Raw labels stay in the file; here each row is checked, and with query/item columns joined
    to the dataset's captions and clips. Counts say how many labels, units and raters, and how many
    (unit, rater) cells hold more than one label (the repeat rule applies when the set is used)."""
    columns = options.get("columns") or {}
    by_pair = "unit" not in columns
    captions = dict(Caption.objects.filter(dataset=dataset).values_list("external_id", "id")) if by_pair else {}
    clips = dict(Clip.objects.filter(dataset=dataset).values_list("external_id", "id")) if by_pair else {}
    cells: Counter = Counter()
    units: set = set()
    raters: set = set()
    for label in rater_labels.read_rater_labels(path, issues, columns=columns,
                                                file_format=options.get("file_format"), progress=progress):
        stage.counts["labels"] += 1
        if by_pair:
            query, item = label.unit
            _pair(issues, dataset, label.line, captions, clips, (columns.get("query", "query"), query),
                  (columns.get("item", "item"), item))
        units.add(label.unit)
        raters.add(label.rater)
        cells[(label.unit, label.rater)] += 1
        if issues.full:
            break
    stage.counts["units"] = len(units)
    stage.counts["raters"] = len(raters)
    stage.counts["repeated_cells"] = sum(1 for n in cells.values() if n > 1)


_MOMENT_LOADERS = {
    JudgmentSet.Format.QVHIGHLIGHTS: moment_files.load_qvhighlights_ground_truth,
    JudgmentSet.Format.TVR: moment_files.load_tvr_ground_truth,
    JudgmentSet.Format.DIDEMO: moment_files.load_didemo_ground_truth,
}


def _read_moments(path: Path, fmt: str, display: str, stage: _Stage) -> None:
    """Moment ground truth names the benchmark's own query and video ids; checked as a file (the
    reader refuses it whole, naming line and field) and counted."""
    truths = _MOMENT_LOADERS[fmt](path, display)
    stage.counts["queries"] = len(truths)
    stage.counts["windows"] = sum(len(t.windows) for t in truths.values())
    stage.counts["queries_with_several_windows"] = sum(1 for t in truths.values() if len(t.windows) > 1)


def import_options_clean(fmt: str, options: dict | None, display: str) -> dict:
    """The reading options a format takes, checked; stored with the set so it is read the same way
    each time it is used. The import job's start checks them too when the format is named (a 400
    instead of a failed job)."""
    options = dict(options or {})
    clean: dict = {}
    if options.get("only_dataset"):
        if fmt != JudgmentSet.Format.FIRE_JSON:
            raise ImportRejected([FileIssue(display, None, "only_dataset", "only FIRE JSON files have dataset tags")])
        clean["only_dataset"] = options["only_dataset"]
    if fmt == JudgmentSet.Format.RATER_LABELS:
        columns = options.get("columns") or {}
        if isinstance(columns, str):
            try:
                columns = rater_labels.parse_columns(columns)
            except ValueError as exc:
                raise ImportRejected([FileIssue(display, None, "columns", str(exc))]) from exc
        repeats = options.get("repeats") or "last"
        if repeats not in REPEAT_RULES:
            raise ImportRejected([FileIssue(display, None, "repeats", f"'{repeats}' is not a repeat rule; use one of "
                                                                       f"{', '.join(REPEAT_RULES)}")])
        file_format = options.get("file_format") or None
        if file_format and file_format not in rater_labels.FILE_FORMATS:
            raise ImportRejected([FileIssue(display, None, "file_format", f"'{file_format}' is not csv or jsonl")])
        clean.update(columns=columns, repeats=repeats, file_format=file_format)
    else:
        for key in ("columns", "repeats", "file_format"):
            if options.get(key):
                raise ImportRejected([FileIssue(display, None, key, f"only rater_labels files take {key}")])
    return clean


def seeds_pools_clean(fmt: str, seeds_pools: bool | None, display: str) -> bool:
    """Whether a set of this format seeds pools: by default when it holds verdicts; a file of raw
    labels or moment windows cannot."""
    if seeds_pools is None:
        return fmt in VERDICT_FORMATS
    if seeds_pools and fmt not in VERDICT_FORMATS:
        what = "raw labels" if fmt == JudgmentSet.Format.RATER_LABELS else "moment windows"
        raise ImportRejected([FileIssue(display, None, "seeds_pools",
                                        f"a {fmt} file holds {what}, not verdicts on pairs, so it cannot seed pools")])
    return seeds_pools


def judgments_import(*, dataset: Dataset, path: Path, fmt: str | None = None, name: str | None = None,
                     source_name: str | None = None, only_dataset: str | None = None, options: dict | None = None,
                     seeds_pools: bool | None = None, created_by=None,
                     progress: ProgressFn | None = None) -> JudgmentsImportResult:
    """Reads a judgments file into a new JudgmentSet of the dataset, all or nothing, and keeps the file.

    `only_dataset` keeps only FIRE records whose "dataset" is that tag (the published files may
    cover MSR-VTT and MSVD together); records without a tag are kept. `options` are the reading
    options of rater_labels files (columns, repeats, file_format). `seeds_pools` defaults to True
    for verdict formats and must stay False for the others.
    """
    path = Path(path)
    display = source_name or path.name
    fmt = fmt or guess_judgments_format(path)
    if fmt not in JUDGMENT_FORMATS:
        raise ImportRejected([FileIssue(display, None, "format",
                                        f"unknown judgments format '{fmt}'; use one of {', '.join(JUDGMENT_FORMATS)}")])
    params = import_options_clean(fmt, {**(options or {}), "only_dataset": only_dataset}, display)
    seeds_pools = seeds_pools_clean(fmt, seeds_pools, display)
    checksum = file_checksum(path)
    existing = JudgmentSet.objects.filter(dataset=dataset, checksum=checksum).first()
    if existing:
        return JudgmentsImportResult(existing, created=False)
    name = name or Path(display).stem
    if JudgmentSet.objects.filter(dataset=dataset, name=name).exists():
        raise ImportRejected([FileIssue(display, None, "name", f"judgments named '{name}' already exist in '{dataset.name}'")])

    issues = IssueCollector(display, settings.REJUDGE["IMPORT_ERROR_CAP"])
    known = {}
    if seeds_pools:
        known = {caption << 32 | clip: (label, set_name) for caption, clip, label, set_name in
                 ImportedJudgment.objects.filter(dataset=dataset)
                 .values_list("caption_id", "clip_id", "label", "judgment_set__name").iterator(chunk_size=10_000)}
    stored = ""
    try:
        with transaction.atomic():
            judgment_set = JudgmentSet.objects.create(dataset=dataset, name=name, source_format=fmt, source_name=display,
                                                      checksum=checksum, params=params, seeds_pools=seeds_pools,
                                                      created_by=created_by)
            stage = _Stage(judgment_set, issues, known)
            if fmt == JudgmentSet.Format.FIRE_JSON:
                _read_fire(path, issues, stage, dataset, params.get("only_dataset"), progress)
            elif fmt == JudgmentSet.Format.QRELS:
                _read_qrels(path, issues, stage, dataset, progress)
            elif fmt == JudgmentSet.Format.SAMPLE_EVAL:
                _read_sample_eval(path, issues, stage, dataset, progress)
            elif fmt == JudgmentSet.Format.RATER_LABELS:
                _read_rater_labels(path, issues, stage, dataset, params, progress)
            else:
                _read_moments(path, fmt, display, stage)
            stage.flush()
            if fmt in VERDICT_FORMATS and not issues and not any(stage.counts[label] for label in _LABEL_CODES):
                if not stage.counts["records"]:
                    issues.add(None, None, "the file holds no judgment")
                elif seeds_pools and not stage.counts["pooled_not_judged"]:
                    issues.add(None, None, "the file judges no new pair")
            issues.raise_if_any()
            stored = storage.judgment_file_store(dataset_id=dataset.pk, checksum=checksum, source=path, name=display)
            judgment_set.stored_file = stored
            judgment_set.counts = dict(stage.counts)
            judgment_set.save(update_fields=["counts", "stored_file"])
    except IntegrityError:
        # The same file or name was imported concurrently; that import stands (with the file this
        # one may have written to the same place, so that file stays).
        existing = JudgmentSet.objects.filter(dataset=dataset, checksum=checksum).first()
        if existing:
            return JudgmentsImportResult(existing, created=False)
        storage.judgment_file_remove(stored)
        raise
    except BaseException:
        storage.judgment_file_remove(stored)
        raise
    return JudgmentsImportResult(judgment_set, created=True)
