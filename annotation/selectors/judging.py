"""Reads about a pool's judging: per query, what was judged and found, and whether it stopped."""
from __future__ import annotations

from django.db.models import Count, Q

from annotation.models import Pool, PooledPair, PoolQuery

STRATEGY_TEXT = {
    "pool_order": "Pool order (started pairs first, then seeded random)",
    "shallow_first": "Shallow first (depth by depth, queries in turn)",
    "move_to_front": "Move-to-front over runs",
    "bandit": "Bandit over runs",
    "sampled": "Probability sample (for estimates)",
    "active": "Active sample: where a machine judge is least sure first (for estimates)",
}

STOP_REASON_TEXT = {
    "budget": "query budget spent",
    "remaining_relevant": "few relevant pairs left (estimate)",
    "misses_in_a_row": "non-relevant judgments in a row",
    "pool_budget": "pool budget spent",
}


def pool_query_statuses(*, pool: Pool, stopped_only: bool = False, offset: int = 0, limit: int = 100) -> dict:
    """One page of the pool's queries in their round-robin turn: pairs, judged by raters or an
    admin (resolved or in disagreement; `imported`: known from imported judgments, not counted
    against budgets), relevant found (imported included), still to judge, and whether and why the query stopped (a
    stopped pool stops every query). Counted from the pairs, so it is true whatever the strategy."""
    queries = PoolQuery.objects.filter(pool=pool).select_related("caption").order_by("slot")
    counts = PoolQuery.objects.filter(pool=pool).aggregate(
        total=Count("id"), stopped=Count("id", filter=~Q(stopped_reason="")))
    if stopped_only:
        queries = queries.exclude(stopped_reason="")
    page = list(queries[offset:offset + limit])
    pairs = (PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL, caption_id__in=[q.caption_id for q in page])
             .values("caption_id").annotate(
                 pairs=Count("id"),
                 judged=Count("id", filter=Q(state__in=[PooledPair.State.RESOLVED, PooledPair.State.DISAGREEMENT])
                              & (Q(vote_count__gt=0) | Q(resolved_by_admin=True))),
                 imported=Count("id", filter=Q(state__in=[PooledPair.State.RESOLVED, PooledPair.State.DISAGREEMENT],
                                               vote_count=0, resolved_by_admin=False)),
                 relevant=Count("id", filter=Q(state=PooledPair.State.RESOLVED, resolved_label=PooledPair.Answer.RELEVANT)),
                 left=Count("id", filter=Q(state=PooledPair.State.OPEN)),
                 stopped_pairs=Count("id", filter=Q(state=PooledPair.State.STOPPED)),
                 not_sampled=Count("id", filter=Q(state=PooledPair.State.NOT_SAMPLED)))
             .order_by())
    by_caption = {row.pop("caption_id"): row for row in pairs}
    rows = []
    for query in page:
        c = by_caption.get(query.caption_id, {"pairs": 0, "judged": 0, "imported": 0, "relevant": 0, "left": 0,
                                              "stopped_pairs": 0, "not_sampled": 0})
        reason = query.stopped_reason or pool.judging_stopped_reason
        rows.append({
            "caption": query.caption_id, "caption_external_id": query.caption.external_id, "caption_text": query.caption.text,
            "slot": query.slot, **c,
            "budget": pool.judging_query_budget,
            "judged_since_resume": max(0, c["judged"] - query.judged_at_resume) if query.resumed_at else c["judged"],
            "stopped": bool(reason), "stopped_reason": reason or None,
            "stopped_why": STOP_REASON_TEXT.get(reason) if reason else None,
            "query_stopped": bool(query.stopped_reason), "stopped_at": query.stopped_at or pool.judging_stopped_at,
            "resumed_at": query.resumed_at,
        })
    return {"strategy": pool.judging_strategy, "pool_stopped_reason": pool.judging_stopped_reason or None,
            "queries": counts["total"], "stopped_queries": counts["stopped"], "count": queries.count(),
            "offset": offset, "limit": limit, "results": rows}
