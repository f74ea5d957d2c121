"""Building a ranking study: `n_clips` sampled clips (seeded), each proxy's rows for them, five
captions per clip and proxy (analysis/ranking_study.py), one task per clip and proxy; and who may
rank in it. The build runs as a job (operations.py) or from the command line (build_ranking_study)."""
from __future__ import annotations

import numpy as np
from django.db import transaction
from django.db.models import Count

from annotation.analysis import ranking_study
from annotation.analysis.proxies import CaptionAnalyzer, describe_pipeline, proxy_matrix
from annotation.models import Caption, Dataset, Job, RankingMembership, RankingStudy, RankingTask, RankingTaskCaption
from annotation.selectors.ranking import clips_with_captions, proxy_inputs
from annotation.services.accounts.raters import access_grant
from annotation.services.proxies.matrices import ProxyError, proxy_requirements_check, staged_progress


def proxies_distinct_check(proxies: list[str]) -> None:
    """Each proxy once: a study's tasks are one per clip and proxy."""
    if len(set(proxies)) != len(proxies):
        raise ProxyError("each proxy may be listed once", param="proxies")


def ranking_study_check(*, dataset: Dataset, name: str, proxies: list[str], n_clips: int, mode: str,
                        synsets: str) -> None:
    """What makes a study impossible or wrong for this dataset (the operation's check, and the build's)."""
    proxy_requirements_check(proxies=proxies, mode=mode, synsets=synsets)
    proxies_distinct_check(proxies)
    if RankingStudy.objects.filter(dataset=dataset, name=name).exists():
        raise ProxyError(f"a ranking study named '{name}' already exists for '{dataset.name}'", param="name")
    eligible = len(clips_with_captions(dataset=dataset))
    if n_clips < 1 or n_clips > eligible:
        raise ProxyError(f"n_clips must be between 1 and {eligible}, the clips of '{dataset.name}' that have a caption",
                         param="n_clips")
    captions = Caption.objects.filter(dataset=dataset)
    own_counts = captions.filter(original_clip__isnull=False).values("original_clip").annotate(n=Count("pk")).order_by()
    if captions.count() - max((row["n"] for row in own_counts), default=0) < 5:
        raise ProxyError(f"'{dataset.name}' has too few captions: each clip needs five that are not its own")


def ranking_study_create(*, dataset: Dataset, name: str, proxies: list[str], n_clips: int = 100, seed: int = 0,
                         mode: str = "modern", synsets: str = "wordnet", min_fraction: float = 0.25,
                         raters_per_task: int = 3, lease_seconds: int = 600, created_by=None, job: Job | None = None,
                         progress=None) -> RankingStudy:
    """Samples `n_clips` of the clips that have a caption (seeded), computes each proxy's rows for
    those clips only (against every caption), selects five captions per clip and proxy
    (analysis.ranking_study.ranking_tasks) and creates one task per clip and proxy."""
    ranking_study_check(dataset=dataset, name=name, proxies=proxies, n_clips=n_clips, mode=mode, synsets=synsets)
    eligible = clips_with_captions(dataset=dataset)
    clip_ids = [eligible[i] for i in ranking_study.sample_clips(len(eligible), n_clips, seed)]
    inputs = proxy_inputs(dataset=dataset, clip_ids=clip_ids)
    analyzer = CaptionAnalyzer(mode, synsets)
    stage = staged_progress(progress, len(proxies))
    selections = {}
    for k, proxy in enumerate(proxies):
        rows = proxy_matrix(proxy, inputs.clip_captions, inputs.captions, mode=mode, synsets=synsets,
                            caption_owner=inputs.caption_owner, min_fraction=min_fraction, analyzer=analyzer,
                            progress=stage(k))
        selections[proxy] = ranking_study.ranking_tasks(rows, caption_owner=inputs.caption_owner, clips=range(len(clip_ids)))
    pipelines = {p: describe_pipeline(p, mode, synsets=synsets, min_fraction=min_fraction) for p in proxies}
    # Interleave clips and proxies in a seeded order, so no proxy's tasks are all rated first.
    queue_order = np.random.default_rng([seed, 1]).permutation(len(clip_ids) * len(proxies))
    with transaction.atomic():
        study = RankingStudy.objects.create(
            dataset=dataset, name=name, proxies=proxies, n_clips=n_clips, seed=seed, mode=mode, synsets=synsets,
            min_fraction=min_fraction, raters_per_task=raters_per_task, lease_seconds=lease_seconds,
            pipelines=pipelines, job=job, created_by=created_by)
        tasks, fives = [], []
        for proxy in proxies:
            for five in selections[proxy]:
                tasks.append(RankingTask(study=study, clip_id=clip_ids[five.clip], proxy=proxy,
                                         n_candidates=five.n_candidates, required_submissions=raters_per_task,
                                         queue_order=int(queue_order[len(tasks)])))
                fives.append(five)
        RankingTask.objects.bulk_create(tasks)
        RankingTaskCaption.objects.bulk_create([
            RankingTaskCaption(task=task, caption_id=inputs.caption_ids[caption], position=label, candidate_rank=rank,
                               score=score)
            for task, five in zip(tasks, fives)
            for caption, rank, score, label in zip(five.caption_ids, five.ranks, five.scores, five.labels)])
    return study


def ranking_memberships_grant(*, study: RankingStudy, users) -> int:
    return access_grant(RankingMembership, users, study=study)

