"""The media check's console output, shared by check_media, prepare_media and import_dataset."""
from __future__ import annotations

from annotation.models import Dataset
from annotation.services.media.check import media_problem_rows


def media_summary_lines(summary: dict) -> list[str]:
    lines = [f"media check: {summary['playable']:,} of {summary['clips']:,} clips play in browsers; "
             f"{summary['failed']:,} failed ({summary['preparable']:,} fixed by prepare_media)"
             + (f"; {summary['unchecked']:,} not checked" if summary["unchecked"] else "")]
    lines += [f"  {code}: {count:,}" for code, count in summary["problems"].items()]
    return lines


def media_problem_lines(dataset: Dataset, *, limit: int = 50) -> list[str]:
    rows = media_problem_rows(dataset, limit=limit + 1)
    lines = [f"  {r['clip_id']}: {r['problem']} -> {r['fix']}" for r in rows[:limit]]
    if len(rows) > limit:
        lines.append(f"  ... more: the dataset page and GET /api/v1/datasets/{dataset.pk}/media-check/ list all")
    return lines
