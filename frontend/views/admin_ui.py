"""The admin's pages where Django admin does not fit: uploads with live job progress, pool
building, pool dashboards with charts, raters and the adjudication queue.

Pages render what is there; changes go through the REST API from the page scripts, so every
rule (and every refusal message) is the API's."""
from __future__ import annotations

from django.shortcuts import get_object_or_404, render

from annotation.analysis.judging.strategies import BANDIT_VARIANTS, REPLAYABLE_STRATEGIES
from annotation.formats.datasets import DATASET_FORMATS
from annotation.formats.runs import RUN_FORMATS
from annotation.models import CrowdStudy, Job, JudgeEndpoint, MachineJudge, Pool, PooledPair, QualityRule
from annotation.page_access import page_for
from annotation.selectors.dashboard import (dataset_runs, datasets_overview, pool_agreement, pool_live, pools_overview,
                                            raters_overview, recent_jobs)
from annotation.selectors.known_pairs import known_pair_sources
from annotation.services.crowd.arrivals import PREVIEW_ASSIGNMENT
from annotation.services.media.check import dataset_media_state, pool_clips_left_out
from annotation.services.crowd.studies import quality_rule_warnings
from annotation.services.pools.settings_checks import pool_settings_warnings
from annotation.selectors.judging import STRATEGY_TEXT
from annotation.selectors.pools import PAIR_COUNT_WORDS, pairs_needing_admin, pool_progress
from annotation.selectors.reports import judgment_set_list

ATTENTION_STATES = {
    PooledPair.State.ADJUDICATION: "Escalated as ambiguous",
    PooledPair.State.SET_ASIDE: "Set aside: clip doesn't play",
    PooledPair.State.DISAGREEMENT: "No majority",
}


@page_for("admin")
def overview(request):
    return render(request, "frontend/admin_ui/overview.html",
                  {"datasets": datasets_overview(), "jobs": recent_jobs(limit=15), "dataset_formats": DATASET_FORMATS})


@page_for("admin")
def dataset_detail(request, dataset_id: int):
    dataset = get_object_or_404(datasets_overview(), pk=dataset_id)
    return render(request, "frontend/admin_ui/dataset.html",
                  {"dataset": dataset, "runs": dataset_runs(dataset=dataset), "run_formats": RUN_FORMATS,
                   "pools": pools_overview(dataset_id=dataset.pk), "known_sources": known_pair_sources(dataset_id=dataset.pk),
                   "strategies": list(STRATEGY_TEXT.items()), "bandit_variants": BANDIT_VARIANTS,
                   # The simulation replays known answers: `active` needs a machine judge's verdicts it has not.
                   "replayable_strategies": REPLAYABLE_STRATEGIES,
                   "judgment_sets": judgment_set_list(dataset_id=dataset.pk),
                   "media": dataset_media_state(dataset, limit=1000)})


def active_text(seconds: float) -> str:
    """Kept the same as page.js activeText: the live poll rewrites these cells."""
    minutes = round(seconds / 60)
    if seconds < 60:
        return f"{round(seconds)} s"
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def rate_text(rate: float | None) -> str:
    if rate is None:
        return "–"
    return f"{rate:.0f}/h" if rate >= 10 else f"{rate:.1f}/h"


@page_for("admin")
def pool_list(request):
    return render(request, "frontend/admin_ui/pools.html", {"pools": pools_overview()})


@page_for("admin")
def pool_detail(request, pool_id: int):
    pool = get_object_or_404(Pool.objects.select_related("dataset"), pk=pool_id)
    # Every figure of the page from one snapshot; the page's poll rewrites them from the next.
    live = pool_live(pool=pool)
    for rater in live["raters"]:
        rater["active_text"] = active_text(rater["active_seconds"])
        rater["rate_text"] = rate_text(rater["rate_per_hour"])
    member_ids = {r["rater_id"] for r in live["raters"]}
    rule = QualityRule.objects.filter(pool=pool).first() or QualityRule(pool=pool)
    return render(request, "frontend/admin_ui/pool.html", {
        "live": live, "queries": live["queries"], "progress": live, "pair_words": PAIR_COUNT_WORDS,
        "strategies": list(STRATEGY_TEXT.items()), "strategy_text": STRATEGY_TEXT[pool.judging_strategy],
        "replayable_strategies": REPLAYABLE_STRATEGIES,
        "pool": pool, "agreement": pool_agreement(pool=pool), "members": live["raters"],
        "known": {"gold": live["gold_pairs"], "training": live["training_pairs"]},
        "other_raters": [r for r in raters_overview() if r.pk not in member_ids],
        "runs": pool.runs.all(), "addable_runs": dataset_runs(dataset=pool.dataset).exclude(pools=pool),
        "study": CrowdStudy.objects.filter(pool=pool).first(), "platforms": CrowdStudy.Platform.choices,
        "preview_assignment": PREVIEW_ASSIGNMENT,
        # An unsaved rule shows the model's defaults: what the first save stores unless changed.
        "rule": rule, "rule_warnings": quality_rule_warnings(pool=pool, rule=rule) if rule.pk else [],
        # Every other setting that cannot act as asked (the rule's own are shown beside its form).
        "settings_warnings": [w for w in pool_settings_warnings(pool=pool)
                              if w not in (quality_rule_warnings(pool=pool, rule=rule) if rule.pk else [])],
        "judge_endpoints": JudgeEndpoint.objects.all(), "machine_judges": MachineJudge.objects.filter(pool=pool),
        "clips_left_out": pool_clips_left_out(pool),
    })


@page_for("admin")
def pool_attention(request, pool_id: int):
    pool = get_object_or_404(Pool.objects.select_related("dataset"), pk=pool_id)
    state = request.GET.get("state", PooledPair.State.ADJUDICATION)
    if state not in ATTENTION_STATES:
        state = PooledPair.State.ADJUDICATION
    counts = pool_progress(pool=pool)["by_state"]
    tabs = [{"state": s, "title": title, "count": counts.get(s, 0)} for s, title in ATTENTION_STATES.items()]
    return render(request, "frontend/admin_ui/attention.html",
                  {"pool": pool, "state": state, "state_title": ATTENTION_STATES[state], "tabs": tabs,
                   "pairs": pairs_needing_admin(pool=pool, state=state)[:200]})


@page_for("admin")
def rater_list(request):
    return render(request, "frontend/admin_ui/raters.html",
                  {"raters": raters_overview(), "pools": Pool.objects.select_related("dataset").order_by("name")})


@page_for("admin")
def job_detail(request, job_id: int):
    return render(request, "frontend/admin_ui/job.html", {"job": get_object_or_404(Job, pk=job_id)})
