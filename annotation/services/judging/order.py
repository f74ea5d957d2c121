"""A query's judging order and stopping, kept in the queue columns of its pairs.

The queue stays one index walk (`pair_queue`: pool, -priority, queue_order over available pool
pairs): a strategy only rewrites `queue_order` of the query's not-yet-started pairs, with the
global key `interleave(position, slot, n_queries)`, so queries take turns and each advances
along its own order. `position` counts the query's pairs already taken out of the order (judged,
started, escalated) before the untouched ones, so a query that has been judged further does not
jump ahead of the others.

Lock order (see services/queue.py): the query's PoolQuery row, then pairs, then leases. Every
writer of a query's order or stop state holds the query row, so two labels on one query cannot
interleave their rewrites, and no one holding a pair waits for a query row that a rewrite holds.

A pair counts as judged for the strategy when it is resolved (by votes, an admin or an imported
judgment) or ends in disagreement (counted not relevant): the first of two labels can still be
overturned, and the order must be a function of final judgments, as the simulation replays
(annotation/analysis/judging/simulation.py). Started pairs are finished first by the queue
(priority 1), so the strategy learns a double-labelled pair's answer soon after its first label.
Redundancy labels never change the order.
"""
from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from django.db import connection

from annotation import prepared
from annotation.analysis.judging.stopping import StoppingRules, query_stop_reason
from annotation.analysis.judging.strategies import (DESIGN_STRATEGIES, StrategyParams, active_pool_scale,
                                                    inclusion_probabilities, interleave,
                                                    prefix_inclusion_probabilities, query_order, sampled_design)
from annotation.analysis.votes import room_sql
from annotation.models import PairProvenance, Pool, PooledPair, PoolQuery
from annotation.services.judging.active import active_inclusion, design_known, order_known, snapshots_confidences
from annotation.services.judging.errors import JudgingError

OPEN, STOPPED, NOT_SAMPLED = PooledPair.State.OPEN, PooledPair.State.STOPPED, PooledPair.State.NOT_SAMPLED
RESOLVED, DISAGREEMENT = PooledPair.State.RESOLVED, PooledPair.State.DISAGREEMENT
JUDGED_STATES = (RESOLVED, DISAGREEMENT)

# True when the pool's labels must go through the judging hook: a strategy other than today's
# order, or any stopping rule. Used inside SQL that joins the pool as `pl`.
JUDGING_HOOKED_SQL = ("(pl.judging_strategy <> 'pool_order' OR pl.judging_query_budget IS NOT NULL "
                      "OR pl.judging_pool_budget IS NOT NULL OR pl.judging_stop_remaining_below IS NOT NULL "
                      "OR pl.judging_stop_misses_in_a_row IS NOT NULL)")


def pool_is_hooked(pool: Pool) -> bool:
    return pool.judging_strategy != "pool_order" or any(
        getattr(pool, name) is not None for name in ("judging_query_budget", "judging_pool_budget",
                                                     "judging_stop_remaining_below", "judging_stop_misses_in_a_row"))


def strategy_params(pool: Pool) -> StrategyParams:
    return StrategyParams(warmup_depth=pool.judging_warmup_depth, seed=int(pool.seed),
                          bandit_variant=pool.judging_bandit_variant, sample_rate=pool.judging_sample_rate,
                          top_stratum_depth=pool.judging_top_stratum_depth)


def query_rules(pool: Pool, *, resumed: bool) -> StoppingRules:
    """The per-query rules. After an admin's resume the budget and misses in a row count only the
    judgments made since, and the remaining-relevant estimate (which the admin has overruled, and
    which the same judgments would give again) no longer stops the query."""
    return StoppingRules(remaining_relevant_below=None if resumed else pool.judging_stop_remaining_below,
                         misses_in_a_row=pool.judging_stop_misses_in_a_row, query_budget=pool.judging_query_budget)


@functools.cache
def _sql(template: str) -> str:
    return template.format(pair=PooledPair._meta.db_table, prov=PairProvenance._meta.db_table,
                           query=PoolQuery._meta.db_table, pool=Pool._meta.db_table,
                           lock="FOR UPDATE" if connection.features.has_select_for_update else "",
                           skip="FOR UPDATE SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else "")


_QUERY_PAIRS_SQL = """
SELECT pp.id, pp.state, pp.vote_count, pp.resolved_label, pp.queue_order, pp.judged_at, pp.resolved_at,
       pp.resolved_by_admin, pp.inclusion_probability, pr.run_id, pr.rank, pp.is_original_positive
FROM {pair} pp LEFT JOIN {prov} pr ON pr.pair_id = pp.id
WHERE pp.pool_id = %(pool)s AND pp.caption_id = %(caption)s AND pp.role = 'pool'
"""


@dataclass
class QuerySnapshot:
    """One query's pool pairs as the analysis functions want them: numbered 0..n-1 by pair id."""

    pair_ids: np.ndarray
    states: list
    vote_counts: list
    queue_orders: list
    run_lists: list
    judged: dict = field(default_factory=dict)  # pair index -> relevant, in the order judged
    free: int = 0  # the first `free` of `judged` came from imported judgments: no rater's effort
    inclusion: list = field(default_factory=list)  # stored inclusion probability per pair
    originals: list = field(default_factory=list)  # indices of the caption's original positive (relevant by convention)

    @property
    def judged_in_order(self) -> list[tuple[int, bool]]:
        return list(self.judged.items())

    def untouched(self) -> list[int]:
        """Indices of pairs the order places: open (or stopped) and not started. Leased ones are
        included: their place matters again if the lease runs out unanswered."""
        return [i for i, (s, v) in enumerate(zip(self.states, self.vote_counts)) if s in (OPEN, STOPPED) and v == 0]


def query_snapshot(pool_id: int, caption_id: int) -> QuerySnapshot:
    with connection.cursor() as cursor:
        prepared.execute(cursor, _sql(_QUERY_PAIRS_SQL), {"pool": pool_id, "caption": caption_id})
        return snapshot_from_rows(cursor.fetchall())


def queries_snapshots(pool_id: int, caption_ids: list[int]) -> dict[int, QuerySnapshot]:
    """Many queries' snapshots in one read (the pool-wide refresh)."""
    if not caption_ids:
        return {}
    marks = ", ".join(["%s"] * len(caption_ids))
    sql = _sql(_QUERY_PAIRS_SQL).replace("pp.id, pp.state", "pp.caption_id, pp.id, pp.state").replace(
        "pp.caption_id = %(caption)s", f"pp.caption_id IN ({marks})").replace("%(pool)s", "%s")
    rows = defaultdict(list)
    with connection.cursor() as cursor:
        cursor.execute(sql, [pool_id, *caption_ids])
        for row in cursor.fetchall():
            rows[row[0]].append(row[1:])
    return {caption: snapshot_from_rows(rows[caption]) for caption in caption_ids}


def snapshot_from_rows(rows) -> QuerySnapshot:
    pairs, runs = {}, defaultdict(list)
    for pair_id, state, votes, label, order, judged_at, resolved_at, by_admin, pi, run_id, rank, original in rows:
        free = state in JUDGED_STATES and votes == 0 and not by_admin
        pairs[pair_id] = (state, votes, label, order, judged_at or resolved_at, free, pi, original)
        if run_id is not None:
            runs[run_id].append((rank, pair_id))
    ids = sorted(pairs)
    index = {pair_id: i for i, pair_id in enumerate(ids)}
    run_lists = [np.array([index[p] for _, p in sorted(runs[run])], dtype=np.int64) for run in sorted(runs)]
    # Judged in the order judged: imported judgments first, then by time (the hook's judged_at,
    # else resolved_at for pairs judged before a strategy was set), then id.
    judged_ids = sorted((p for p in ids if pairs[p][0] in JUDGED_STATES),
                        key=lambda p: (not pairs[p][5], "" if pairs[p][4] is None else str(pairs[p][4]), p))
    judged = {index[p]: pairs[p][0] == RESOLVED and pairs[p][2] == PooledPair.Answer.RELEVANT for p in judged_ids}
    return QuerySnapshot(np.array(ids, dtype=np.int64), [pairs[p][0] for p in ids], [pairs[p][1] for p in ids],
                         [pairs[p][3] for p in ids], run_lists, judged, sum(pairs[p][5] for p in judged_ids),
                         [pairs[p][6] for p in ids], [i for i, p in enumerate(ids) if pairs[p][7]])


SCALE_BATCH = 500  # queries read per snapshot query when the pool's active scale is drawn


def active_scale_draw(pool: Pool, params: StrategyParams, *, store: bool = True) -> tuple[float, float]:
    """The pool's (c0, c1) from every query's pairs and the machine's verdicts (one allocation
    over the whole pool: a query whose runs the machine deems settled gets few judgments), stored
    on the pool unless `store` is false. Called when the design is drawn (build, or a design
    setting changed before any label). A design the pool cannot take (its top stratum alone is
    over the sample rate) raises JudgingError."""
    captions = list(PoolQuery.objects.filter(pool=pool).order_by("slot").values_list("caption_id", flat=True))

    def queries():
        for start in range(0, len(captions), SCALE_BATCH):
            batch = captions[start:start + SCALE_BATCH]
            snapshots = queries_snapshots(pool.pk, batch)
            confidences = snapshots_confidences(pool.judging_machine_judge_id, snapshots)
            for caption_id in batch:
                snap = snapshots.get(caption_id)
                if snap is None or not len(snap.pair_ids):
                    continue
                yield snap.run_lists, len(snap.pair_ids), confidences[caption_id], design_known(pool, snap)

    try:
        scale = active_pool_scale(queries(), params=params)
    except ValueError as exc:
        raise JudgingError(str(exc)) from exc
    if not store:
        return scale
    pool.judging_active_scale = [float(scale[0]), float(scale[1])]
    Pool.objects.filter(pk=pool.pk).update(judging_active_scale=pool.judging_active_scale)
    return scale


def active_scale_of(pool: Pool, params: StrategyParams) -> tuple[float, float]:
    """The pool's stored active scale; drawn now if it has none (a pool made active before the
    scale was stored)."""
    if pool.judging_active_scale is None:
        return active_scale_draw(pool, params)
    return float(pool.judging_active_scale[0]), float(pool.judging_active_scale[1])


def query_keys(pool: Pool, snapshot: QuerySnapshot, *, caption_id: int, slot: int, n_queries: int,
               inclusion=None, design: dict | None = None) -> dict[int, int]:
    """New queue_order per untouched pair id (strategies other than pool_order). Pairs the order
    leaves out (a "sampled" or "active" design's pairs outside the sample) are not in the result.
    `inclusion`: "active" only, the complete sample's inclusion probabilities (active_inclusion).
    `design`: "sampled" only, the query's design when the caller has drawn it (sampled_design_of)."""
    order = query_order(pool.judging_strategy, snapshot.run_lists, snapshot.judged, params=strategy_params(pool),
                        known=order_known(pool, snapshot),
                        query_key=int(caption_id), n_pairs=len(snapshot.pair_ids), inclusion=inclusion, design=design)
    untouched = set(snapshot.untouched())
    taken = len(snapshot.pair_ids) - len(untouched) - snapshot.states.count(NOT_SAMPLED)
    keys, position = {}, taken
    for i in order.tolist():
        if i in untouched:
            keys[int(snapshot.pair_ids[i])] = int(interleave(position, slot, n_queries))
            position += 1
    return keys


def pair_column_write(column: str, values: dict[int, int | float]) -> int:
    """Sets one queue column (queue_order, inclusion_probability) per pair id, in one statement per
    2,000 pairs: a strategy rewrites a whole query's pairs, a recomputation a whole pool's."""
    assert column in ("queue_order", "inclusion_probability")
    items = list(values.items())
    table = PooledPair._meta.db_table
    for start in range(0, len(items), 2000):
        chunk = items[start:start + 2000]
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                # Two arrays, whatever the number of pairs: one statement shape, prepared once per
                # connection (a label that judges a pair rewrites its query's order with it).
                prepared.execute(cursor, f"UPDATE {table} SET {column} = v.value "
                                         f"FROM unnest(%s::bigint[], %s::{_COLUMN_TYPES[column]}[]) AS v(id, value) "
                                         f"WHERE {table}.id = v.id", [[k for k, _ in chunk], [v for _, v in chunk]])
                continue
            rows = ", ".join(["(%s, %s)"] * len(chunk))
            cursor.execute(f"UPDATE {table} SET {column} = v.column2 FROM (VALUES {rows}) AS v "
                           f"WHERE {table}.id = v.column1", [x for pair in chunk for x in pair])
    return len(items)


_COLUMN_TYPES = {"queue_order": "bigint", "inclusion_probability": "double precision"}


def write_keys(keys: dict[int, int]) -> int:
    """Sets queue_order per pair id."""
    return pair_column_write("queue_order", keys)


_STOP_QUERY_SQL = """
UPDATE {pair} SET state = 'stopped', available = FALSE, priority = 0
WHERE pool_id = %(pool)s AND caption_id = %(caption)s AND role = 'pool' AND state = 'open' AND vote_count = 0
"""

_REOPEN_QUERY_SQL = """
UPDATE {pair} SET state = 'open', available = {room}
WHERE pool_id = %(pool)s AND caption_id = %(caption)s AND role = 'pool' AND state = 'stopped'
""".replace("{room}", room_sql())


def query_stop_pairs(pool_id: int, caption_id: int) -> int:
    """Takes the query's not-started pairs out of the queue. Leased ones too: the lease is
    honoured (an answer on it reopens the pair, see services/labels.py), and if it runs out the
    pair does not come back."""
    with connection.cursor() as cursor:
        cursor.execute(_sql(_STOP_QUERY_SQL), {"pool": pool_id, "caption": caption_id})
        return cursor.rowcount


def query_reopen_pairs(pool_id: int, caption_id: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute(_sql(_REOPEN_QUERY_SQL), {"pool": pool_id, "caption": caption_id})
        return cursor.rowcount


def n_queries_of(pool_id: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT MAX(slot) FROM {PoolQuery._meta.db_table} WHERE pool_id = %s", [pool_id])
        top = cursor.fetchone()[0]
    return 0 if top is None else top + 1


def query_stop_reason_now(pool: Pool, query: PoolQuery, snapshot: QuerySnapshot) -> str | None:
    """The budget and misses in a row count the judgments since the last resume (imported
    judgments never); the remaining-relevant estimate reads everything known, and is off for a
    query an admin resumed (query_rules). Precedence as in analysis/judging/stopping.py."""
    rules = query_rules(pool, resumed=query.resumed_at is not None)
    spent = snapshot.judged_in_order[snapshot.free:]
    since = spent[min(query.judged_at_resume, len(spent)):]
    counted = query_stop_reason(StoppingRules(misses_in_a_row=rules.misses_in_a_row, query_budget=rules.query_budget),
                                snapshot.run_lists, since)
    if counted == "budget":
        return counted
    if rules.remaining_relevant_below is not None:
        estimated = query_stop_reason(StoppingRules(remaining_relevant_below=rules.remaining_relevant_below),
                                      snapshot.run_lists, snapshot.judged_in_order)
        if estimated:
            return estimated
    return counted


_QUERY_COUNTS_SQL = "UPDATE {query} SET judged = %(judged)s, relevant = %(relevant)s WHERE id = %(id)s"


def _query_counts_write(query: PoolQuery) -> None:
    """query.save(update_fields=["judged", "relevant"]), without building the ORM's UPDATE anew
    on every judged label."""
    with connection.cursor() as cursor:
        prepared.execute(cursor, _sql(_QUERY_COUNTS_SQL), {"judged": query.judged, "relevant": query.relevant,
                                                           "id": query.pk})


def query_refresh(pool: Pool, query: PoolQuery, *, now, n_queries: int, snapshot: QuerySnapshot | None = None,
                  keys_out: dict | None = None) -> QuerySnapshot:
    """With the query row locked: recounts its judgments, applies the stopping rules and rewrites
    its order (into `keys_out` when given, for the caller to write in bulk). Returns what it read."""
    snapshot = snapshot or query_snapshot(pool.pk, query.caption_id)
    # `judged` counts the raters' and admins' judgments (what budgets spend); `relevant` every
    # relevant pair known, imported ones included.
    judged = len(snapshot.judged) - snapshot.free
    relevant = sum(snapshot.judged.values())
    fields = []
    if (query.judged, query.relevant) != (judged, relevant):
        query.judged, query.relevant = judged, relevant
        fields += ["judged", "relevant"]
    if not query.stopped_reason:
        reason = query_stop_reason_now(pool, query, snapshot)
        if reason:
            query.stopped_reason, query.stopped_at = reason, now
            fields += ["stopped_reason", "stopped_at"]
            query_stop_pairs(pool.pk, query.caption_id)
    if fields == ["judged", "relevant"]:
        _query_counts_write(query)  # nearly every judged label: as a prepared statement, not save()
    elif fields:
        query.save(update_fields=fields)
    # "active": the complete sample's pi from the machine's verdicts (the stored ones are a
    # prefix's once the query stopped)
    complete = (active_inclusion(pool, query.caption_id, snapshot, strategy_params(pool),
                                 active_scale_of(pool, strategy_params(pool)))
                if pool.judging_strategy == "active" and len(snapshot.pair_ids) else None)
    # "sampled": its design, drawn once here for both the order and the stored pi (a label judges a
    # pair of a sampled pool with one draw, not two).
    design = sampled_design_of(pool, snapshot, query.caption_id) if pool.judging_strategy == "sampled" else None
    if pool.judging_strategy != "pool_order":
        # Stopped queries keep their order fresh too, so a resume needs no recomputation.
        keys = query_keys(pool, snapshot, caption_id=query.caption_id, slot=query.slot, n_queries=n_queries,
                          inclusion=complete, design=design)
        current = dict(zip(snapshot.pair_ids.tolist(), snapshot.queue_orders))
        changed = {pair_id: key for pair_id, key in keys.items() if current.get(pair_id) != key}
        if keys_out is None:
            write_keys(changed)
        else:
            keys_out.update(changed)
    if pool.judging_strategy in DESIGN_STRATEGIES:
        sample_probabilities_keep(pool, query, snapshot, complete=complete, design=design)
    return snapshot


def sampled_design_of(pool: Pool, snapshot: QuerySnapshot, caption_id: int) -> dict | None:
    """A "sampled" pool's design of one query (analysis sampled_design), None for a query without pairs."""
    if not len(snapshot.pair_ids):
        return None
    return sampled_design(snapshot.run_lists, params=strategy_params(pool), query_key=int(caption_id),
                          n_pairs=len(snapshot.pair_ids), known=order_known(pool, snapshot))


def sample_probabilities_keep(pool: Pool, query: PoolQuery, snapshot: QuerySnapshot, *, complete=None,
                              design: dict | None = None) -> int:
    """A "sampled" design is a sequential Poisson sample: judging a query's sample only up to a
    point (its query or the pool stopped) is itself a Poisson sample, with the inclusion
    probabilities of that prefix (analysis/judging/strategies.py prefix_inclusion_probabilities).
    A stopped query's pairs get those; a query judging on keeps its complete sample's, so the
    stored pi always describe the design the judged pairs were drawn under. Returns how many
    pairs' pi changed. "active" the same, from its complete sample's pi (`complete`). `design`:
    "sampled" only, the query's design when the caller has drawn it (sampled_design_of)."""
    n = len(snapshot.pair_ids)
    if not n:
        return 0
    params, key = strategy_params(pool), int(query.caption_id)
    if query.stopped_reason or pool.judging_stopped_reason:
        # Taken: the sample's pairs that left the order (judged, started, escalated); the queue
        # hands them out in the sample's order, so they are its first pairs.
        order = query_order(pool.judging_strategy, snapshot.run_lists, {}, params=params, query_key=key, n_pairs=n,
                            known=order_known(pool, snapshot),
                            inclusion=complete, design=design).tolist()
        untouched = set(snapshot.untouched())
        taken = sum(1 for i in order if i not in untouched)
        pi = prefix_inclusion_probabilities(snapshot.run_lists, taken, params=params, query_key=key, n_pairs=n,
                                            known=order_known(pool, snapshot),
                                            inclusion=complete)
    elif complete is not None:
        pi = np.asarray(complete)
    elif design is not None:
        pi = design["pi"]
    else:
        pi = inclusion_probabilities(snapshot.run_lists, params=params, query_key=key, n_pairs=n)
    changed = {int(pair_id): float(p) for pair_id, p, old in zip(snapshot.pair_ids.tolist(), pi.tolist(), snapshot.inclusion)
               if old is None or abs(float(p) - float(old)) > 1e-12}
    return pair_column_write("inclusion_probability", changed)


_LOCK_QUERY_SQL = "SELECT * FROM {query} WHERE pool_id = %(pool)s AND caption_id = %(caption)s {lock}"


def query_lock(pool_id: int, caption_id: int) -> PoolQuery | None:
    return next(iter(PoolQuery.objects.raw(_sql(_LOCK_QUERY_SQL), {"pool": pool_id, "caption": caption_id})), None)


_POOL_JUDGED_SQL = "SELECT COALESCE(SUM(judged), 0) FROM {query} WHERE pool_id = %(pool)s"

# Never waits: a label transaction that found the budget spent sets the flag unless another
# transaction holds the pool row (an admin's settings change, or another label doing the same),
# in which case the next label sets it. The budget may run over by the labels in flight.
_POOL_STOP_SQL = """
UPDATE {pool} SET judging_stopped_reason = 'pool_budget', judging_stopped_at = %(now)s
WHERE id IN (SELECT id FROM {pool} WHERE id = %(pool)s AND judging_stopped_reason = '' {skip})
"""

# Best effort for the counts: the pool flag already stops handing out (services/queue.py
# lease_next); pairs another transaction holds this instant keep their state.
_POOL_STOP_PAIRS_SQL = """
UPDATE {pair} SET state = 'stopped', available = FALSE, priority = 0
WHERE id IN (SELECT id FROM {pair} WHERE pool_id = %(pool)s AND role = 'pool' AND state = 'open' AND vote_count = 0 {skip})
"""


def pool_budget_check(pool: Pool, *, now) -> bool:
    """Stops the pool when its budget is spent. True if this call stopped it."""
    if pool.judging_pool_budget is None or pool.judging_stopped_reason:
        return False
    with connection.cursor() as cursor:
        cursor.execute(_sql(_POOL_JUDGED_SQL), {"pool": pool.pk})
        judged = int(cursor.fetchone()[0]) - pool.judging_judged_at_resume
        if judged < pool.judging_pool_budget:
            return False
        cursor.execute(_sql(_POOL_STOP_SQL), {"pool": pool.pk, "now": connection.ops.adapt_datetimefield_value(now)})
        if not cursor.rowcount:
            return False
        cursor.execute(_sql(_POOL_STOP_PAIRS_SQL), {"pool": pool.pk})
    pool.judging_stopped_reason, pool.judging_stopped_at = "pool_budget", now
    return True


_HOOK_POOL_FIELDS = ("seed", "judging_strategy", "judging_warmup_depth", "judging_bandit_variant", "judging_sample_rate",
                     "judging_top_stratum_depth", "judging_query_budget", "judging_pool_budget",
                     "judging_stop_remaining_below", "judging_stop_misses_in_a_row", "judging_stopped_reason",
                     "judging_stopped_at", "judging_judged_at_resume", "judging_machine_judge_id",
                     "judging_active_scale", "include_original_positives")
_ACTIVE_SCALE_FIELD = Pool._meta.get_field("judging_active_scale")
# What the hook needs of a query row `q` joined with its pool `pl`: the query, the pool's judging
# settings and the number of queries. A caller that locks the query row anyway (the label
# transaction, before the pair) selects these in that statement and hands the row to pair_judged.
HOOK_COLUMNS_SQL = ("q.*, " + ", ".join(f"pl.{f} AS pool_{f}" for f in _HOOK_POOL_FIELDS)
                    + ", (SELECT MAX(t.slot) FROM " + PoolQuery._meta.db_table + " t WHERE t.pool_id = q.pool_id) AS top_slot")

_HOOK_SQL = """
SELECT <columns>
FROM {query} q JOIN {pool} pl ON pl.id = q.pool_id
WHERE q.pool_id = %(pool)s AND q.caption_id = %(caption)s {lock_q}
""".replace("<columns>", HOOK_COLUMNS_SQL)


@functools.cache
def _hook_sql() -> str:
    lock = "FOR UPDATE OF q" if connection.features.has_select_for_update_of else _sql("{lock}")
    return _sql(_HOOK_SQL.replace("{lock_q}", lock))


def pair_judged(*, pool_id: int, caption_id: int, pair_id: int, now, judged_at_saved: bool = False,
                query: PoolQuery | None = None) -> None:
    """The label transaction's hook, after the pair it judged is saved (with `judged_at`, or this
    sets it): recounts, stops and reorders the pair's query, and checks the pool budget. `query`:
    the query row with HOOK_COLUMNS_SQL, when the caller has locked and read it already."""
    if not judged_at_saved:
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE {PooledPair._meta.db_table} SET judged_at = %s WHERE id = %s AND judged_at IS NULL",
                           [connection.ops.adapt_datetimefield_value(now), pair_id])
    if query is None:
        query = next(iter(PoolQuery.objects.raw(_hook_sql(), {"pool": pool_id, "caption": caption_id})), None)
    if query is None:  # no row for the query (it cannot be hooked without one): nothing to order
        return
    values = {f: getattr(query, f"pool_{f}") for f in _HOOK_POOL_FIELDS}
    # A raw row's JSON comes as text: the stored active scale as the model reads it (without it the
    # refresh would draw the scale anew over the whole pool on every label).
    values["judging_active_scale"] = _ACTIVE_SCALE_FIELD.from_db_value(values["judging_active_scale"], None, connection)
    pool = Pool(pk=pool_id, **values)
    query_refresh(pool, query, now=now, n_queries=query.top_slot + 1)
    pool_budget_check(pool, now=now)
