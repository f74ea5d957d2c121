"""The human-to-proxy report (Report kind `human_proxy`): how often each proxy orders a study's
captions as its raters did, over the complete tasks. Computed by a job (operations.py)."""
from __future__ import annotations

from annotation.analysis import ranking_study
from annotation.models import Job, RankingStudy, RankingTask, Report
from annotation.selectors.ranking import ranking_rated_tasks
from annotation.services.proxies.matrices import json_number, library_versions
from annotation.services.reports.create import report_save
from annotation.services.reports.kinds.human_proxy import KIND as HUMAN_PROXY


def _proxy_entry(tasks: list[ranking_study.RankingTask]) -> dict:
    if not tasks:
        return {"tasks": 0}
    r = ranking_study.human_proxy_report(tasks)
    return {"tasks": r.n_tasks, "pairs": r.n_pairs, "consistent_pairs": r.n_consistent,
            "consistent_share": json_number(r.consistent_share), "proxy_agree": r.proxy_agree,
            "proxy_ties": r.proxy_ties, "proxy_disagree": r.proxy_disagree,
            "proxy_agreement": json_number(r.proxy_agreement),
            "proxy_agreement_strict": json_number(r.proxy_agreement_strict),
            "kendalls_w": json_number(r.kendalls_w), "krippendorff_alpha_ordinal": json_number(r.krippendorff_alpha_ordinal),
            "tie_rule": r.tie_rule}


def ranking_report_create(*, study: RankingStudy, created_by=None, job: Job | None = None) -> Report:
    """Report(kind="human_proxy"): per proxy, over the study's complete tasks, the share of caption
    pairs all raters order alike (consistent), the share of those the proxy orders the same way
    (chance 50%; a proxy tie counts half, `proxy_agreement_strict` counts it as a miss),
    Kendall's W (mean over tasks) and Krippendorff's alpha (ordinal) of the orderings."""
    per_proxy = {proxy: _proxy_entry(ranking_rated_tasks(study=study, proxy=proxy)) for proxy in study.proxies}
    tasks = RankingTask.objects.filter(study=study)
    return report_save(
        kind=HUMAN_PROXY.name, dataset_id=study.dataset_id, job=job, created_by=created_by,
        title=f"Human-to-proxy agreement: {study.name}",
        params={"study_id": study.pk, "study": study.name, "proxies": study.proxies, "n_clips": study.n_clips,
                "seed": study.seed, "mode": study.mode, "synsets": study.synsets, "min_fraction": study.min_fraction,
                "raters_per_task": study.raters_per_task,
                "tasks_used": "complete tasks only: each with raters_per_task counted orderings from distinct raters",
                "selection": "most and least similar, and the captions at the quartile ranks round(q (n - 1)) of the "
                             "n candidates (the clip's own captions excluded)",
                "pipelines": study.pipelines},
        versions=library_versions("krippendorff"),
        result={"tasks": tasks.count(), "complete_tasks": tasks.filter(completed_at__isnull=False).count(),
                "proxies": per_proxy})
