"""Import of a run (one model's ranked predictions) in TREC run, CSV, JSON Lines or JSON format, or
as a score matrix (.npz, see annotation.formats.score_matrix).

Rows are streamed into a temporary staging table (COPY on PostgreSQL, batched INSERT on SQLite),
the checks that need the whole run (duplicate ranks, the same clip twice for a caption, scores
that rise with rank) run as SQL over it, and only then one INSERT ... SELECT moves the rows into
the predictions table. The file's caption and clip ids are looked up a batch of rows at a time,
only those the run names (`_DatasetIds`): the cost and the memory of an import follow the run, not
the collection (20,000 lines against 1,000,000 shots read 20,000 ids, not a million). Python
memory therefore holds the run's ids and one batch, never the file; and the run lands whole or not
at all.

A score matrix is checked whole in memory and kept as a file (runs storage area, named by its SHA-256)
instead of as one row per prediction: its rankings are computed from the scores when read
(annotation.selectors.score_matrix_runs).

Depth: `max_depth` N refuses line-file ranks deeper than N and cuts a matrix's rankings at N;
ALL_RANKS (0, `--max-depth all`) keeps full rankings. Without it, line files are held to
settings.REJUDGE["MAX_RUN_DEPTH"] (REJUDGE_MAX_RUN_DEPTH, default 1000), which bounds the rows one
run adds to the database; a matrix, which adds none, keeps every clip.
"""
from __future__ import annotations

import io
import uuid
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction

from annotation.analysis.storable_text import text_problem
from annotation.formats.errors import FileIssue, ImportRejected, IssueCollector
from annotation.formats.runs import FILE_ORDER_FORMATS, READERS, RUN_FORMATS, WHOLE_FILE_FORMATS, guess_run_format
from annotation.formats.score_matrix import read_score_matrix
from annotation.formats.text_lines import LineSource, ProgressFn, file_checksum
from annotation.models import Caption, Clip, Dataset, Prediction, Run
from annotation.storage import stored_file_copy_in, stored_file_delete, stored_file_exists

RUNS = "runs"  # the storage area of kept score matrices

ID_FIELDS = {"trec": ("query_id", "doc_id"), "csv": ("caption_id", "clip_id"),
             "jsonl": ("caption_id", "clip_id"), "json": ("caption_id", "clip_id"), "qvhighlights": ("qid", "vid"),
             "tvr": ("desc_id", "video")}
#: max_depth value that keeps full rankings (`--max-depth all`).
ALL_RANKS = 0
DEPTH_ADVICE = "import with --max-depth N (REST: max_depth), or --max-depth all to keep full rankings"


@dataclass(frozen=True)
class RunImportResult:
    run: Run
    created: bool  # False when the same file had already been imported (a retried upload)


def run_import(*, dataset: Dataset, path: Path, name: str | None = None, fmt: str | None = None, uploader=None,
               source_name: str | None = None, max_depth: int | None = None,
               progress: ProgressFn | None = None) -> RunImportResult:
    """Validates and imports a run; raises ImportRejected (nothing written) listing every problem.

    Importing the same file (same SHA-256) into the same dataset again returns the existing run
    instead of creating a duplicate, so a retried upload is harmless.
    """
    path = Path(path)
    display = source_name or path.name
    cap = settings.REJUDGE["IMPORT_ERROR_CAP"]
    if max_depth is not None and max_depth < 0:
        raise ImportRejected([FileIssue(display, None, "max_depth", f"max_depth {max_depth} is negative; {DEPTH_ADVICE}")])
    fmt = fmt or guess_run_format(path)
    if fmt not in RUN_FORMATS:
        raise ImportRejected([FileIssue(display, None, "format", f"unknown run format '{fmt}'; use one of {', '.join(RUN_FORMATS)}")])

    checksum = file_checksum(path)
    existing = Run.objects.filter(dataset=dataset, checksum=checksum).first()
    if existing:
        return RunImportResult(existing, created=False)
    if name and Run.objects.filter(dataset=dataset, name=name).exists():
        raise ImportRejected([FileIssue(display, None, "name", f"a run named '{name}' already exists in '{dataset.name}'")])
    if fmt == "npz":
        return _score_matrix_import(dataset=dataset, path=path, display=display, name=name, uploader=uploader,
                                    checksum=checksum, max_depth=max_depth, cap=cap, progress=progress)
    if max_depth is None:
        max_depth, depth_source = settings.REJUDGE["MAX_RUN_DEPTH"], "the default, from REJUDGE_MAX_RUN_DEPTH"
    else:
        depth_source = "as asked"

    issues = IssueCollector(display, cap)
    caption_pk, clip_pk = _DatasetIds(Caption, dataset), _DatasetIds(Clip, dataset)
    caption_field, clip_field = ID_FIELDS[fmt]
    source = LineSource(path, issues, progress)

    with transaction.atomic():
        stage = _StagingTable()
        try:
            file_order = fmt in FILE_ORDER_FORMATS
            kind, tag, grouped = _stream_into_stage(READERS[fmt](source, issues), stage, issues, caption_pk, clip_pk,
                                                    caption_field, clip_field, max_depth, depth_source,
                                                    file_order=file_order)
            if fmt not in WHOLE_FILE_FORMATS:  # a JSON document's reader reports an empty file itself
                source.check_not_empty()
            if not grouped and not issues.full:
                _check_whole_run(stage, issues, kind, caption_pk, cap, file_order=file_order)
            if issues:
                raise ImportRejected(sorted(issues.issues, key=lambda i: (i.line is None, i.line or 0)),
                                     truncated=issues.truncated)
            run_name = name or tag or path.stem
            if Run.objects.filter(dataset=dataset, name=run_name).exists():
                raise ImportRejected([FileIssue(display, None, "name",
                                                f"a run named '{run_name}' already exists in '{dataset.name}'; choose another name")])
            depth, count, captions = stage.summary()
            run = Run.objects.create(dataset=dataset, name=run_name, kind=kind, uploader=uploader, source_name=display,
                                     source_format=fmt, checksum=checksum, depth=depth, prediction_count=count,
                                     caption_count=captions)
            stage.move_into(run.pk)
        finally:
            stage.drop()
    return RunImportResult(run, created=True)


def _score_matrix_import(*, dataset: Dataset, path: Path, display: str, name: str | None, uploader, checksum: str,
                         max_depth: int | None, cap: int, progress: ProgressFn | None) -> RunImportResult:
    """A score matrix run: checked whole, kept as the file it is, no Prediction rows."""
    issues = IssueCollector(display, cap)
    size = path.stat().st_size
    if progress:
        progress(0, size)
    # The ids are checked against the dataset before the scores are decompressed (a compressed
    # matrix of zeros is tiny on disk and large in memory).
    matrix = read_score_matrix(path, issues, max_cells=settings.REJUDGE["SCORE_MATRIX_MAX_CELLS"],
                               check_ids=lambda captions, clips, found: _check_matrix_ids(captions, clips, dataset, found))
    issues.raise_if_any()
    n_captions, n_clips = matrix.scores.shape
    depth = n_clips if not max_depth else min(max_depth, n_clips)
    run_name = name or path.stem
    with transaction.atomic():
        if Run.objects.filter(dataset=dataset, name=run_name).exists():
            raise ImportRejected([FileIssue(display, None, "name",
                                            f"a run named '{run_name}' already exists in '{dataset.name}'; choose another name")])
        relative, placed = _keep_score_file(path, checksum)
        try:
            run = Run.objects.create(dataset=dataset, name=run_name, kind=Run.Kind.CLIP, uploader=uploader,
                                     source_name=display, source_format="npz", checksum=checksum, depth=depth,
                                     prediction_count=n_captions * depth, caption_count=n_captions,
                                     scores_file=relative)
        except BaseException:
            if placed:
                stored_file_delete(RUNS, relative)
            raise
    if progress:
        progress(size, size)
    return RunImportResult(run, created=True)


def _check_matrix_ids(caption_ids: list[str], clip_ids: list[str], dataset: Dataset, issues: IssueCollector) -> None:
    for key, ids, model in (("caption_ids", caption_ids, Caption), ("clip_ids", clip_ids, Clip)):
        known = _DatasetIds(model, dataset)
        known.look_up(ids)
        what = "caption" if model is Caption else "clip"
        for i, external_id in enumerate(ids):
            if external_id not in known:
                issues.add(None, f"{key}[{i}]", f"unknown {what} id '{external_id}' (not in this dataset)")


def _keep_score_file(path: Path, checksum: str) -> tuple[str, bool]:
    """Stores the file as <sha[:2]>/<sha>.npz in the runs storage area (the upload is deleted after
    its job). Returns the name and whether this call put it there; the same bytes imported into
    another dataset share the file."""
    relative = f"{checksum[:2]}/{checksum}.npz"
    if stored_file_exists(RUNS, relative):
        return relative, False
    stored_file_copy_in(RUNS, relative, path)  # written whole or not at all
    return relative, True


class _DatasetIds:
    """The dataset's row ids of the external ids a run names: looked up `look_up(ids)` a batch at
    a time (one indexed query per QUERY_BATCH new ids), never the whole collection. Reads as a
    dict of the ids looked up so far (`get`, `in`, `items`); an id not in the dataset is absent."""

    QUERY_BATCH = 5_000  # ids per query: well under SQLite's limit of bound parameters

    def __init__(self, model, dataset: Dataset) -> None:
        self.model, self.dataset = model, dataset
        self.known: dict[str, int] = {}
        self.asked: set[str] = set()

    def look_up(self, external_ids) -> None:
        new = list(dict.fromkeys(i for i in external_ids if i is not None and i not in self.asked))
        self.asked.update(new)
        # An id that cannot be stored as text (NUL, a lone surrogate) is in no dataset, and the
        # database would refuse the query that asks for it: it stays unknown, refused by its line.
        new = [i for i in new if text_problem(i) is None]
        for start in range(0, len(new), self.QUERY_BATCH):
            batch = new[start:start + self.QUERY_BATCH]
            if connection.vendor == "postgresql":
                self.known.update(self._probe(batch))
            else:
                self.known.update(self.model.objects.filter(dataset=self.dataset, external_id__in=batch)
                                  .values_list("external_id", "id"))

    def _probe(self, batch: list[str]) -> list[tuple[str, int]]:
        """One probe of the (dataset, external id) unique index per id asked. Asked as
        `external_id IN (...)`, PostgreSQL's planner reads the whole dataset instead (a scan of its
        clips filtered by the list: 12 ms for 5,000 ids among 100,000 clips, 101 ms among
        1,000,000), which made a run's import slower the larger the collection (issue 40). The
        LATERAL ... LIMIT 1 leaves it no plan but a lookup per id (16 ms at either size)."""
        table = self.model._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT asked.external_id, found.id FROM unnest(%s::text[]) AS asked(external_id) "
                           f"CROSS JOIN LATERAL (SELECT id FROM {table} WHERE dataset_id = %s "
                           f"AND external_id = asked.external_id LIMIT 1) AS found", [batch, self.dataset.pk])
            return cursor.fetchall()

    def get(self, external_id, default=None):
        return self.known.get(external_id, default)

    def __contains__(self, external_id) -> bool:
        return external_id in self.known

    def items(self):
        return self.known.items()


def _batches(rows, issues: IssueCollector, size: int):
    """The reader's rows a list of up to `size` at a time (their ids are looked up together);
    reading stops once the listing of problems is full, as the row loop does."""
    batch = []
    for row in rows:
        batch.append(row)
        if len(batch) >= size or issues.full:
            yield batch
            batch = []
            if issues.full:
                return
    if batch:
        yield batch


class _GroupChecks:
    """Whole-run checks done while streaming, one caption at a time.

    Run files list each caption's predictions together, so duplicates and score order can be
    checked per caption group with memory bounded by one group. If a caption shows up again
    after another one (an ungrouped file), `grouped` turns False and the service runs the same
    checks as SQL over the staging table instead.
    """

    def __init__(self, issues: IssueCollector, kind_of_first_row: str | None = None, *, file_order: bool = False) -> None:
        self.issues = issues
        self.file_order = file_order  # repeats and any score order allowed (FILE_ORDER_FORMATS)
        self.grouped = True
        self.caption: int | None = None
        self.caption_name = ""
        self.done: set[int] = set()
        self.ranks: dict[int, int] = {}
        self.items: dict[tuple, int] = {}
        self.scores: list[tuple[int, float, int]] = []

    def add(self, caption: int, caption_name: str, row, key: tuple) -> None:
        if caption != self.caption:
            self.finish_group()
            if caption in self.done:
                self.grouped = False
                return
            self.caption, self.caption_name = caption, caption_name
        line = row.line
        first = self.ranks.get(row.rank)
        if first is not None:
            self.issues.add(line, "rank", f"caption '{caption_name}' has rank {row.rank} twice (first on line {first})")
        else:
            self.ranks[row.rank] = line
        first = self.items.get(key)
        if first is not None and not self.file_order:
            what = "the same moment" if len(key) > 1 else "the same clip"
            self.issues.add(line, "doc_id", f"caption '{caption_name}' lists {what} twice (first on line {first})")
        else:
            self.items[key] = line
        if row.score is not None and not self.file_order:
            self.scores.append((row.rank, row.score, line))

    def finish_group(self) -> None:
        if self.caption is None:
            return
        if self.grouped:
            self.scores.sort(key=lambda item: (item[0], item[2]))  # by rank, then file order
            for (prev_rank, prev_score, _), (rank, score, line) in zip(self.scores, self.scores[1:]):
                if score > prev_score:
                    self.issues.add(line, "score", f"score {score:g} at rank {rank} is higher than {prev_score:g} at rank "
                                                   f"{prev_rank} for caption '{self.caption_name}': scores contradict ranks")
        self.done.add(self.caption)
        self.caption = None
        self.ranks, self.items, self.scores = {}, {}, []


def _stream_into_stage(rows, stage: "_StagingTable", issues: IssueCollector, caption_pk: _DatasetIds,
                       clip_pk: _DatasetIds, caption_field: str, clip_field: str, max_depth: int,
                       depth_source: str, *, file_order: bool = False) -> tuple[str, str | None, bool]:
    """Streams valid rows into the staging table; returns (kind, run tag, whether the run was
    grouped by caption, in which case the whole-run checks have already been done)."""
    kind: str | None = None
    first_kind_line = None
    tag = None
    groups = _GroupChecks(issues, file_order=file_order)
    for row in _rows_with_ids(rows, issues, caption_pk, clip_pk):
        line = row.line
        ok = True
        caption = caption_pk.get(row.caption_id)
        if caption is None:
            issues.add(line, row.where and f"{row.where}.caption_id" or caption_field,
                       f"unknown caption id '{row.caption_id}' (not in this dataset)")
            ok = False
        clip = clip_pk.get(row.clip_id)
        if clip is None:
            issues.add(line, row.where and f"{row.where}.clip_id" or clip_field,
                       f"unknown clip id '{row.clip_id}' (not in this dataset)")
            ok = False
        if max_depth and row.rank > max_depth:
            issues.add(line, "rank", f"rank {row.rank} is deeper than the maximum run depth {max_depth} ({depth_source}); "
                                     f"{DEPTH_ADVICE}")
            ok = False
        row_kind = Run.Kind.MOMENT if row.start is not None else Run.Kind.CLIP
        if kind is None:
            kind, first_kind_line = row_kind, line
        elif row_kind != kind:
            issues.add(line, "start", f"this row is a {row_kind} prediction but the run's first row"
                                      f"{' (line %s)' % first_kind_line if first_kind_line else ''} is a {kind} prediction")
            ok = False
        if tag is None and row.tag:
            tag = row.tag
        if ok:
            stage.add((line if line is not None else 0, caption, clip, row.rank, row.score, row.start, row.end))
            if groups.grouped:
                groups.add(caption, row.caption_id, row, (clip,) if row.start is None else (clip, row.start, row.end))
        if issues.full:
            issues.truncated = True  # stop reading: the listing is capped anyway
            break
    groups.finish_group()
    stage.flush()
    return kind or Run.Kind.CLIP, tag, groups.grouped


def _rows_with_ids(rows, issues: IssueCollector, caption_pk: _DatasetIds, clip_pk: _DatasetIds):
    """The rows, a batch at a time once the batch's caption and clip ids have been looked up."""
    for batch in _batches(rows, issues, _StagingTable.LOOKUP_BATCH):
        caption_pk.look_up(row.caption_id for row in batch)
        clip_pk.look_up(row.clip_id for row in batch)
        yield from batch


def _check_whole_run(stage: "_StagingTable", issues: IssueCollector, kind: str, caption_pk: _DatasetIds, cap: int, *,
                     file_order: bool = False) -> None:
    """The group checks as SQL over the staging table, for files whose captions are not grouped."""
    caption_name = {pk: ext for ext, pk in caption_pk.items()}
    for line, caption, rank, first in stage.duplicates(["caption_id", "rank"], cap):
        issues.add(line or None, "rank", f"caption '{caption_name[caption]}' has rank {rank} twice (first on line {first})")
    if file_order:
        return
    same_clip = ["caption_id", "clip_id"] + (["start", '"end"'] if kind == Run.Kind.MOMENT else [])
    for line, caption, _, first in stage.duplicates(same_clip, cap):
        what = "the same moment" if kind == Run.Kind.MOMENT else "the same clip"
        issues.add(line or None, "doc_id", f"caption '{caption_name[caption]}' lists {what} twice (first on line {first})")
    for line, caption, rank, score, prev_rank, prev_score in stage.score_rises(cap):
        issues.add(line or None, "score", f"score {score:g} at rank {rank} is higher than {prev_score:g} at rank "
                                          f"{prev_rank} for caption '{caption_name[caption]}': scores contradict ranks")


class _StagingTable:
    COLUMNS = ("line_no", "caption_id", "clip_id", "rank", "score", "start", '"end"')
    BATCH = 50_000
    #: rows read ahead so their ids are looked up together (_DatasetIds)
    LOOKUP_BATCH = 5_000

    def __init__(self) -> None:
        self.name = f"rejudge_stage_{uuid.uuid4().hex[:16]}"
        self.vendor = connection.vendor
        self.buffer: list[tuple] = []
        with connection.cursor() as cursor:
            cursor.execute(
                f"CREATE TEMPORARY TABLE {self.name} (line_no integer, caption_id bigint, clip_id bigint, "
                f'rank integer, score double precision, start double precision, "end" double precision)'
            )

    def add(self, row: tuple) -> None:
        self.buffer.append(row)
        if len(self.buffer) >= self.BATCH:
            self.flush()

    def flush(self) -> None:
        if not self.buffer:
            return
        with connection.cursor() as cursor:
            if self.vendor == "postgresql":
                text = io.StringIO()
                text.writelines("\t".join(r"\N" if v is None else str(v) for v in row) + "\n" for row in self.buffer)
                text.seek(0)
                cursor.cursor.copy_expert(f"COPY {self.name} FROM STDIN", text)
            else:
                marks = ", ".join(["%s"] * len(self.COLUMNS))
                cursor.executemany(f"INSERT INTO {self.name} VALUES ({marks})", self.buffer)
        self.buffer.clear()

    def duplicates(self, key: list[str], limit: int) -> list[tuple]:
        """Rows whose key occurred on an earlier line: (line, caption, rank, first line)."""
        keys = ", ".join(key)
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT line_no, caption_id, rank, first_line FROM (SELECT line_no, caption_id, rank, "
                f"MIN(line_no) OVER (PARTITION BY {keys}) AS first_line, "
                f"ROW_NUMBER() OVER (PARTITION BY {keys} ORDER BY line_no) AS nth FROM {self.name}) d "
                f"WHERE nth > 1 ORDER BY line_no LIMIT %s", [limit])
            return cursor.fetchall()

    def score_rises(self, limit: int) -> list[tuple]:
        """Rows whose score is higher than the score at the caption's previous (better) rank."""
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT line_no, caption_id, rank, score, prev_rank, prev_score FROM (SELECT line_no, caption_id, "
                f"rank, score, LAG(rank) OVER w AS prev_rank, LAG(score) OVER w AS prev_score FROM {self.name} "
                f"WINDOW w AS (PARTITION BY caption_id ORDER BY rank)) s "
                f"WHERE score > prev_score ORDER BY line_no LIMIT %s", [limit])
            return cursor.fetchall()

    def summary(self) -> tuple[int, int, int]:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT COALESCE(MAX(rank), 0), COUNT(*), COUNT(DISTINCT caption_id) FROM {self.name}")
            return tuple(cursor.fetchone())

    def move_into(self, run_id: int) -> None:
        table = Prediction._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                f'INSERT INTO {table} (run_id, caption_id, clip_id, rank, score, start, "end") '
                f'SELECT %s, caption_id, clip_id, rank, score, start, "end" FROM {self.name}', [run_id])

    def drop(self) -> None:
        if connection.needs_rollback:
            return  # the rollback removes the table; a statement now would mask the original error
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {self.name}")
