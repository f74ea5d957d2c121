"""Importing an automatic assessor's verdicts as a machine judge of a pool or a judgment set.

All or nothing: every problem of the file is collected with its file, line and field (unknown
caption or clip, a pair outside the pool or set, a pair judged twice, a bad label or score, two
models in one file), and if there is any nothing is written. The verdicts go to MachineJudgment,
never to Label (see the package's docstring)."""
from __future__ import annotations

from pathlib import Path

from django.db import IntegrityError, transaction

from annotation.formats.errors import IssueCollector
from annotation.formats.machine_judgments import file_format_from_name, read_machine_judgments
from annotation.formats.text_lines import file_checksum
from annotation.models import Caption, Clip, Dataset, MachineJudge, MachineJudgment, Pool, PooledPair
from annotation.models.judgment_sets import ImportedJudgment, JudgmentSet
from annotation.services.machine_judges.errors import MachineJudgeError

BATCH = 5000


def _judgeable_pairs(*, pool: Pool | None, judgment_set: JudgmentSet | None) -> set[tuple[int, int]]:
    if pool is not None:
        rows = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL).values_list("caption_id", "clip_id")
    else:
        rows = ImportedJudgment.objects.filter(judgment_set=judgment_set).values_list("caption_id", "clip_id")
    return set(rows)


@transaction.atomic
def machine_judge_import(*, dataset: Dataset, path: Path, name: str, pool: Pool | None = None,
                         judgment_set: JudgmentSet | None = None, file_format: str | None = None,
                         source_name: str = "", model_name: str = "", prompt_version: str = "",
                         created_by=None, progress=None) -> MachineJudge:
    """Reads the file and stores it as a machine judge (see this module's docstring). `progress(done,
    total)` hears of the reading in bytes, then of the verdicts stored."""
    name = machine_judge_import_check(dataset=dataset, name=name, pool=pool, judgment_set=judgment_set)
    shown_name = source_name or Path(path).name
    issues = IssueCollector(shown_name)
    # An upload is stored under a name of its own: the name it came with says its format.
    file_format = file_format or (file_format_from_name(source_name) if source_name else None)
    parsed = read_machine_judgments(Path(path), issues, file_format=file_format, progress=progress)
    captions = dict(Caption.objects.filter(dataset=dataset).values_list("external_id", "id"))
    clips = dict(Clip.objects.filter(dataset=dataset).values_list("external_id", "id"))
    allowed = _judgeable_pairs(pool=pool, judgment_set=judgment_set)
    if not allowed:
        issues.add(None, None, f"'{pool or judgment_set}' has no pairs to judge")
    where = "the pool's pairs" if pool is not None else "the pairs judgment set judges"
    seen: dict[tuple[int, int], int] = {}
    rows = []
    for row in parsed.rows:
        caption_id, clip_id = captions.get(row.query), clips.get(row.item)
        if caption_id is None:
            issues.add(row.line, "query", f"no caption with id {row.query!r} in dataset '{dataset.name}'")
        if clip_id is None:
            issues.add(row.line, "item", f"no clip with id {row.item!r} in dataset '{dataset.name}'")
        if caption_id is None or clip_id is None:
            continue
        key = (caption_id, clip_id)
        if key in seen:
            issues.add(row.line, "item", f"the pair ({row.query}, {row.item}) is judged again (first on line {seen[key]})")
            continue
        seen[key] = row.line
        if allowed and key not in allowed:
            issues.add(row.line, "item", f"the pair ({row.query}, {row.item}) is not among {where}")
            continue
        rows.append((key, row))
    issues.raise_if_any()
    counts = {"records": len(parsed.rows), "relevant": sum(r.label == "relevant" for _, r in rows),
              "not_relevant": sum(r.label == "not_relevant" for _, r in rows),
              "with_score": sum(r.score is not None for _, r in rows), "judgeable_pairs": len(allowed)}
    try:
        judge = MachineJudge.objects.create(
            dataset=dataset, pool=pool, judgment_set=judgment_set, name=name,
            model_name=(model_name or parsed.model)[:300], prompt_version=(prompt_version or parsed.prompt)[:300],
            source_name=shown_name[:500], checksum=file_checksum(Path(path)), counts=counts, created_by=created_by)
    except IntegrityError as exc:  # a concurrent import took the name
        raise MachineJudgeError(f"dataset '{dataset.name}' already has a machine judge named '{name}'") from exc
    for start in range(0, len(rows), BATCH):
        MachineJudgment.objects.bulk_create(
            [MachineJudgment(judge=judge, caption_id=key[0], clip_id=key[1], label=row.label, score=row.score,
                             source_record=f"line {row.line}") for key, row in rows[start:start + BATCH]])
        if progress:
            progress(min(start + BATCH, len(rows)), len(rows), "storing the verdicts")
    return judge


def machine_judge_import_check(*, dataset: Dataset, name: str, pool: Pool | None = None,
                               judgment_set: JudgmentSet | None = None) -> str:
    """What can be refused before the file is read (an upload is refused before its job starts):
    one target of the dataset, a name not taken. Returns the name as stored."""
    if (pool is None) == (judgment_set is None):
        raise MachineJudgeError("attach the machine judge to a pool or to a judgment set (one of them)")
    target = pool or judgment_set
    if target.dataset_id != dataset.pk:
        raise MachineJudgeError(f"'{target}' belongs to another dataset than '{dataset.name}'")
    name = (name or "").strip()[:200]
    if not name:
        raise MachineJudgeError("a machine judge needs a name")
    if MachineJudge.objects.filter(dataset=dataset, name=name).exists():
        raise MachineJudgeError(f"dataset '{dataset.name}' already has a machine judge named '{name}'")
    return name
