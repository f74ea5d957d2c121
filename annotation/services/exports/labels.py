"""Exports of a pool's labels as files researchers download: TREC qrels, FIRE dataset JSON, and
CSV / JSON Lines with full provenance.

Every export streams: rows come from the database in a fixed order through server-side cursors
(selectors/exports.py), are merged one pair at a time and written straight to the file, so memory
stays flat however large the pool. On PostgreSQL the export reads one REPEATABLE READ snapshot, so
its streams agree even while raters keep labelling. The file is streamed to the exports storage
area (EXPORT_ROOT, or a bucket: annotation/storage), then recorded as an Artefact with its size and SHA-256.

Raters appear only by pseudonym (RaterProfile.pseudonym), never by user name.

- qrels: the corrected qrels the metrics report uses: every resolved pool pair (1 relevant,
  0 not relevant) and every caption's original clip as 1 (unless `originals` is false). Pairs
  that did not resolve are left out, which evaluation tools read as not relevant.
- fire_json: one record per (caption text, clip) judged: resolved pairs in "annotations", pairs
  without a majority in "disagreements". Caption rows sharing a text share one record (FIRE joins
  on the text): their votes and proposing runs are pooled; if their resolved labels differ, the
  record goes to "disagreements" (counted in the artefact's params as `conflicting_texts`).
  Pairs resolved from imported judgments carry the imported raters' labels and ids.
- csv / jsonl: one row per label of every pool pair (a pair without labels gets one row with
  empty label fields), with the pair's state and resolution, the rater's pseudonym, the vote's
  order, whether it counted, seconds spent, when, and the runs that proposed the pair with ranks.

Every format takes `aggregation`: `majority` (the default, the pairs' stored resolution),
`dawid_skene` or `mace` (services/aggregation): the model then decides the pairs whose voting is
over (resolved by votes, or a disagreement), from the same human votes; an admin's decision, an
imported verdict and open pairs stay as they are. The file says which: an `aggregation` column
(csv, jsonl), an `aggregation` field (FIRE JSON), the file name (unless majority) and the
artefact's params (all). Machine judges' verdicts never enter an export.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone as dt_timezone
from itertools import groupby
from operator import itemgetter
from pathlib import Path, PurePosixPath
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from annotation.formats.csv_safe import SafeCsvWriter, safe_csv_writer
from annotation.formats.fire_json import FireJsonWriter
from annotation.formats.qrels import write_qrels
from annotation.analysis.aggregation import MODEL_NOTES
from annotation.analysis.params import Param, ParamInvalid, params_clean
from annotation.models import Artefact, Caption, Clip, Job, Pool, PooledPair
from annotation.selectors.exports import (export_fire_pair_rows, export_fire_provenance_rows, export_fire_vote_rows,
                                          export_label_rows, export_provenance_rows, export_qrels_rows, json_value)
from annotation.selectors.reports import pool_pairs, pool_raters_without_profile
from annotation.services.aggregation.pool_labels import AGGREGATION_MODELS, pool_aggregated_labels
from annotation.services.storage.job_files import job_output_relative
from annotation.services.accounts.raters import rater_profile
from annotation.storage import stored_file_delete, stored_file_exists, stored_file_write

EXPORTS = "exports"


class ExportError(ValueError):
    """An export request that cannot be carried out; the message says why (and `param` names the
    parameter when one is to blame)."""

    def __init__(self, message: str = "", *, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class ExportFormat:
    kind: str  # Artefact.kind
    extension: str
    content_type: str
    params: dict[str, Param]  # the format's own parameters (every format also takes AGGREGATION)


def _dataset_name(pool: Pool | None) -> str | None:
    return pool.dataset.name if pool is not None else None


EXPORT_FORMATS = {
    "qrels": ExportFormat("qrels", "qrels", "text/plain; charset=utf-8", {
        "originals": Param(bool, True, "every caption's original clip is listed as relevant"),
    }),
    "fire_json": ExportFormat("fire_json", "json", "application/json", {
        "dataset_tag": Param(str, _dataset_name, "the dataset's name in the file (default: the pool's dataset's name)"),
        "license": Param(str, "", "the licence the file states"),
        "creator": Param(str, "Rejudge", "who made the file, as the file states it"),
    }),
    "csv": ExportFormat("labels_csv", "csv", "text/csv; charset=utf-8", {}),
    "jsonl": ExportFormat("labels_jsonl", "jsonl", "application/x-ndjson", {}),
}
#: Every format names the rule that turns votes into labels (see the module docstring).
AGGREGATION = {"aggregation": Param(str, "majority", "how votes become a pair's label: strict majority (the stored "
                                    "resolution), or Dawid-Skene / MACE over the same human votes; the file names which",
                                    choices=AGGREGATION_MODELS)}
LABEL_COLUMNS = ["pool_id", "pair_id", "caption_id", "caption_text", "clip_id", "video_id", "start", "end",
                 "is_original_positive", "pair_state", "resolved_label", "resolved_by", "label_id", "rater",
                 "value", "counted", "vote_number", "surplus_reason", "seconds", "created_at", "proposed_by",
                 "aggregation"]
_FLUSH = 1 << 20


class HashingTextFile:
    """A text sink that encodes to UTF-8, hashes and counts what it writes, in blocks of about 1 MB
    (1M characters): `raw` sees one write per block (a subclass may hand the block on elsewhere:
    the release archive writes its members' blocks on a thread of their own)."""

    def __init__(self, raw) -> None:
        self.raw = raw
        self.sha256 = hashlib.sha256()
        self.size = 0
        self._parts: list[str] = []
        self._pending = 0

    def write(self, text: str) -> int:
        self._parts.append(text)
        self._pending += len(text)
        if self._pending >= _FLUSH:
            self.flush()
        return len(text)

    def flush(self) -> None:
        if self._parts:
            block = "".join(self._parts).encode("utf-8")
            self._parts, self._pending = [], 0
            self.size += len(block)
            self.write_block(block)

    def write_block(self, block: bytes) -> None:
        self.sha256.update(block)
        self.raw.write(block)


def export_format_params(fmt: str) -> dict[str, Param]:
    """The parameters an export in `fmt` takes: the format's own and AGGREGATION."""
    if fmt not in EXPORT_FORMATS:
        raise ExportError(f"unknown export format '{fmt}'; use one of {', '.join(EXPORT_FORMATS)}", param="format")
    return {**EXPORT_FORMATS[fmt].params, **AGGREGATION}


def export_params_complete(*, fmt: str, params: dict, pool: Pool) -> dict:
    """Checked parameters completed: a FIRE file's empty dataset tag is the dataset's name."""
    if fmt == "fire_json" and not params["dataset_tag"]:
        return params | {"dataset_tag": pool.dataset.name}
    return params


def export_params_clean(*, fmt: str, params: dict | None, pool: Pool) -> dict:
    """The full parameters of an export: given values checked against the declarations, defaults
    filled in (the export operations, services/exports/operations.py, check them the same way)."""
    try:
        clean = params_clean(export_format_params(fmt), params, target=pool, owner=f"{fmt} exports")
    except ParamInvalid as exc:
        raise ExportError(str(exc), param=exc.param) from None
    return export_params_complete(fmt=fmt, params=clean, pool=pool)


def _when(value) -> str | None:
    """A label's time as ISO 8601 text. PostgreSQL's rows hold that text already (made by the server:
    selectors/exports.py, _iso_time, which must agree with this), SQLite's naive datetimes in UTC."""
    if value is None or isinstance(value, str):
        return value
    if value.utcoffset() is None:  # naive (timezone.is_naive, without the call)
        value = value.replace(tzinfo=dt_timezone.utc)
    return value.isoformat()


class _Following:
    """The rows of a stream that follows a driving stream pair by pair: each row's first column is
    a pair id of the driving stream, and its rows come in the driving stream's order of pairs (the
    selectors order both alike and filter the pairs alike). `take(pair_id)` returns the next rows
    of that pair (whole rows), none if it has none; one row is held at a time. `finish()` checks
    that every row was taken: a row of a pair the driving stream never had would otherwise stop the
    merge there and leave the pairs after it without their rows."""

    __slots__ = ("_rows", "_pending", "_name")

    def __init__(self, rows: Iterator[tuple], name: str) -> None:
        self._rows, self._name = rows, name
        self._pending = next(rows, None)

    def take(self, pair_id) -> list[tuple]:
        row = self._pending
        if row is None or row[0] != pair_id:
            return []
        out = []
        rows = self._rows
        while row is not None and row[0] == pair_id:
            out.append(row)
            row = next(rows, None)
        self._pending = row
        return out

    def finish(self) -> None:
        if self._pending is not None:
            raise RuntimeError(f"the {self._name} of pair {self._pending[0]} came out of the pairs' order")


def _resolved_by(state: str, by_admin: bool, votes: int) -> str:
    if state != PooledPair.State.RESOLVED:
        return ""
    if by_admin:
        return "admin"
    return "majority" if votes else "imported"


def _aggregated(pool: Pool, params: dict) -> dict[int, str | None] | None:
    """pair id -> the model's label of the pairs it decides; None under majority (the stored
    resolution is then exported as it is)."""
    if params["aggregation"] == "majority":
        return None
    return pool_aggregated_labels(pool=pool, model=params["aggregation"])


def _label_pairs(pool: Pool, progress: Callable[[int], None], params: dict,
                 rater_name: Callable[[Any], Any] | None = None) -> Iterator[tuple[tuple, list, list[tuple]]]:
    """The rows of the csv / jsonl exports (LABEL_COLUMNS' values), pair by pair: (the pair's
    columns, pool_id to resolved_by; the runs that proposed it as (run, rank) pairs in rank order;
    one tuple per label of its columns, label_id to created_at, or for a pair without labels one of
    empty fields). `rater_name` maps a pseudonym to the id written (a release's r001...). The one
    home of what the rows hold: the records, the CSV and a release's labels.csv are all read from here."""
    aggregation = params["aggregation"]
    decided = _aggregated(pool, params) or {}
    provenance = _Following(export_provenance_rows(pool=pool), "proposing runs")
    pool_id = pool.pk
    for done, (pair_id, group) in enumerate(groupby(export_label_rows(pool=pool), key=itemgetter(0)), start=1):
        rows = list(group)
        _, caption_id, text, clip_id, video_id, start, end, original, state, resolved, by_admin, votes = rows[0][:12]
        resolved_by = _resolved_by(state, bool(by_admin), votes) or None
        if pair_id in decided:
            resolved = decided[pair_id]
            resolved_by = aggregation if resolved else None
        pair = (pool_id, pair_id, caption_id, text, clip_id, video_id, start, end, bool(original), state,
                resolved or None, resolved_by)
        labels = [(label_id, rater_name(rater) if rater_name is not None and rater is not None else rater, value,
                   None if label_id is None else bool(counted), sequence or None, surplus or None, seconds,
                   created_at if created_at is None or type(created_at) is str else _when(created_at))
                  for (_, _, _, _, _, _, _, _, _, _, _, _,  # the pair's columns, as in rows[0]
                       label_id, rater, value, counted, sequence, surplus, seconds, created_at) in rows]
        yield pair, [(run, rank) for _, run, rank in provenance.take(pair_id)], labels
        progress(done)
    provenance.finish()


def export_label_records(pool: Pool, progress: Callable[[int], None], params: dict) -> Iterator[dict[str, Any]]:
    """One row of the csv / jsonl exports as a dict (LABEL_COLUMNS), pair by pair: the jsonl export's
    records (the csv export and a release's labels.csv write the same rows with label_csv_write)."""
    aggregation = params["aggregation"]
    for pair, proposed, labels in _label_pairs(pool, progress, params):
        runs = [{"run": run, "rank": rank} for run, rank in proposed]
        for label in labels:
            yield dict(zip(LABEL_COLUMNS, (*pair, *label, runs, aggregation)))


def label_csv_write(writer: SafeCsvWriter, pool: Pool, params: dict, progress: Callable[[int], None],
                    rater_name: Callable[[Any], Any] | None = None) -> int:
    """Writes the pool's rows of the labels CSV (LABEL_COLUMNS; the header is the caller's) to an
    open writer (a release writes several pools into one labels.csv); `rater_name` as in
    _label_pairs. Returns the rows written. `proposed_by` is `run@rank` joined by `;`.

    A pair's own columns are the same on each of its labels' rows: they are made CSV text once
    per pair (SafeCsvWriter.cells_text), each label's columns once per label."""
    piece = writer.cells_text
    aggregation = params["aggregation"]
    label_at = LABEL_COLUMNS.index("label_id")
    tail_at = LABEL_COLUMNS.index("proposed_by")
    written = 0
    batch: list[tuple[str, str, str]] = []
    for pair, proposed, labels in _label_pairs(pool, progress, params, rater_name):
        head = piece(pair)
        tail = piece((";".join([f"{run}@{rank}" for run, rank in proposed]), aggregation), first=tail_at)
        batch += [(head, piece(label, first=label_at), tail) for label in labels]
        if len(batch) >= 2048:
            written += len(batch)
            writer.write_pieces(batch)
            batch = []
    written += len(batch)
    writer.write_pieces(batch)
    return written


def _write_csv(out: HashingTextFile, pool: Pool, params: dict, progress) -> dict:
    # Numbers reach the writer typed (ints, floats), so only text is checked for formulas.
    writer = safe_csv_writer(out)
    writer.writeheader(LABEL_COLUMNS)
    return {"rows": label_csv_write(writer, pool, params, progress)}


def _write_jsonl(out: HashingTextFile, pool: Pool, params: dict, progress) -> dict:
    rows = 0
    for record in export_label_records(pool, progress, params):
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        rows += 1
    return {"rows": rows}


def _aggregated_qrels_rows(pool: Pool, params: dict, decided: dict[int, str | None]) -> Iterator[tuple[str, str, int]]:
    """export_qrels_rows' rows with the model deciding the pairs it decides: held in memory, one
    entry per labelled pair, ordered as the SQL orders them (caption, then clip id)."""
    pairs = pool_pairs(pool=pool)
    relevance: dict[tuple[int, int], int] = {}
    for pair_id, caption, clip, state, code in zip(pairs.id.tolist(), pairs.caption.tolist(), pairs.clip.tolist(),
                                                   pairs.state.tolist(), pairs.resolved.tolist()):
        if pair_id in decided:
            if decided[pair_id] is not None:
                relevance[(caption, clip)] = int(decided[pair_id] == PooledPair.Answer.RELEVANT)
        elif state == PooledPair.State.RESOLVED and code >= 0:
            relevance[(caption, clip)] = code
    captions = dict(Caption.objects.filter(dataset_id=pool.dataset_id).values_list("id", "external_id"))
    clips = dict(Clip.objects.filter(dataset_id=pool.dataset_id).values_list("id", "external_id"))
    if params["originals"]:
        for caption, clip in Caption.objects.filter(dataset_id=pool.dataset_id, original_clip__isnull=False
                                                     ).values_list("id", "original_clip_id"):
            relevance[(caption, clip)] = 1  # the original stays relevant whatever raters say
    for caption, clip in sorted(relevance):
        yield captions[caption], clips[clip], relevance[(caption, clip)]


def _write_qrels(out: HashingTextFile, pool: Pool, params: dict, progress) -> dict:
    decided = _aggregated(pool, params)
    rows = (export_qrels_rows(pool=pool, originals=params["originals"]) if decided is None
            else _aggregated_qrels_rows(pool, params, decided))

    def counted():
        for done, row in enumerate(rows, start=1):
            if done % 10_000 == 0:
                progress(done)
            yield row

    try:
        return {"rows": write_qrels(out, counted())}
    except ValueError as exc:
        raise ExportError(str(exc)) from exc


def fire_resolution_note(aggregation: str) -> str:
    """How FIRE JSON's labels were reached, in words (its `resolution` field)."""
    return ((MODEL_NOTES[aggregation].format(n_iter=100, seed=0) if aggregation != "majority"
             else "strict majority of the votes")
            + "; the caption's original video always stays a positive and is not listed unless it was judged")


def _write_fire(out: HashingTextFile, pool: Pool, params: dict, progress) -> dict:
    metadata = {"datasets": [params["dataset_tag"]], "license": params["license"], "creator": params["creator"],
                "created_ds": timezone.localdate().isoformat(), "pool": pool.name,
                "aggregation": params["aggregation"], "resolution": fire_resolution_note(params["aggregation"])}
    with FireJsonWriter(out, metadata=metadata) as writer:
        return fire_records_write(writer, pool, params, progress)


def fire_records_write(writer: FireJsonWriter, pool: Pool, params: dict, progress,
                       rater_name: Callable[[Any], Any] | None = None) -> dict:
    """Writes the pool's FIRE records to an open FireJsonWriter (a release writes several pools
    into one file); `rater_name` maps a platform pseudonym to the id written. Returns the counts."""
    votes = _Following(export_fire_vote_rows(pool=pool), "votes")
    proposing_runs = _Following(export_fire_provenance_rows(pool=pool), "proposing runs")
    tag = params["dataset_tag"]
    decided = _aggregated(pool, params) or {}
    resolved_state = PooledPair.State.RESOLVED.value
    merged = conflicting = done = 0
    before = dict(writer.counts)
    for _, group in groupby(export_fire_pair_rows(pool=pool), key=itemgetter(0, 1)):
        labels, ids, models, response_ids, queue_ids, resolved = [], [], [], [], [], set()
        pairs = list(group)
        text, clip = pairs[0][3], pairs[0][4]
        imported_taken = False
        for (_, _, pair_id, _, _, state, resolved_label, vote_count, by_admin,
             imported_labels, imported_ids, imported_models) in pairs:
            given = votes.take(pair_id)
            # One published record judged every caption row of the text: take its raters once.
            if not given and not by_admin and imported_labels is not None and not imported_taken:
                labels += json_value(imported_labels)
                ids += json_value(imported_ids)
                models += json_value(imported_models)
                imported_taken = True
            for _, value, pseudonym, label_id in given:
                labels.append(value)
                ids.append(rater_name(pseudonym) if rater_name else pseudonym)
                response_ids.append(label_id)
                queue_ids.append(pair_id)
            models += [name for _, name in proposing_runs.take(pair_id)]
            if pair_id in decided:
                if decided[pair_id] is not None:
                    resolved.add(decided[pair_id])
            elif state == resolved_state:
                resolved.add(resolved_label)
        if len(pairs) > 1:
            merged += 1
        if len(resolved) > 1:
            conflicting += 1
        writer.write(query=text, video_id=clip, label=resolved.pop() if len(resolved) == 1 else None,
                     annotator_labels=labels, annotator_ids=ids, models=list(dict.fromkeys(models)), dataset=tag,
                     response_ids=response_ids, queue_ids=queue_ids)
        done += len(pairs)
        progress(done)
    votes.finish()
    proposing_runs.finish()
    return {"annotations": writer.counts["annotations"] - before["annotations"],
            "disagreements": writer.counts["disagreements"] - before["disagreements"],
            "shared_text_records": merged, "conflicting_texts": conflicting}


_WRITERS = {"qrels": _write_qrels, "fire_json": _write_fire, "csv": _write_csv, "jsonl": _write_jsonl}


def _target(pool: Pool, fmt: str, job: Job | None, aggregation: str = "majority") -> PurePosixPath:
    stamp = datetime.now(dt_timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", pool.name).strip("-")[:80] or "pool"
    model = "" if aggregation == "majority" else f"-{aggregation.replace('_', '-')}"
    name = f"{slug}-{fmt}{model}-{stamp}.{EXPORT_FORMATS[fmt].extension}"
    if job is not None:
        # In the job's own folder, where whatever a failed or killed attempt left is found and removed.
        return job_output_relative(job_id=job.pk, name=name)
    return PurePosixPath("pools") / f"pool-{pool.pk}" / name


def export_create(*, pool: Pool, fmt: str, params: dict | None = None, job: Job | None = None,
                  progress: Callable | None = None) -> Artefact:
    """Writes the export file and records it as an Artefact (see the module docstring)."""
    clean = export_params_clean(fmt=fmt, params=params, pool=pool)
    for user in pool_raters_without_profile(pool=pool):
        rater_profile(user=user)
    total = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL).count()
    report = (lambda done: progress(done, max(total, done))) if progress else (lambda done: None)
    relative = _target(pool, fmt, job, clean["aggregation"]).as_posix()
    own_transaction = not connection.in_atomic_block
    written = recorded = False
    try:
        with transaction.atomic():
            if connection.vendor == "postgresql" and own_transaction:
                with connection.cursor() as cursor:
                    cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            # Streamed to the exports area: a local .part renamed into place, or multipart parts
            # to a bucket completed only here (annotation/storage/files.py).
            with stored_file_write(EXPORTS, relative) as raw:
                out = HashingTextFile(raw)
                counts = _WRITERS[fmt](out, pool, clean, report)
                out.flush()
            written = True
            artefact = Artefact.objects.create(
                dataset_id=pool.dataset_id, kind=EXPORT_FORMATS[fmt].kind, name=PurePosixPath(relative).name,
                path=relative, content_type=EXPORT_FORMATS[fmt].content_type, size=out.size,
                sha256=out.sha256.hexdigest(),
                params={"pool_id": pool.pk, "pool": pool.name, "format": fmt, **clean, "counts": counts}, job=job)
        recorded = True
        return artefact
    finally:
        # No file without its Artefact row: a failure after the file was finished takes it away too.
        # (A process killed outright leaves it to the job's clean-up: services/storage/job_files.py.)
        if written and not recorded:
            stored_file_delete(EXPORTS, relative)


def artefact_file(*, artefact: Artefact) -> Path:
    """The artefact's file on this host, when the exports area is a local folder (the CLI and
    tests); code that must also work with a bucket reads it through annotation/storage."""
    root = Path(settings.EXPORT_ROOT).resolve()
    path = (root / artefact.path).resolve()
    if root not in path.parents or not path.is_file():
        raise FileNotFoundError(f"the file of export {artefact.pk} is missing")
    return path


def artefact_exists(*, artefact: Artefact) -> bool:
    return stored_file_exists(EXPORTS, artefact.path)
