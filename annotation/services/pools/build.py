"""Building pools: the union of runs' top-k pairs per caption, deduplicated, with provenance.

Queue order and the redundancy draw come from a seeded hash of the pair (caption, clip)
(annotation/analysis/pair_hashes.py), so they are reproducible and do not depend on which run
brought a pair in or when: adding a run later gives the pairs it shares with the pool the same
treatment.

Pairs that the dataset's imported judgments (published FIRE or qrels files) already cover are not
queued: they are resolved from the imported verdict (or marked a disagreement), so a new run only
queues its unjudged pairs. Such pairs are recognisable as resolved with no vote and not by an admin.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from annotation.analysis.judging.strategies import DESIGN_STRATEGIES
from annotation.analysis.pair_hashes import needs_second_label, queue_positions
from annotation.formats.csv_uploads import csv_rows
from annotation.formats.errors import IssueCollector
from annotation.models import Caption, Clip, PairProvenance, Pool, PooledPair, PoolRun, Prediction, Run
from annotation.selectors.score_matrix_runs import score_matrix_top
from annotation.bulk import rows_insert
from annotation.services.judging import (JudgingError, active_judge_check, judging_settings_check, pool_is_hooked, pool_judging_refresh,
                                         queries_ensure)
from annotation.models.judgment_sets import ImportedJudgment

BATCH = 5000


class PoolError(ValueError):
    """A pool request that cannot be carried out; the message says why (and `param` names the
    parameter when one is to blame)."""

    def __init__(self, message: str = "", *, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


@transaction.atomic
def pool_create(*, dataset, name: str, runs: Iterable[Run], depth: int = 10, include_original_positives: bool = False,
                redundancy: float = 0.1, seed: int = 0, gold_rate: float = 0.0, training_pass_mark: float = 0.8,
                lease_seconds: int = 300, broken_reports_limit: int = 3, judging: dict | None = None,
                skip_unplayable: bool = False, progress: Callable[[int, int | None], None] | None = None) -> Pool:
    """`judging`: the judging strategy and stopping rules by their API names (services/judging
    JUDGING_SETTINGS: strategy, warmup_depth, bandit_variant, sample_rate, top_stratum_depth,
    query_budget, pool_budget, stop_remaining_below, stop_misses_in_a_row). `skip_unplayable`:
    leave out the clips that failed the media check (else they refuse the build); the pool's
    `skipped_unplayable` then names them."""
    runs = list(runs)
    skipped = unplayable_clips_check(dataset, skip=skip_unplayable, runs=runs, depth=depth,
                                     include_original_positives=include_original_positives)
    try:
        judging_fields = judging_settings_check(judging or {}, dataset=dataset)
        active_judge_check(judging_fields.get("judging_strategy", "pool_order"),
                           judging_fields.get("judging_machine_judge"))
    except JudgingError as exc:
        raise PoolError(str(exc)) from exc
    if not runs:
        raise PoolError("a pool needs at least one run")
    for run in runs:
        if run.dataset_id != dataset.pk:
            raise PoolError(f"run '{run.name}' belongs to another dataset")
    if not 1 <= depth <= 1000:
        raise PoolError("depth must be between 1 and 1000")
    if Pool.objects.filter(dataset=dataset, name=name).exists():
        raise PoolError(f"a pool named '{name}' already exists for '{dataset.name}'")
    pool = Pool.objects.create(dataset=dataset, name=name, depth=depth, include_original_positives=include_original_positives,
                               redundancy=redundancy, seed=seed, gold_rate=gold_rate, training_pass_mark=training_pass_mark,
                               lease_seconds=lease_seconds, broken_reports_limit=broken_reports_limit, **judging_fields)
    pool.skipped_unplayable = skipped
    for index, run in enumerate(runs):
        pool_add_run(pool=pool, run=run, _with_originals=include_original_positives and index == 0, _judging=False,
                     _skip_clips=set(skipped.values()))
        if progress:
            progress(index + 1, len(runs))
    try:
        _judging_after_pairs_added(pool, design=True)
    except JudgingError as exc:
        # A design these pairs cannot take (an "active" top stratum over the sample rate): no pool
        # is left half-made.
        pool.delete()
        raise PoolError(str(exc)) from exc
    return pool


def unplayable_clips_check(dataset, *, skip: bool, runs: Iterable[Run] = (), depth: int = 1000,
                           include_original_positives: bool = False) -> dict[str, int]:
    """The clips the pool would hold (the runs' top `depth`, and the original positives' clips when
    included) whose latest media check failed (services/media/check.py), as {external id: pk}: a
    PoolError naming them unless `skip` (then the build leaves them out). A clip no pair of this
    pool shows (a video nobody ranked) does not hold the build back; clips never checked neither."""
    runs = list(runs)
    shown = Q(pk__in=Prediction.objects.filter(run__in=runs, rank__lte=depth).values("clip_id"))
    if any(run.scores_file for run in runs):
        shown = Q()  # a score matrix's top clips are read from its file at build time: every clip counts
    elif include_original_positives:
        shown |= Q(pk__in=Caption.objects.filter(dataset=dataset).exclude(original_clip=None).values("original_clip_id"))
    failed = dict(Clip.objects.filter(shown, dataset=dataset, media_check__playable=False)
                  .order_by("external_id").values_list("external_id", "pk"))
    if failed and not skip:
        named = ", ".join(list(failed)[:10]) + (f" and {len(failed) - 10} more" if len(failed) > 10 else "")
        raise PoolError(f"{len(failed)} clips of '{dataset.name}' failed the media check ({named}): prepare them "
                        "(manage.py prepare_media, or the dataset page's problems), or build with skip_unplayable "
                        "to leave them out", param="skip_unplayable")
    return failed


def _judging_after_pairs_added(pool: Pool, *, design: bool) -> None:
    """New pairs get their query rows and, under a strategy, their place in its order."""
    if pool_is_hooked(pool):
        pool_judging_refresh(pool=pool, design=design)
    else:
        queries_ensure(pool)


@transaction.atomic
def pool_add_run(*, pool: Pool, run: Run, _with_originals: bool = False, _judging: bool = True,
                 _skip_clips: set[int] = frozenset()) -> int:
    """Adds a run's top-k pairs that are not in the pool yet (queued; existing labels stay) and
    records the run's provenance for every pair it proposed. Returns the number of new pairs."""
    if run.dataset_id != pool.dataset_id:
        raise PoolError(f"run '{run.name}' belongs to another dataset")
    if run.kind == Run.Kind.MOMENT:
        raise PoolError(f"run '{run.name}' is a moment run; build a moment pool for it")
    if PoolRun.objects.filter(pool=pool, run=run).exists():
        raise PoolError(f"run '{run.name}' is already in pool '{pool.name}'")
    sampled = pool.judging_strategy in DESIGN_STRATEGIES
    if _judging and sampled and PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL, vote_count__gt=0).exists():
        raise PoolError(f"pool '{pool.name}' judges a sample and has labels: a new run would change the design's "
                        "inclusion probabilities; build a new pool")
    matrix_top = None
    if run.scores_file:
        # A score matrix run: its top k per caption come from the stored scores (one pair each).
        matrix_top = score_matrix_top(run=run, depth=pool.depth)
        pairs = np.column_stack(matrix_top[:2]).reshape(-1, 2)
    else:
        candidates = (Prediction.objects.filter(run=run, rank__lte=pool.depth)
                      .values_list("caption_id", "clip_id").distinct().order_by())
        pairs = np.array(list(candidates), dtype=np.int64).reshape(-1, 2)
    if _with_originals:
        originals = np.array(list(Caption.objects.filter(dataset=pool.dataset_id, original_clip__isnull=False)
                                  .values_list("id", "original_clip_id")), dtype=np.int64).reshape(-1, 2)
        pairs = np.unique(np.vstack([pairs, originals]), axis=0)
    existing = np.array(list(PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL, start__isnull=True)
                             .values_list("caption_id", "clip_id")), dtype=np.int64).reshape(-1, 2)
    if len(existing) and len(pairs):
        keyed = lambda a: a[:, 0] * (1 << 31) + a[:, 1]  # noqa: E731 - ids stay below 2**31 per table
        pairs = pairs[~np.isin(keyed(pairs), keyed(existing))]
    if _skip_clips and len(pairs):
        pairs = pairs[~np.isin(pairs[:, 1], list(_skip_clips))]
    added = _insert_pairs(pool, pairs)
    if matrix_top is None:
        _record_provenance(pool, run)
    else:
        _record_matrix_provenance(pool, run, *matrix_top)
    _apply_imported_judgments(pool)
    PoolRun.objects.create(pool=pool, run=run, pairs_added=added)
    if _judging:
        _judging_after_pairs_added(pool, design=sampled)
    return added


def _apply_imported_judgments(pool: Pool) -> int:
    """Resolves the pool's untouched pairs (open, no vote, lease or broken report) that imported
    judgments cover, instead of leaving them in the queue. Returns how many it took."""
    untouched = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL, start__isnull=True,
                                          state=PooledPair.State.OPEN, vote_count=0, active_leases=0, broken_reports=0)
    now = timezone.now()
    taken = 0
    for label, state, resolved_label in (
            (ImportedJudgment.Label.RELEVANT, PooledPair.State.RESOLVED, PooledPair.Answer.RELEVANT),
            (ImportedJudgment.Label.NOT_RELEVANT, PooledPair.State.RESOLVED, PooledPair.Answer.NOT_RELEVANT),
            (ImportedJudgment.Label.DISAGREEMENT, PooledPair.State.DISAGREEMENT, "")):
        judged = ImportedJudgment.objects.filter(dataset_id=pool.dataset_id, caption_id=OuterRef("caption_id"),
                                                 clip_id=OuterRef("clip_id"), label=label)
        taken += untouched.filter(Exists(judged)).update(state=state, resolved_label=resolved_label, required_labels=1,
                                                         available=False, priority=0,
                                                         resolved_at=now if resolved_label else None)
    return taken


PAIR_COPY_FIELDS = ["pool", "caption", "clip", "role", "is_original_positive", "required_labels", "vote_count",
                    "active_leases", "broken_reports", "state", "available", "priority", "queue_order", "resolved_label",
                    "resolved_by_admin", "known_answer", "explanation", "adjudication_note", "created_at",
                    "inclusion_probability"]


def _insert_pairs(pool: Pool, pairs: np.ndarray) -> int:
    if not len(pairs):
        return 0
    captions, clips = pairs[:, 0], pairs[:, 1]
    caption_key = dict(Caption.objects.filter(dataset=pool.dataset_id).values_list("id", "external_id"))
    clip_key = dict(Clip.objects.filter(dataset=pool.dataset_id).values_list("id", "external_id"))
    caption_keys, clip_keys = [caption_key[int(c)] for c in captions], [clip_key[int(v)] for v in clips]
    order = queue_positions(caption_keys, clip_keys, pool.seed)
    double = needs_second_label(caption_keys, clip_keys, pool.seed, pool.redundancy)
    originals = set(Caption.objects.filter(dataset=pool.dataset_id, original_clip__isnull=False)
                    .values_list("id", "original_clip_id"))
    now = timezone.now()
    rows_insert(PooledPair, PAIR_COPY_FIELDS, (
        (pool.pk, int(c), int(v), PooledPair.Role.POOL, (int(c), int(v)) in originals, 2 if d else 1, 0, 0, 0,
         PooledPair.State.OPEN, True, 0, int(o), "", False, "", "", "", now, 1.0)
        for c, v, o, d in zip(captions, clips, order, double)))
    return len(pairs)


def _record_provenance(pool: Pool, run: Run) -> None:
    """One INSERT ... SELECT: every pool pair the run proposed within the pool depth, with its rank."""
    pair_t, pred_t = PooledPair._meta.db_table, Prediction._meta.db_table
    prov_t = PairProvenance._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # The pairs were just bulk-inserted: without fresh statistics the planner takes the
            # table for nearly empty and joins with a nested loop, which never ends at 500k pairs.
            cursor.execute(f"ANALYZE {pair_t}")
            cursor.execute(f"ANALYZE {pred_t}")
        cursor.execute(
            f"INSERT INTO {prov_t} (pair_id, run_id, rank) "
            f"SELECT pp.id, p.run_id, MIN(p.rank) FROM {pred_t} p JOIN {pair_t} pp "
            f"ON pp.pool_id = %s AND pp.role = 'pool' AND pp.start IS NULL AND pp.caption_id = p.caption_id AND pp.clip_id = p.clip_id "
            f"WHERE p.run_id = %s AND p.rank <= %s GROUP BY pp.id, p.run_id",
            [pool.pk, run.pk, pool.depth])


def _record_matrix_provenance(pool: Pool, run: Run, captions: np.ndarray, clips: np.ndarray, ranks: np.ndarray) -> None:
    """The same rows as _record_provenance, from a matrix run's top k (each clip once per caption)."""
    pair_of = {(c, v): pk for pk, c, v in PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL,
                                                                    start__isnull=True)
               .values_list("pk", "caption_id", "clip_id").iterator(chunk_size=BATCH)}
    rows_insert(PairProvenance, ["pair", "run", "rank"],
                ((pair_of[(c, v)], run.pk, r) for c, v, r in zip(captions.tolist(), clips.tolist(), ranks.tolist())
                 if (c, v) in pair_of))


def known_pairs_add(*, pool: Pool, items: Iterable[dict]) -> int:
    """Adds gold or training pairs with their answers. Items: caption and clip external ids,
    answer ('relevant'/'not_relevant'), role ('gold'/'training'), optional explanation.
    All or none: any problem raises PoolError naming the item and field."""
    issues = IssueCollector("items")
    objects = _known_pairs_check(pool, list(enumerate(items, start=1)), issues)
    if issues:
        raise PoolError("; ".join(f"item {i.line}, field '{i.field}': {i.message}" for i in issues.issues))
    return _known_pairs_save(pool, objects)


def known_pairs_import_csv(*, pool: Pool, content: bytes, source_name: str = "known_pairs.csv") -> int:
    """Known pairs from a CSV with header caption,clip,answer[,role][,explanation]; all or none.
    Problems raise ImportRejected, each naming the file, the line and the field."""
    issues = IssueCollector(source_name)
    rows = csv_rows(content, issues, required=("caption", "clip", "answer"), optional=("role", "explanation"))
    if not rows and not issues:
        issues.add(None, None, "the file lists no pairs")
    objects = _known_pairs_check(pool, [(line, row | {"role": row.get("role") or "gold"}) for line, row in rows], issues)
    issues.raise_if_any()
    return _known_pairs_save(pool, objects)


def _known_pairs_check(pool: Pool, numbered: list[tuple[int, dict]], issues: IssueCollector) -> list[PooledPair]:
    captions = dict(Caption.objects.filter(dataset=pool.dataset_id).values_list("external_id", "id"))
    clips = dict(Clip.objects.filter(dataset=pool.dataset_id).values_list("external_id", "id"))
    objects, first_on = [], {}
    unit = "item" if issues.file == "items" else "line"  # JSON items are numbered, CSV rows are lines
    for number, item in numbered:
        caption, clip = captions.get(str(item.get("caption", ""))), clips.get(str(item.get("clip", "")))
        role, answer = item.get("role", "gold"), item.get("answer")
        if caption is None:
            issues.add(number, "caption", f"unknown caption id '{item.get('caption')}'")
        if clip is None:
            issues.add(number, "clip", f"unknown clip id '{item.get('clip')}'")
        # The same pair twice in one role would break the pool's unique constraint on saving.
        if caption and clip and first_on.setdefault((role, caption, clip), number) != number:
            issues.add(number, "clip", f"caption '{item.get('caption')}' and clip '{item.get('clip')}' are already "
                                       f"listed as {role} (first as {unit} {first_on[(role, caption, clip)]})")
        if role not in (PooledPair.Role.GOLD, PooledPair.Role.TRAINING):
            issues.add(number, "role", f"'{role}' is not 'gold' or 'training'")
        if answer not in PooledPair.Answer.values:
            issues.add(number, "answer", f"'{answer}' is not 'relevant' or 'not_relevant'")
        if caption and clip and not issues:
            objects.append(PooledPair(pool=pool, caption_id=caption, clip_id=clip, role=role, known_answer=answer,
                                      explanation=item.get("explanation", ""), required_labels=1,
                                      available=False, queue_order=number))
    return objects


@transaction.atomic
def _known_pairs_save(pool: Pool, objects: list[PooledPair]) -> int:
    existing = set(PooledPair.objects.filter(pool=pool, role__in=[PooledPair.Role.GOLD, PooledPair.Role.TRAINING])
                   .values_list("role", "caption_id", "clip_id"))
    fresh = [o for o in objects if (o.role, o.caption_id, o.clip_id) not in existing]
    PooledPair.objects.bulk_create(fresh)
    return len(fresh)


POOL_SETTINGS = ("lease_seconds", "gold_rate", "training_pass_mark", "redundancy")


@transaction.atomic
def pool_settings_update(*, pool: Pool, changes: dict) -> dict:
    """Change a pool's lease length, gold rate, training pass mark or redundancy after it was built.

    What each change affects: `lease_seconds`, leases handed out from now on (live ones keep their
    expiry); `gold_rate`, assignments from now on; `training_pass_mark`, training finished from now
    on (a rater already passed or failed keeps that result; 'Retake training' re-judges them).
    `redundancy`: pairs nobody has labelled or holds a lease on are drawn again with the new rate
    (the same seeded draw as at build time, so raising the rate only adds second labels and
    lowering it only removes them); pairs already labelled or leased keep their draw, and pairs a
    later run brings in use the new rate. Returns the pool's settings and `redrawn`, how many
    pairs changed their number of labels asked."""
    unknown = set(changes) - set(POOL_SETTINGS)
    if unknown:
        raise PoolError(f"cannot change {', '.join(sorted(unknown))}; only {', '.join(POOL_SETTINGS)}")
    locked = Pool.objects.select_for_update().get(pk=pool.pk)
    for field, value in changes.items():
        setattr(locked, field, value)
    locked.save(update_fields=list(changes) or None)
    redrawn = 0
    if "redundancy" in changes:
        redrawn = _redraw_redundancy(locked)
    pool.__dict__.update({field: getattr(locked, field) for field in POOL_SETTINGS})
    return {**{field: getattr(locked, field) for field in POOL_SETTINGS}, "redrawn": redrawn}


def _redraw_redundancy(pool: Pool) -> int:
    untouched = (PooledPair.objects.select_for_update()
                 .filter(pool=pool, role=PooledPair.Role.POOL, state=PooledPair.State.OPEN, vote_count=0, active_leases=0)
                 .values_list("pk", "caption__external_id", "clip__external_id", "required_labels"))
    rows = list(untouched)
    if not rows:
        return 0
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    double = needs_second_label([r[1] for r in rows], [r[2] for r in rows], pool.seed, pool.redundancy)
    current = np.array([r[3] for r in rows], dtype=np.int64)
    wanted = np.where(double, 2, 1)
    redrawn = 0
    for required in (1, 2):
        change = ids[(wanted == required) & (current != required)]
        for start in range(0, len(change), BATCH):
            redrawn += PooledPair.objects.filter(pk__in=change[start:start + BATCH].tolist()).update(required_labels=required)
    return redrawn
