"""Five-caption ranking studies (methodology §7): build them, hand tasks to raters, take their
orderings, report how well each proxy agrees with people.

Tasks are served like pool pairs (annotation/services/queue/leases.py) and keep the same invariants, in
the same transaction as every change, under the task's row lock:
- `active_leases + submission_count <= required_submissions` (also a check constraint);
- a rater never gets a task they hold or have submitted (unique live lease, unique submission per
  task and rater), so each task's orderings come from distinct raters;
- `available` is true exactly when the task is short of orderings counting live leases, so the
  next-task query walks the partial index `ranking_task_queue` in hand-out order with
  SELECT ... FOR UPDATE SKIP LOCKED and stays fast however large the study.
Locks are taken task first, then lease, so concurrent submits and expiries cannot deadlock.
Started tasks are handed out first, so orderings complete tasks rather than spread thin.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import numpy as np
from django.db import IntegrityError, transaction
from django.db.models import Count, Exists, OuterRef
from django.utils import timezone

from annotation.analysis import ranking_study
from annotation.analysis.votes import has_room
from annotation.analysis.proxies import CaptionAnalyzer, describe_pipeline, proxy_matrix
from annotation.models import (Caption, Dataset, Job, RankingLease, RankingMembership, RankingStudy, RankingSubmission,
                               RankingTask, RankingTaskCaption, Report)
from annotation.selectors.ranking import clips_with_captions, proxy_inputs, ranking_rated_tasks
from annotation.services.jobs import job_create, job_enqueue
from annotation.services.proxies.matrices import (ProxyError, json_number, library_versions, proxy_requirements_check,
                                                  staged_progress)
from annotation.services.accounts.raters import access_grant, rater_profile
from annotation.services.queue.lease_lifecycle import LeasedItems, lease_end, leases_expire_due
from annotation.services.reports.kinds.human_proxy import KIND as HUMAN_PROXY
from annotation.services.reports.create import report_job_start, report_save
from annotation.services.jobs import task_names

MAX_HELD_PER_STUDY = 2  # the task on screen and the next one, preloaded
TASK_FLAG_FIELDS = ["active_leases", "available", "priority"]
TASK_FIELDS = TASK_FLAG_FIELDS + ["submission_count", "completed_at"]


# --- building a study ------------------------------------------------------------------------

def _study_check(*, dataset: Dataset, name: str, proxies: list[str], n_clips: int, mode: str, synsets: str) -> None:
    proxy_requirements_check(proxies=proxies, mode=mode, synsets=synsets)
    if len(set(proxies)) != len(proxies):
        raise ProxyError("each proxy may be listed once")
    if RankingStudy.objects.filter(dataset=dataset, name=name).exists():
        raise ProxyError(f"a ranking study named '{name}' already exists for '{dataset.name}'")
    eligible = len(clips_with_captions(dataset=dataset))
    if n_clips < 1 or n_clips > eligible:
        raise ProxyError(f"n_clips must be between 1 and {eligible}, the clips of '{dataset.name}' that have a caption")
    captions = Caption.objects.filter(dataset=dataset)
    own_counts = captions.filter(original_clip__isnull=False).values("original_clip").annotate(n=Count("pk")).order_by()
    if captions.count() - max((row["n"] for row in own_counts), default=0) < 5:
        raise ProxyError(f"'{dataset.name}' has too few captions: each clip needs five that are not its own")


@transaction.atomic
def ranking_study_start(*, dataset: Dataset, name: str, proxies: list[str], n_clips: int = 100, seed: int = 0,
                        mode: str = "modern", synsets: str = "wordnet", min_fraction: float = 0.25,
                        raters_per_task: int = 3, lease_seconds: int = 600, created_by=None) -> Job:
    """Checks the request up front (mistakes get a 400, not a failed job) and queues the build."""
    _study_check(dataset=dataset, name=name, proxies=proxies, n_clips=n_clips, mode=mode, synsets=synsets)
    job = job_create(kind="build_ranking_study", created_by=created_by, params={
        "dataset_id": dataset.pk, "name": name, "proxies": proxies, "n_clips": n_clips, "seed": seed, "mode": mode,
        "synsets": synsets, "min_fraction": min_fraction, "raters_per_task": raters_per_task,
        "lease_seconds": lease_seconds})
    return job_enqueue(job=job, task=task_names.BUILD_RANKING_STUDY)


def ranking_study_create(*, dataset: Dataset, name: str, proxies: list[str], n_clips: int = 100, seed: int = 0,
                         mode: str = "modern", synsets: str = "wordnet", min_fraction: float = 0.25,
                         raters_per_task: int = 3, lease_seconds: int = 600, created_by=None, job: Job | None = None,
                         progress=None) -> RankingStudy:
    """Samples `n_clips` of the clips that have a caption (seeded), computes each proxy's rows for
    those clips only (against every caption), selects five captions per clip and proxy
    (analysis.ranking_study.ranking_tasks) and creates one task per clip and proxy."""
    _study_check(dataset=dataset, name=name, proxies=proxies, n_clips=n_clips, mode=mode, synsets=synsets)
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


# --- handing out tasks -----------------------------------------------------------------------

@dataclass(frozen=True)
class RankingAssignment:
    lease: RankingLease | None
    reason: str | None = None  # why there is none: not_a_member, paused, holding_max, no_work_left


class RankingLeaseGone(Exception):
    """The lease is no longer live (expired, completed or released)."""

    def __init__(self, lease: RankingLease, still_needed: bool) -> None:
        self.lease, self.still_needed = lease, still_needed
        super().__init__(f"lease {lease.pk} is {lease.state}")


def refresh_task_flags(task: RankingTask) -> None:
    """Recomputes the queue columns from the counters (call with the task row locked): a task is
    available while it has room (analysis/votes.py has_room, the pool pairs' rule)."""
    task.available = has_room(required=task.required_submissions, votes=task.submission_count,
                              leases=task.active_leases)
    task.priority = 1 if task.submission_count + task.active_leases > 0 else 0


#: Ranking tasks as leased items: their leases end as a pool pair's do (queue/lease_lifecycle.py).
TASKS = LeasedItems(lease_model=RankingLease, item_model=RankingTask, item_field="task",
                    refresh_flags=refresh_task_flags, flag_fields=tuple(TASK_FLAG_FIELDS))


def ranking_lease_next(*, study: RankingStudy, rater, exclude_leases=(), now=None) -> RankingAssignment:
    """The rater's next task in this study, leased for `study.lease_seconds`.

    Tasks the rater already holds come back first (a reloaded page resumes), except those whose
    lease tokens are in `exclude_leases` (the ones the page already shows or preloads). A task
    whose lease is listed is not claimed anew either: the page lists the leases it gave back with
    "none of these fits", so that the same five captions do not come straight back to this rater
    (the task stays open to everyone else)."""
    now = now or timezone.now()
    if not RankingMembership.objects.filter(study=study, rater=rater).exists():
        return RankingAssignment(None, "not_a_member")
    if rater_profile(user=rater).paused:
        return RankingAssignment(None, "paused")
    ranking_leases_expire(now=now, study=study, limit=50)

    excluded = set(exclude_leases)
    held = list(RankingLease.objects.filter(rater=rater, task__study=study, state=RankingLease.State.ACTIVE)
                .order_by("created_at", "pk"))
    for lease in held:
        if lease.token not in excluded:
            RankingLease.objects.filter(pk=lease.pk, state=RankingLease.State.ACTIVE).update(
                expires_at=now + timedelta(seconds=study.lease_seconds))
            lease.refresh_from_db(fields=["expires_at", "state"])
            return RankingAssignment(lease)
    if len(held) >= MAX_HELD_PER_STUDY:
        return RankingAssignment(None, "holding_max")
    passed = list(RankingLease.objects.filter(rater=rater, task__study=study, token__in=excluded)
                  .values_list("task_id", flat=True)) if excluded else []
    lease = _claim_task(study, rater, now, passed)
    return RankingAssignment(lease, None if lease else "no_work_left")


def _not_mine(rater):
    return (~Exists(RankingSubmission.objects.filter(task=OuterRef("pk"), rater=rater))
            & ~Exists(RankingLease.objects.filter(task=OuterRef("pk"), rater=rater, state=RankingLease.State.ACTIVE)))


def _claim_task(study: RankingStudy, rater, now, passed_tasks=()) -> RankingLease | None:
    """SKIP LOCKED lets raters take different tasks at once, but it also hides tasks that another
    request has locked for a moment (a submission under way). When only such tasks are left, wait
    for their locks instead of telling the rater there is no work."""
    wait = False
    for _ in range(6):
        with transaction.atomic():
            open_tasks = RankingTask.objects.filter(study=study, available=True).filter(_not_mine(rater))
            if passed_tasks:
                open_tasks = open_tasks.exclude(pk__in=passed_tasks)
            task = (open_tasks.select_for_update(skip_locked=not wait, of=("self",))
                    .order_by("-priority", "queue_order")
                    .first())
            if task is None:
                if wait or not open_tasks.exists():
                    return None
                wait = True
                continue
            refresh_task_flags(task)
            if not task.available:
                continue  # changed between our snapshot and the lock; look again
            lease = RankingLease.objects.create(task=task, rater=rater,
                                                expires_at=now + timedelta(seconds=study.lease_seconds))
            task.active_leases += 1
            refresh_task_flags(task)
            task.save(update_fields=TASK_FLAG_FIELDS)
            lease.task = task
            return lease
    return None


def _still_needed(task: RankingTask) -> bool:
    return has_room(required=task.required_submissions, votes=task.submission_count, leases=task.active_leases)


def ranking_lease_renew(*, token: str, rater, now=None) -> RankingLease:
    """Heartbeat: extends a live lease. A lease that is no longer live raises RankingLeaseGone,
    saying whether the task still needs an ordering (the page then submits anyway, or moves on)."""
    now = now or timezone.now()
    lease = RankingLease.objects.select_related("task__study").get(token=token, rater=rater)
    if rater_profile(user=rater).paused:
        # A paused rater's open page must not keep tasks from others.
        _end_lease(lease.pk, RankingLease.State.RELEASED, now)
    updated = RankingLease.objects.filter(pk=lease.pk, state=RankingLease.State.ACTIVE).update(
        expires_at=now + timedelta(seconds=lease.task.study.lease_seconds))
    lease.refresh_from_db()
    if not updated:
        lease.task.refresh_from_db()
        mine = RankingSubmission.objects.filter(task=lease.task, rater=rater).exists()
        raise RankingLeaseGone(lease, _still_needed(lease.task) and not mine)
    return lease


def ranking_lease_release(*, token: str, rater, now=None) -> RankingLease:
    """The rater gives the task back without ordering it (e.g. the clip does not play)."""
    lease = RankingLease.objects.get(token=token, rater=rater)
    _end_lease(lease.pk, RankingLease.State.RELEASED, now or timezone.now())
    lease.refresh_from_db()
    return lease


def _end_lease(lease_id: int, state: str, now, *, only_if_due: bool = False) -> bool:
    return lease_end(TASKS, lease_id, state, now, only_if_due=only_if_due)


def ranking_leases_expire(*, now=None, study: RankingStudy | None = None, limit: int = 1000) -> int:
    """Returns the tasks of overdue leases to the queue (the periodic job, and lazily at assignment)."""
    return leases_expire_due(TASKS, now=now or timezone.now(), limit=limit,
                             **({"task__study": study} if study is not None else {}))


# --- taking orderings ------------------------------------------------------------------------

class RankingRefused(ValueError):
    """The submission cannot be accepted as sent; `code` says why and `field` which input is wrong."""

    def __init__(self, code: str, message: str, field: str | None = None) -> None:
        self.code, self.field = code, field
        super().__init__(message)


@dataclass(frozen=True)
class SubmissionResult:
    submission: RankingSubmission
    created: bool


def ranking_submission_create(*, rater, client_id: str, lease: str, order: list, seconds: float | None = None,
                              now=None) -> SubmissionResult:
    """Stores a rater's ordering of the five captions of the task they hold (or held) under
    `lease`, the lease's opaque token (caption ids, most relevant first).

    Only a lease the rater was given carries an ordering: not another rater's task, not while
    paused. The same `client_id` again returns the stored submission; a second ordering of the
    same task under another client id is a conflict. An ordering that arrives when the task no
    longer needs it (lease ended, others took the place) is kept with counted=False."""
    now = now or timezone.now()
    client_id = (client_id or "").strip()
    if not client_id or len(client_id) > 64:
        raise RankingRefused("invalid", "client_id must be 1 to 64 characters", "client_id")
    replay = RankingSubmission.objects.filter(rater=rater, client_id=client_id).first()
    if replay:
        return SubmissionResult(replay, False)
    if seconds is not None and seconds < 0:
        raise RankingRefused("invalid", "seconds must not be negative", "seconds")
    if not isinstance(lease, str) or not lease or len(lease) > 64:
        raise RankingRefused("invalid", "lease_id must be the lease id the task was handed out with", "lease_id")
    try:
        with transaction.atomic():
            return _submit_locked(rater, client_id, lease, list(order), seconds, now)
    except IntegrityError:
        # The same client id raced in through another request; that one stands.
        replay = RankingSubmission.objects.filter(rater=rater, client_id=client_id).first()
        if replay:
            return SubmissionResult(replay, False)
        raise


def _submit_locked(rater, client_id: str, token: str, order: list, seconds: float | None, now) -> SubmissionResult:
    named = RankingLease.objects.filter(token=token, rater=rater).values("pk", "task_id", "state").first()
    if named is None:
        raise RankingRefused("not_found", "no such lease", "lease_id")  # the same for another rater's lease
    # Task first, then lease: the lock order of every change to a task.
    task = RankingTask.objects.select_for_update().get(pk=named["task_id"])
    if not RankingMembership.objects.filter(study=task.study_id, rater=rater).exists():
        raise RankingRefused("forbidden", "you have no access to this study")
    if rater_profile(user=rater).paused:
        raise RankingRefused("paused", "an admin has paused your work; this ordering was not stored")
    replay = RankingSubmission.objects.filter(rater=rater, client_id=client_id).first()
    if replay:
        return SubmissionResult(replay, False)
    if RankingSubmission.objects.filter(task=task, rater=rater).exists():
        raise RankingRefused("conflict", "you have already ordered this task's captions")
    if named["state"] in (RankingLease.State.RELEASED, RankingLease.State.COMPLETED):
        raise RankingRefused("conflict", f"this lease has been {named['state']}; the task is no longer yours to order")
    expected = set(task.captions.values_list("caption_id", flat=True))
    if len(order) != len(expected) or set(order) != expected or any(type(c) is not int for c in order):
        raise RankingRefused("invalid", f"order must list this task's {len(expected)} caption ids, each once, "
                                        "most relevant first", "order")

    # The live lease may be a newer one than the ordering names (the old one ran out and the task
    # came back to the rater); none live means a late ordering.
    live = RankingLease.objects.select_for_update().filter(task=task, rater=rater, state=RankingLease.State.ACTIVE).first()
    submission = RankingSubmission(task=task, rater=rater, client_id=client_id, order=order, seconds=seconds,
                                   lease_id=live.pk if live else named["pk"], counted=False)
    if live:
        live.state, live.ended_at = RankingLease.State.COMPLETED, now
        live.save(update_fields=["state", "ended_at"])
        task.active_leases = max(0, task.active_leases - 1)
    if _still_needed(task):
        submission.counted = True
        task.submission_count += 1
        if task.submission_count == task.required_submissions:
            task.completed_at = now
    else:
        submission.surplus_reason = "arrived after its lease ended, when the task no longer needed it"
    submission.save()
    refresh_task_flags(task)
    task.save(update_fields=TASK_FIELDS)
    return SubmissionResult(submission, True)


# --- the human-to-proxy report ---------------------------------------------------------------

@transaction.atomic
def ranking_report_start(*, study: RankingStudy, created_by) -> Job:
    if not RankingTask.objects.filter(study=study, completed_at__isnull=False).exists():
        raise ProxyError("no task of this study has all its orderings yet")
    return report_job_start(kind=HUMAN_PROXY.name, job_kind="ranking_study_report", params={"study_id": study.pk},
                            task=task_names.RANKING_STUDY_REPORT, created_by=created_by)


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
