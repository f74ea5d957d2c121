"""Import of a dataset (clips and captions) from a manifest or a benchmark's own file."""
from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import connection, transaction

from annotation.formats.datasets import READERS, CaptionRecord, ClipRecord, MediaTemplate, guess_dataset_format
from annotation.formats.errors import FileIssue, ImportRejected, IssueCollector
from annotation.analysis.storable_text import text_problem
from annotation.formats.text_lines import LineSource, ProgressFn
from annotation.models import Caption, Clip, Dataset
from annotation.bulk import ids_reserve, rows_insert
from annotation.services.datasets.counts import dataset_counts_add

_CLIP_FIELDS = ["id", "dataset", "external_id", "video_id", "media", "start", "end", "duration"]
_CAPTION_FIELDS = ["id", "dataset", "external_id", "text", "original_clip"]


def dataset_import(*, path: Path, name: str, fmt: str | None = None, media_template: str | None = None,
                   description: str = "", source_name: str | None = None,
                   progress: ProgressFn | None = None) -> Dataset:
    """Reads the whole file and creates the dataset, its clips and captions, or nothing.

    Raises ImportRejected listing every problem (up to the configured cap) with file, line and
    field. Rows are inserted in batches while reading, inside one transaction that is rolled
    back if any problem was found, so memory holds only the id maps, not the file.
    """
    path = Path(path)
    display = source_name or path.name
    cap = settings.REJUDGE["IMPORT_ERROR_CAP"]
    batch_size = settings.REJUDGE["IMPORT_BATCH_SIZE"]
    issues = IssueCollector(display, cap)
    name = (name or "").strip()
    if not name:
        raise ImportRejected([FileIssue(display, None, "name", "a dataset needs a name")])
    if problem := text_problem(name, max_length=200):
        raise ImportRejected([FileIssue(display, None, "name", f"the dataset name {problem}")])
    try:
        fmt = fmt or guess_dataset_format(path)
    except ValueError as exc:
        raise ImportRejected([FileIssue(display, None, "format", str(exc))]) from exc
    try:
        template = MediaTemplate(media_template)
    except ValueError as exc:
        raise ImportRejected([FileIssue(display, None, "media_template", str(exc))]) from exc
    if fmt not in READERS:
        raise ImportRejected([FileIssue(display, None, "format", f"unknown dataset format '{fmt}'; use one of {', '.join(READERS)}")])
    if Dataset.objects.filter(name=name).exists():
        raise ImportRejected([FileIssue(display, None, "name", f"a dataset named '{name}' already exists")])

    source = LineSource(path, issues, progress)
    # PostgreSQL gets the rows by COPY with ids taken from the tables' sequences: building a model
    # instance per row made a 1,000,000-clip collection take minutes (bench_trecvid_judgments.py).
    copy = connection.vendor == "postgresql"
    with transaction.atomic():
        dataset = Dataset.objects.create(name=name, description=description, source_format=fmt, source_name=display)
        clip_pk: dict[str, int] = {}
        clip_line: dict[str, int | None] = {}
        caption_line: dict[str, int | None] = {}
        clip_batch: list[ClipRecord] = []
        caption_batch: list[CaptionRecord] = []
        pending: list[tuple[CaptionRecord, int]] = []  # captions whose clip had not been seen yet
        originals = [0]  # captions naming their clip (all of them resolved, or the import fails)

        def flush_clips() -> None:
            if copy:
                ids = ids_reserve(Clip, len(clip_batch))
                rows_insert(Clip, _CLIP_FIELDS, ((pk, dataset.pk, r.external_id, r.video_id, r.media, r.start, r.end,
                                                  r.duration) for pk, r in zip(ids, clip_batch)))
            else:
                ids = [clip.pk for clip in Clip.objects.bulk_create([
                    Clip(dataset=dataset, external_id=r.external_id, video_id=r.video_id, media=r.media, start=r.start,
                         end=r.end, duration=r.duration) for r in clip_batch])]
            clip_pk.update(zip((r.external_id for r in clip_batch), ids))
            clip_batch.clear()

        def flush_captions() -> None:
            flush_clips()  # a caption may refer to a clip still in the batch
            targets = [clip_pk.get(r.clip_external_id) if r.clip_external_id else None for r in caption_batch]
            if copy:
                ids = ids_reserve(Caption, len(caption_batch))
                rows_insert(Caption, _CAPTION_FIELDS, ((pk, dataset.pk, r.external_id, r.text, target)
                                                       for pk, r, target in zip(ids, caption_batch, targets)))
            else:
                ids = [caption.pk for caption in Caption.objects.bulk_create([
                    Caption(dataset=dataset, external_id=r.external_id, text=r.text, original_clip_id=target)
                    for r, target in zip(caption_batch, targets)])]
            originals[0] += sum(1 for r in caption_batch if r.clip_external_id)
            pending.extend((r, pk) for r, pk, target in zip(caption_batch, ids, targets)
                           if r.clip_external_id and target is None)
            caption_batch.clear()

        for record in READERS[fmt](source, issues, template):
            if isinstance(record, ClipRecord):
                if record.external_id in clip_line:
                    issues.add(record.line, "id", f"clip id '{record.external_id}' is already defined"
                               + _on_line(clip_line[record.external_id]))
                    continue
                clip_line[record.external_id] = record.line
                if not issues:
                    clip_batch.append(record)
                    if len(clip_batch) >= batch_size:
                        flush_clips()
            else:
                if record.external_id in caption_line:
                    issues.add(record.line, "id", f"caption id '{record.external_id}' is already defined"
                               + _on_line(caption_line[record.external_id]))
                    continue
                caption_line[record.external_id] = record.line
                if not issues:
                    caption_batch.append(record)
                    if len(caption_batch) >= batch_size:
                        flush_captions()
        source.check_not_empty()
        if not issues:
            flush_captions()
            _resolve_pending(pending, clip_pk, issues)
        if not clip_line and not issues:
            issues.add(None, None, "the file defines no clips")
        if issues:
            transaction.set_rollback(True)
            rejected = ImportRejected(sorted(issues.issues, key=lambda i: (i.line is None, i.line or 0)),
                                      truncated=issues.truncated)
        else:
            dataset_counts_add(dataset=dataset, clips=len(clip_pk), captions=len(caption_line),
                               original_positives=originals[0])
    if issues:
        raise rejected
    return dataset


def _resolve_pending(pending: list[tuple[CaptionRecord, int]], clip_pk: dict[str, int], issues: IssueCollector) -> None:
    updates = []
    for record, caption_pk in pending:
        target = clip_pk.get(record.clip_external_id)
        if target is None:
            issues.add(record.line, "clip", f"caption '{record.external_id}' refers to unknown clip '{record.clip_external_id}'")
        else:
            updates.append(Caption(pk=caption_pk, original_clip_id=target))
    if updates and not issues:
        Caption.objects.bulk_update(updates, ["original_clip"], batch_size=5000)


def _on_line(line: int | None) -> str:
    return f" on line {line}" if line else ""

