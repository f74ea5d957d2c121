"""A pool's judging plan: strategy and stopping rules, set at build time and changed while
judging; the pool-wide recomputation they need; and an admin's resume of a stopped query or pool.

Recomputing walks the pool's queries in batches of QUERY_BATCH, each batch one transaction that
holds those queries' rows (the lock order of services/judging/order.py), so labels keep flowing
meanwhile and a half-done recomputation is never visible within a query.
"""
from __future__ import annotations

import copy

import numpy as np
from django.db import transaction
from django.utils import timezone

from annotation.analysis.judging.settings import JUDGING_PARAMS
from annotation.analysis.judging.strategies import DESIGN_STRATEGIES, inclusion_probabilities
from annotation.analysis.params import ParamInvalid
from annotation.analysis.pair_hashes import queue_positions
from annotation.analysis.votes import has_room
from annotation.models import MachineJudge, Pool, PooledPair, PoolQuery
from annotation.services.operations.operation import refusal_naming
from annotation.services.judging.active import active_inclusion, order_known, snapshots_confidences
from annotation.services.judging.errors import JudgingError
from annotation.services.judging.order import (NOT_SAMPLED, OPEN, STOPPED, active_scale_draw, active_scale_of, n_queries_of,
                                               pair_column_write,
                                               queries_snapshots, query_lock, query_reopen_pairs, query_refresh,
                                               query_snapshot, strategy_params, write_keys)

QUERY_BATCH = 500

# API / command-line name (declared in analysis/judging/settings.py) -> Pool field: the setting's
# name prefixed, a `machine_judge` by name (a judge of the pool's dataset, for "active").
JUDGING_SETTINGS = {name: f"judging_{name}" for name in JUDGING_PARAMS}
# Settings that define a "sampled" or "active" design: fixed once judging started, or the
# inclusion probabilities of pairs judged before and after would describe different designs.
DESIGN_SETTINGS = ("sample_rate", "top_stratum_depth", "warmup_depth", "machine_judge")


def judging_settings_check(settings: dict, *, dataset=None) -> dict:
    """Field name -> value for the Pool, from API names, each value checked against its declaration
    (analysis/judging/settings.py); raises JudgingError naming the setting (`param`).
    `dataset`: where a `machine_judge` name is looked up (null clears it)."""
    unknown = sorted(set(settings) - set(JUDGING_SETTINGS))
    if unknown:
        raise _refused(f"unknown judging setting(s): {', '.join(unknown)}", unknown[0])
    out = {}
    for name, value in settings.items():
        spec = JUDGING_PARAMS[name]
        if value is not None or not spec.nullable:
            try:
                value = spec.check(value, name=name)
            except ParamInvalid as exc:
                raise _refused(str(exc), name) from None
        out[JUDGING_SETTINGS[name]] = value
    if settings.get("machine_judge") is not None:
        judge = MachineJudge.objects.filter(dataset=dataset, name=settings["machine_judge"]).first() if dataset else None
        if judge is None:
            raise _refused(f"machine_judge: no machine judge named '{settings['machine_judge']}' in this dataset",
                           "machine_judge")
        out["judging_machine_judge"] = judge
    return out


def _refused(message: str, param: str) -> JudgingError:
    return refusal_naming(JudgingError(message), param)


def active_judge_check(strategy: str, judge) -> None:
    if strategy == "active" and judge is None:
        raise JudgingError("strategy: 'active' needs a machine_judge (the judge whose uncertainty draws the sample)")


def judging_settings_of(pool: Pool) -> dict:
    judge = pool.judging_machine_judge if pool.judging_machine_judge_id else None
    return {name: getattr(pool, field) for name, field in JUDGING_SETTINGS.items() if name != "machine_judge"} | {
        "machine_judge": judge.name if judge else None} | {
        "stopped_reason": pool.judging_stopped_reason or None, "stopped_at": pool.judging_stopped_at}


def _own_design(pool: Pool) -> bool:
    return hasattr(pool, "moment_design") or hasattr(pool, "sampled_design")


def queries_ensure(pool: Pool) -> int:
    """A PoolQuery row for every caption of the pool that has none, in caption id order after the
    existing slots. Returns how many were added."""
    have = set(PoolQuery.objects.filter(pool=pool).values_list("caption_id", flat=True))
    captions = sorted(set(PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL)
                          .values_list("caption_id", flat=True).distinct().order_by()) - have)
    start = n_queries_of(pool.pk)
    PoolQuery.objects.bulk_create([PoolQuery(pool=pool, caption_id=c, slot=start + i) for i, c in enumerate(captions)],
                                  batch_size=5000)
    return len(captions)


def pool_judging_refresh(*, pool: Pool, now=None, design: bool = False, reopen: bool = False, progress=None) -> dict:
    """Recounts, stops and reorders every query of the pool (after a build, an added run, a
    settings change or a pool resume). `design`: also (re)draw a "sampled" design's inclusion
    probabilities and sample (only before judging starts). `reopen`: give the stopped pairs of
    queries that are not stopped themselves back to the queue (a pool resume)."""
    now = now or timezone.now()
    queries_ensure(pool)
    n_queries = n_queries_of(pool.pk)
    if pool.judging_strategy == "pool_order":
        reordered = _pool_order_keys(pool)
    else:
        reordered = 0
    stopped = 0
    if design and pool.judging_strategy == "active":
        # one allocation over the whole pool, before any query's pi are stored
        active_scale_draw(pool, strategy_params(pool))
    for start in range(0, n_queries, QUERY_BATCH):
        with transaction.atomic():
            batch = list(PoolQuery.objects.select_for_update().filter(pool=pool, slot__gte=start,
                                                                      slot__lt=start + QUERY_BATCH).order_by("pk"))
            if reopen:
                for query in batch:
                    if not query.stopped_reason:
                        query_reopen_pairs(pool.pk, query.caption_id)
            snapshots = queries_snapshots(pool.pk, [q.caption_id for q in batch])
            if design:
                _design_apply(pool, batch, snapshots)
                snapshots = queries_snapshots(pool.pk, [q.caption_id for q in batch])
            keys = {}
            for query in batch:
                was = query.stopped_reason
                query_refresh(pool, query, now=now, n_queries=n_queries, snapshot=snapshots[query.caption_id], keys_out=keys)
                stopped += bool(query.stopped_reason and not was)
            reordered += write_keys(keys)
        if progress:
            progress(min(start + QUERY_BATCH, n_queries), n_queries)
    return {"queries": n_queries, "reordered": reordered, "stopped": stopped}


def _pool_order_keys(pool: Pool) -> int:
    """Today's order: the seeded hash of (caption, clip) that a pool's build gives."""
    rows = list(PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL, state__in=[OPEN, STOPPED], vote_count=0)
                .values_list("pk", "caption__external_id", "clip__external_id", "queue_order"))
    if not rows:
        return 0
    keys = queue_positions([r[1] for r in rows], [r[2] for r in rows], pool.seed)
    with transaction.atomic():
        return write_keys({r[0]: int(k) for r, k in zip(rows, keys.tolist()) if r[3] != int(k)})


def _design_apply(pool: Pool, batch: list[PoolQuery], snapshots: dict) -> None:
    """Stores each pair's inclusion probability under the pool's design, and takes "sampled"
    pairs outside the sample out of the queue (or puts them back when the design changes)."""
    from annotation.analysis.judging.strategies import query_order

    params = strategy_params(pool)
    probability, leave_out, bring_back = {}, [], []
    confidences = (snapshots_confidences(pool.judging_machine_judge_id, {q.caption_id: snapshots[q.caption_id] for q in batch})
                   if pool.judging_strategy == "active" else {})
    for query in batch:
        snap = snapshots[query.caption_id]
        n = len(snap.pair_ids)
        if not n:
            continue
        if pool.judging_strategy == "active":
            pi = active_inclusion(pool, query.caption_id, snap, params, active_scale_of(pool, params),
                                  confidence=confidences[query.caption_id])
        elif pool.judging_strategy == "sampled":
            pi = inclusion_probabilities(snap.run_lists, params=params, query_key=int(query.caption_id), n_pairs=n)
        else:
            pi = np.ones(n)
        in_sample = set(query_order(pool.judging_strategy, snap.run_lists, {}, params=params, known=order_known(pool, snap),
                                    query_key=int(query.caption_id), n_pairs=n, inclusion=pi).tolist()) \
            if pool.judging_strategy in DESIGN_STRATEGIES else set(range(n))
        for i, pair_id in enumerate(snap.pair_ids.tolist()):
            probability[pair_id] = float(pi[i])
            if snap.states[i] in (OPEN, STOPPED) and snap.vote_counts[i] == 0 and i not in in_sample:
                leave_out.append(pair_id)
            elif snap.states[i] == NOT_SAMPLED and i in in_sample:
                bring_back.append(pair_id)
    pair_column_write("inclusion_probability", probability)
    for start in range(0, len(leave_out), 2000):
        PooledPair.objects.filter(pk__in=leave_out[start:start + 2000]).update(state=NOT_SAMPLED, available=False, priority=0)
    for start in range(0, len(bring_back), 2000):
        for pair in PooledPair.objects.filter(pk__in=bring_back[start:start + 2000]):
            pair.state = OPEN
            pair.available = has_room(required=pair.required_labels, votes=pair.vote_count, leases=pair.active_leases)
            pair.save(update_fields=["state", "available"])


def judging_started(pool: Pool) -> bool:
    return PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL, vote_count__gt=0).exists()


# Above this many pool pairs a settings change recomputes in a job (api/views/pools.py): about
# 1 minute per 100,000 pairs on the reference machine (README).
RECOMPUTE_IN_A_JOB_ABOVE = 50_000


def judging_settings_update(*, pool: Pool, changes: dict, now=None, recompute: bool = True) -> dict:
    """An admin changes the pool's strategy or stopping rules while judging. The new settings
    apply to the next label at once; every query's order and stop state is then recomputed (in
    batches, see pool_judging_refresh). Queries already stopped stay stopped until resumed, even
    if the new rules would not stop them (the admin resumes them). A "sampled" design cannot be
    taken up, dropped or redrawn once any pair has a label."""
    if _own_design(pool):
        raise JudgingError(f"pool '{pool.name}' is a moment or sampled pool: its design sets its order", "conflict")
    fields = judging_settings_check(changes, dataset=pool.dataset)
    new_strategy = fields.get("judging_strategy", pool.judging_strategy)
    active_judge_check(new_strategy, fields.get("judging_machine_judge", pool.judging_machine_judge)
                       if "judging_machine_judge" in fields or pool.judging_machine_judge_id else None)
    design_changed = (new_strategy != pool.judging_strategy and (
        new_strategy in DESIGN_STRATEGIES or pool.judging_strategy in DESIGN_STRATEGIES)) or (
        new_strategy in DESIGN_STRATEGIES and any(JUDGING_SETTINGS[n] in fields and fields[JUDGING_SETTINGS[n]] != getattr(
            pool, JUDGING_SETTINGS[n]) for n in DESIGN_SETTINGS))
    if design_changed and judging_started(pool):
        raise JudgingError("the sampling design cannot change once pairs have labels: its inclusion probabilities "
                           "would mix two designs; build a new pool", "conflict")
    if design_changed and new_strategy == "active":
        # Drawn on a copy first: a design the pool cannot take is refused before anything is saved.
        trial = copy.copy(pool)
        for field, value in fields.items():
            setattr(trial, field, value)
        active_scale_draw(trial, strategy_params(trial), store=False)
    with transaction.atomic():
        locked = Pool.objects.select_for_update().get(pk=pool.pk)
        for field, value in fields.items():
            setattr(locked, field, value)
        locked.save(update_fields=list(fields) or None)
    for field in fields:
        setattr(pool, field, getattr(locked, field))
    if not recompute:  # the caller starts the recomputation as a job
        return judging_settings_of(pool) | {"design": design_changed, "reordered": None, "stopped": None}
    result = pool_judging_refresh(pool=pool, now=now, design=design_changed)
    return judging_settings_of(pool) | {"design": design_changed} | result


@transaction.atomic
def query_resume(*, pool: Pool, caption_id: int, now=None) -> PoolQuery:
    """An admin resumes a stopped query: its stopped pairs come back to the queue in the order
    the strategy gives now, and its budget and misses in a row count again from here."""
    now = now or timezone.now()
    query = query_lock(pool.pk, caption_id)
    if query is None:
        raise JudgingError("the pool has no such query", "not_found")
    if not query.stopped_reason:
        raise JudgingError("the query is not stopped", "conflict")
    pool = Pool.objects.get(pk=pool.pk)
    snapshot = query_snapshot(pool.pk, caption_id)
    query.stopped_reason, query.stopped_at, query.resumed_at = "", None, now
    query.judged_at_resume = len(snapshot.judged) - snapshot.free
    query.save(update_fields=["stopped_reason", "stopped_at", "resumed_at", "judged_at_resume"])
    query_refresh(pool, query, now=now, n_queries=n_queries_of(pool.pk), snapshot=snapshot)
    if not pool.judging_stopped_reason:
        query_reopen_pairs(pool.pk, caption_id)
    return query


def pool_resume(*, pool: Pool, now=None) -> dict:
    """An admin resumes a pool stopped by its budget: the pool budget counts again from here, and
    the pairs of queries that are not stopped themselves come back to the queue."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = Pool.objects.select_for_update().get(pk=pool.pk)
        if not locked.judging_stopped_reason:
            raise JudgingError("the pool is not stopped", "conflict")
        locked.judging_stopped_reason, locked.judging_stopped_at = "", None
        locked.judging_judged_at_resume = sum(PoolQuery.objects.filter(pool=locked).values_list("judged", flat=True))
        locked.save(update_fields=["judging_stopped_reason", "judging_stopped_at", "judging_judged_at_resume"])
    pool.__dict__.update({f: getattr(locked, f) for f in ("judging_stopped_reason", "judging_stopped_at",
                                                           "judging_judged_at_resume")})
    return pool_judging_refresh(pool=locked, now=now, reopen=True)
