"""The admin's quality-control table of a pool: per rater, the figures of analysis/rater_quality."""
from __future__ import annotations

from collections import defaultdict

from annotation.analysis.rater_quality import rater_quality
from annotation.models import CrowdWorker, Label, Pool, PooledPair, QualityAction, QualityRule, RaterProfile

DEFAULT_TOO_FAST_SECONDS = QualityRule._meta.get_field("too_fast_seconds").default


def pool_rater_quality(*, pool: Pool) -> dict:
    """{"rule": the pool's rule or None, "raters": one row per rater with answers in the pool}.

    Gold accuracy counts relevant / not relevant answers on gold pairs. Agreement with the
    consensus counts the rater's votes on pool pairs resolved with two or more votes: on a
    single-vote pair the rater's vote is the resolution and would agree by construction (the
    convention of analysis/agreement.py `rater_stats`). Times are per label, training excluded;
    drift compares the first and last half of the rater's gold (and consensus) answers in order."""
    rule = QualityRule.objects.filter(pool=pool).first()
    too_fast = rule.too_fast_seconds if rule else DEFAULT_TOO_FAST_SECONDS
    rows = (Label.objects.filter(pair__pool=pool).exclude(pair__role=PooledPair.Role.TRAINING)
            .values_list("rater_id", "value", "seconds", "surplus_reason", "pair__role", "pair__known_answer",
                         "pair__resolved_label", "pair__vote_count")
            .order_by("rater_id", "created_at", "id"))
    per_rater: dict[int, dict] = defaultdict(lambda: {"gold": [], "consensus": [], "seconds": [], "labels": 0, "set_aside": 0})
    for rater_id, value, seconds, reason, role, known, resolved, votes in rows.iterator():
        mine = per_rater[rater_id]
        mine["labels"] += 1
        mine["set_aside"] += reason == Label.SET_ASIDE_REASON
        mine["seconds"].append(seconds)
        if value not in Label.VOTES:
            continue
        if role == PooledPair.Role.GOLD:
            mine["gold"].append(value == known)
        elif resolved and votes >= 2:
            mine["consensus"].append(value == resolved)
    profiles = {p.user_id: p for p in RaterProfile.objects.filter(user_id__in=per_rater).select_related("user")}
    workers = dict(CrowdWorker.objects.filter(user_id__in=per_rater, study__pool=pool).values_list("user_id", "worker_id"))
    actions = {}
    for action in QualityAction.objects.filter(pool=pool, rater_id__in=per_rater).order_by("created_at"):
        actions[action.rater_id] = action  # the latest wins
    raters = []
    for rater_id, mine in per_rater.items():
        profile = profiles.get(rater_id)
        figures = rater_quality(gold_hits=mine["gold"], consensus_hits=mine["consensus"], seconds=mine["seconds"],
                                too_fast_seconds=too_fast)
        action = actions.get(rater_id)
        raters.append({
            "rater_id": rater_id,
            "username": profile.user.username if profile else None,
            "pseudonym": profile.pseudonym if profile else None,
            "crowd_worker_id": workers.get(rater_id),
            "paused": bool(profile and profile.paused),
            "labels": mine["labels"],
            "labels_set_aside": mine["set_aside"],
            **figures,
            "rule_action": None if action is None else {
                "at": action.created_at, "gold_answers": action.gold_answers, "gold_correct": action.gold_correct,
                "threshold": action.threshold, "labels_set_aside": action.labels_set_aside,
                "pairs_reopened": action.pairs_reopened},
        })
    raters.sort(key=lambda row: (row["pseudonym"] is None, row["pseudonym"] or 0))
    return {"rule": rule, "too_fast_seconds": too_fast, "raters": raters}
