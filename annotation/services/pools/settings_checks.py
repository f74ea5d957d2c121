"""Settings that depend on each other, checked in one place: a pool's own settings (redundancy,
gold rate, broken-clip limit), its judging plan (strategy, warm-up, strata, budgets, stopping
rules), its gold rule and its crowd study. Each check says, with the pool's numbers, why a setting
cannot act as asked, and what would let it.

Warned, not refused: what they depend on grows while a campaign runs (raters are added, known
pairs attached, runs added), so a setting that cannot act today may act tomorrow. The pool page,
PATCH pools/{id}/, PUT pools/{id}/quality-rule/ and build_pool show them.
"""
from __future__ import annotations

from django.db.models import Count, Max

from annotation.analysis.judging.settings import JUDGING_PARAMS
from annotation.analysis.judging.strategies import DESIGN_STRATEGIES
from annotation.analysis.votes import MAX_VOTES
from annotation.models import CrowdStudy, Pool, PooledPair, PoolMembership, QualityRule

# Strategies that choose the next pair themselves (a warm-up covering the whole pool leaves them
# nothing to choose).
ADAPTIVE_STRATEGIES = ("shallow_first", "move_to_front", "bandit")


def _plural(n: int | float, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def raters_possible(pool: Pool) -> int | None:
    """How many different raters can judge the pool: its active members, plus the places left in
    an open crowd study (None: no cap, an open study without `places`)."""
    from annotation.services.crowd.arrivals import study_places_taken

    members = PoolMembership.objects.filter(pool=pool, rater__is_active=True).count()
    study = CrowdStudy.objects.filter(pool=pool).first()
    if study is None or not study.is_open:
        return members
    if study.places is None:
        return None
    return members + max(0, study.places - study_places_taken(study))


def pool_settings_warnings(*, pool: Pool) -> list[str]:
    """Every setting of the pool that cannot act as asked, with the numbers (empty: all can)."""
    rule = QualityRule.objects.filter(pool=pool).first()
    study = CrowdStudy.objects.filter(pool=pool).first()
    return [*_rater_warnings(pool), *_known_pair_warnings(pool), *judging_plan_warnings(pool=pool),
            *(quality_rule_warnings(pool=pool, rule=rule) if rule else []),
            *(crowd_study_warnings(pool=pool, study=study) if study else [])]


def _rater_warnings(pool: Pool) -> list[str]:
    """Redundancy and the broken-clip limit ask for answers from several different raters."""
    possible = raters_possible(pool)
    if possible is None or possible == 0:
        return []  # no cap, or no rater added yet (every pool starts so): nothing to compare with
    out = []
    who = f"only {_plural(possible, 'rater')} can judge the pool"
    double = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL, required_labels__gte=2).count()
    if double and possible < 2:
        out.append(f"redundancy {pool.redundancy:g} asks two labels of {_plural(double, 'pair')}, but {who}: those "
                   f"pairs never finish; add a second rater, or set redundancy 0")
    elif double and possible < MAX_VOTES:
        out.append(f"two labels that disagree ask for a third rater, but {who}: such a pair of the "
                   f"{_plural(double, 'pair')} labelled twice waits for an admin's decision; add a third rater")
    if pool.broken_reports_limit > possible:
        out.append(f"a clip is set aside after {_plural(pool.broken_reports_limit, 'report')} that it doesn't play, "
                   f"but {who} (each reports a pair once): a broken clip stays in the queue; set the limit to at "
                   f"most {possible}, or add raters")
    return out


def _known_pair_warnings(pool: Pool) -> list[str]:
    gold = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.GOLD).count()
    if pool.gold_rate > 0 and gold == 0:
        return [f"gold rate {pool.gold_rate:g}, but the pool has no gold pairs: none is shown; attach some "
                f"(build_pool --known-pairs, or Gold and training pairs on the pool page)"]
    if gold and pool.gold_rate == 0:
        return [f"the pool has {_plural(gold, 'gold pair')}, but its gold rate is 0: raters never see them; "
                f"set a gold rate"]
    return []


def judging_plan_warnings(*, pool: Pool) -> list[str]:
    """The judging strategy's settings against the pool's depth and pairs."""
    strategy = pool.judging_strategy
    out = []
    ignored = [name for name, field, users in (
        ("bandit_variant", "judging_bandit_variant", ("bandit",)),
        ("sample_rate", "judging_sample_rate", DESIGN_STRATEGIES),
        ("top_stratum_depth", "judging_top_stratum_depth", DESIGN_STRATEGIES))
        if strategy not in users and getattr(pool, field) != JUDGING_PARAMS[name].default]
    if pool.judging_machine_judge_id and strategy != "active":
        ignored.append("machine_judge")
    if ignored:
        out.append(f"{', '.join(ignored)} {'is' if len(ignored) == 1 else 'are'} ignored under the {strategy} "
                   f"strategy")
    if strategy in ADAPTIVE_STRATEGIES and pool.judging_warmup_depth >= pool.depth:
        out.append(f"warmup_depth {pool.judging_warmup_depth} covers the whole pool (depth {pool.depth}): every pair "
                   f"is judged in the warm-up and {strategy} never chooses; set it below {pool.depth}")
    if strategy in DESIGN_STRATEGIES and pool.judging_top_stratum_depth >= pool.depth:
        out.append(f"top_stratum_depth {pool.judging_top_stratum_depth} covers the whole pool (depth {pool.depth}): "
                   f"every pair is judged and sample_rate {pool.judging_sample_rate:g} samples nothing; set it below "
                   f"{pool.depth}")
    pairs = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL)
    sizes = pairs.values("caption_id").annotate(n=Count("pk")).aggregate(largest=Max("n"))
    largest = sizes["largest"] or 0
    if largest and pool.judging_query_budget is not None and pool.judging_query_budget >= largest:
        out.append(f"query_budget {pool.judging_query_budget} is at least the largest query's "
                   f"{_plural(largest, 'pair')}: it never stops a query")
    if largest and pool.judging_stop_misses_in_a_row is not None and pool.judging_stop_misses_in_a_row > largest:
        out.append(f"stop_misses_in_a_row {pool.judging_stop_misses_in_a_row} is more than the largest query's "
                   f"{_plural(largest, 'pair')}: it never stops a query")
    total = pairs.count()
    if total and pool.judging_pool_budget is not None and pool.judging_pool_budget >= total:
        out.append(f"pool_budget {pool.judging_pool_budget:,} is at least the pool's {_plural(total, 'pair')}: it "
                   f"never stops the pool")
    return out


def quality_rule_warnings(*, pool: Pool, rule: QualityRule) -> list[str]:
    """Why an enabled rule cannot act on this pool, with the numbers: a rater answers each gold pair
    once, so the rule never applies after more gold answers than the pool has gold pairs, and no
    gold pair reaches a rater at a gold rate of 0."""
    if not rule.enabled:
        return []
    gold = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.GOLD).count()
    if gold == 0:
        return [f"the pool has no gold pairs: the rule (after {rule.min_gold_answers} gold answers) never applies "
                f"until gold pairs are added"]
    if rule.min_gold_answers > gold:
        return [f"the pool has {gold} gold pair{'s' if gold != 1 else ''}, so a rater gives at most {gold} gold "
                f"answer{'s' if gold != 1 else ''}: the rule (after {rule.min_gold_answers}) never applies; set it to "
                f"at most {gold}, or add gold pairs"]
    if pool.gold_rate == 0:
        return [f"the pool's gold rate is 0, so no gold pair reaches a rater: the rule (after "
                f"{rule.min_gold_answers} gold answers) never applies; set a gold rate"]
    return []


def crowd_study_warnings(*, pool: Pool, study: CrowdStudy) -> list[str]:
    """A worker's quota against the pool's training and its gold rule."""
    out = []
    training = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.TRAINING).count()
    if study.training_required and study.quota_pairs is not None and training > study.quota_pairs:
        out.append(f"each worker answers {_plural(training, 'training pair')} before a quota of "
                   f"{_plural(study.quota_pairs, 'pair')}: the training is longer than the work; shorten it or "
                   f"raise the quota")
    rule = QualityRule.objects.filter(pool=pool, enabled=True).first()
    if rule and study.quota_pairs is not None and pool.gold_rate > 0:
        gold = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.GOLD).count()
        expected = min(gold, study.quota_pairs * pool.gold_rate)
        if expected < rule.min_gold_answers:
            out.append(f"a worker's quota of {_plural(study.quota_pairs, 'pair')} at gold rate {pool.gold_rate:g} "
                       f"holds about {expected:.1f} gold answers, fewer than the gold rule's "
                       f"{rule.min_gold_answers}: the rule rarely acts within a quota; raise the gold rate to at "
                       f"least {min(1.0, rule.min_gold_answers / study.quota_pairs):.2g}, the quota, or lower the rule")
    return out
