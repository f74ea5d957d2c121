"""Accepting a submission (issue 38, "Filling the holes with people"): an admin's decision that a
submitted run's holes (the top K pairs its release has no verdict on) are judged by people, so the
next version of the release can score the run with them judged.

One job (`accept_submission`, atomic: the job's transaction holds every step, so a failure leaves
nothing behind but the job's errors):
1. the submitted run file is imported as a Run of the release's dataset (services/datasets/runs.py,
   the one run importer), named after the submission, its source naming the submission;
2. the release's verdicts on the run's top K pairs become a seeding judgment set (the one seeding
   path, services/judgment_sets/imports.py; pairs an earlier seeding import already covers are left
   to it, so the import never contradicts one);
3. an incremental pool is built over the run's top K (services/pools/build.py pool_create): the pairs
   the seeds cover are resolved at once, so only the holes are queued, judged with the strategy the
   admin chose (default: the release's pool's; `sampled` or `active` give an unbiased estimate
   before every hole is judged);
4. the release's raters become members of the pool, and the submission records the pool, who
   accepted it and when (status `accepted`): `Submission.pool` is how a pool names its submission
   (`submission_pool_provenance`).
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from annotation import roles
from annotation.analysis.params import Param
from annotation.models import Job, Pool, PoolMembership, Prediction, Submission
from annotation.models.judgment_sets import ImportedJudgment
from annotation.services.accounts.raters import memberships_grant
from annotation.services.datasets.runs import run_import
from annotation.services.judging.plan import (JUDGING_SETTINGS, DESIGN_SETTINGS, JudgingError, active_judge_check,
                                              judging_settings_check, judging_settings_of)
from annotation.services.judgment_sets.imports import judgments_import
from annotation.services.operations.operation import Operation, refusal_naming
from annotation.services.operations.start import operation_start
from annotation.services.pools.build import PoolError, pool_create
from annotation.services.submissions.score import release_qrels
from annotation.services.submissions.storage import SUBMISSIONS
from annotation.storage import stored_file_local_path

#: The judging settings an accepted submission's pool takes from the release's pool when the admin
#: names none: the strategy and its design. Budgets and stopping rules sized for the release's pool
#: would not fit a pool of holes, so they start off.
INHERITED_SETTINGS = ("strategy", "bandit_variant") + DESIGN_SETTINGS


class SubmissionAcceptError(ValueError):
    """An acceptance refused; `param` names the field to blame when one is."""


PARAMS = {
    "judging": Param(dict, None, "the judging strategy and its settings by name (strategy, sample_rate, "
                     "top_stratum_depth, warmup_depth, bandit_variant, machine_judge, query_budget, pool_budget, "
                     "stop_remaining_below, stop_misses_in_a_row); a strategy setting not given is the release's "
                     "pool's"),
}


def release_pool(release) -> Pool | None:
    """The release's first pool (its leaderboard's), if it still exists."""
    for source in release.sources or []:
        if source.get("kind") == "pool":
            pool = Pool.objects.filter(pk=source.get("id"), dataset_id=release.dataset_id).first()
            if pool is not None:
                return pool
    return None


def _judging_settings(release, asked: dict | None) -> dict:
    """The pool's judging settings by API name: the release pool's strategy and design, then what
    the admin asked for."""
    source = release_pool(release)
    inherited = {}
    if source is not None:
        inherited = {name: value for name, value in judging_settings_of(source).items() if name in INHERITED_SETTINGS}
    return inherited | dict(asked or {})


def _pending_acceptance(submission: Submission) -> Job | None:
    return (Job.objects.filter(operation=ACCEPT_OPERATION_NAME, params__submission_id=submission.pk,
                               status__in=[Job.Status.QUEUED, Job.Status.RUNNING]).first())


def _refuse_state(submission: Submission) -> None:
    state = submission.state
    if state == Submission.Status.ACCEPTED:
        where = f" (its holes are judged in pool '{submission.pool.name}')" if submission.pool_id else ""
        raise SubmissionAcceptError(f"submission {submission.pk} ({submission.name}) is already accepted{where}")
    if state == "failed":
        raise SubmissionAcceptError(f"submission {submission.pk} ({submission.name}) failed to be scored: there are "
                                    f"no holes to judge")
    if state != Submission.Status.SCORED or not submission.holes:
        raise SubmissionAcceptError(f"submission {submission.pk} ({submission.name}) is not scored yet: its holes "
                                    f"are known once it is")


def _check(*, target: Submission, params: dict) -> dict:
    _refuse_state(target)
    if _pending_acceptance(target) is not None:
        raise SubmissionAcceptError(f"submission {target.pk} ({target.name}) is being accepted already")
    judging = _judging_settings(target.release, params["judging"])
    try:
        fields = judging_settings_check(judging, dataset=target.release.dataset)
        active_judge_check(fields.get("judging_strategy", "pool_order"), fields.get("judging_machine_judge"))
    except JudgingError as exc:
        raise refusal_naming(SubmissionAcceptError(f"judging: {exc}"), "judging") from exc
    return params | {"judging": judging}


def _import_run(submission: Submission, *, path: Path, created_by):
    """The submitted run as a Run of the dataset; the same file imported before is that run."""
    release = submission.release
    dataset = release.dataset
    name = submission.name
    if dataset.runs.filter(name=name).exists():
        name = f"{submission.name} (submission {submission.pk})"[:200]
    max_depth = ((submission.job.params or {}).get("max_depth") if submission.job else None)
    source = f"submission {submission.pk} to {release.slug}: {submission.source_name or Path(path).name}"[:500]
    return run_import(dataset=dataset, path=path, name=name, fmt="trec", uploader=submission.submitted_by,
                      source_name=source, max_depth=max_depth).run


def _seed_release_verdicts(submission: Submission, run, *, depth: int, created_by) -> dict:
    """The release's verdicts on the run's top `depth` pairs, as a seeding judgment set, so the
    pool build resolves them instead of queueing them. Returns how many pairs the release judges
    and how many an earlier seeding import already covered."""
    release = submission.release
    dataset_id = release.dataset_id
    pairs = list(Prediction.objects.filter(run=run, rank__lte=depth)
                 .values_list("caption_id", "clip_id", "caption__external_id", "clip__external_id").distinct())
    qrels = release_qrels(release)
    judged = [(q, c, qx, cx, qrels[qx][cx]) for q, c, qx, cx in pairs if cx in qrels.get(qx, {})]
    covered = set(ImportedJudgment.objects.filter(dataset_id=dataset_id, caption_id__in={q for q, *_ in judged})
                  .values_list("caption_id", "clip_id"))
    lines = [f"{qx} 0 {cx} {rel}\n" for q, c, qx, cx, rel in sorted(judged, key=lambda r: (r[2], r[3]))
             if (q, c) not in covered]
    out = {"judged_by_release": len(judged), "covered_by_earlier_imports": len(judged) - len(lines),
           "judgment_set": None}
    if lines:
        with tempfile.TemporaryDirectory(prefix="rejudge-accept-") as folder:
            path = Path(folder) / f"{release.folder}-submission-{submission.pk}.qrels"
            path.write_text("".join(lines), encoding="utf-8")
            outcome = judgments_import(dataset=release.dataset, path=path, fmt="qrels",
                                       name=f"{release.slug} verdicts for submission {submission.pk}"[:200],
                                       source_name=path.name, seeds_pools=True, created_by=created_by)
        out["judgment_set"] = outcome.judgment_set.name
    return out


def _run(job: Job, progress) -> dict:
    submission = (Submission.objects.select_for_update(of=("self",))
                  .select_related("release__dataset", "job", "submitted_by").get(pk=job.params["submission_id"]))
    _refuse_state(submission)
    release = submission.release
    depth = int(submission.holes["k"])
    progress(0, 4, "importing the run")
    with stored_file_local_path(SUBMISSIONS, submission.run_file) as path:
        run = _import_run(submission, path=path, created_by=job.created_by)
    progress(1, 4, "seeding the release's verdicts")
    seeds = _seed_release_verdicts(submission, run, depth=depth, created_by=job.created_by)
    progress(2, 4, "building the pool")
    source = release_pool(release)
    copied = {field: getattr(source, field) for field in ("redundancy", "seed", "training_pass_mark", "lease_seconds",
                                                          "broken_reports_limit")} if source else {}
    try:
        pool = pool_create(dataset=release.dataset, name=f"{submission.name}: holes (submission {submission.pk} to "
                                                         f"{release.slug})"[:200],
                           runs=[run], depth=depth, judging=job.params.get("judging"), **copied)
    except PoolError as exc:
        raise SubmissionAcceptError(str(exc)) from exc
    progress(3, 4, "adding the release's raters")
    raters = _release_raters(release)
    memberships_grant(pool=pool, users=raters)
    submission.pool = pool
    submission.accepted_by = job.created_by
    submission.accepted_at = timezone.now()
    submission.status = Submission.Status.ACCEPTED
    submission.save(update_fields=["pool", "accepted_by", "accepted_at", "status"])
    counts = pool.pairs.filter(role="pool")
    progress(4, 4, "accepted")
    return {"submission_id": submission.pk, "pool_id": pool.pk, "pool": pool.name, "run_id": run.pk, "run": run.name,
            "pairs": counts.count(), "queued": counts.exclude(state="resolved").count(),
            "resolved_from_release": counts.filter(state="resolved").count(), "seeds": seeds, "raters": len(raters)}


def _release_raters(release) -> list:
    """Active raters of the release's pools (they judged its verdicts; they judge its holes)."""
    pool_ids = [s.get("id") for s in release.sources or [] if s.get("kind") == "pool"]
    members = (PoolMembership.objects.filter(pool_id__in=pool_ids, rater__is_active=True)
               .select_related("rater").order_by("rater_id"))
    seen, raters = set(), []
    for membership in members:
        if membership.rater_id not in seen and roles.is_rater(membership.rater):
            seen.add(membership.rater_id)
            raters.append(membership.rater)
    return raters


ACCEPT_OPERATION_NAME = "accept_submission"

ACCEPT_SUBMISSION = Operation(
    name=ACCEPT_OPERATION_NAME, title="Accept a submission: its holes judged in a pool", params=PARAMS, check=_check,
    run=_run, target=Submission, target_field="submission_id", error=SubmissionAcceptError)


def submission_accept_start(*, submission: Submission, judging: dict | None = None, accepted_by,
                            idempotency_key: str | None = None) -> tuple[Job, bool]:
    """Queues the acceptance (checked first: a refusal raises SubmissionAcceptError). Returns
    (job, created): a request sent again with the same idempotency key gets the first job."""
    return operation_start(ACCEPT_SUBMISSION, target=submission, params={"judging": judging} if judging else {},
                           created_by=accepted_by, idempotency_key=idempotency_key)


def submission_pool_provenance(pool: Pool) -> dict | None:
    """Where a pool came from when it judges a submission's holes (None otherwise): the submission,
    its release, when it was submitted and accepted. Shown on the pool page and in the pool's API
    (researchers read it too, so no account is named)."""
    submission = Submission.objects.filter(pool=pool).select_related("release").order_by("pk").first()
    if submission is None:
        return None
    return {"submission_id": submission.pk, "model": submission.name, "release": submission.release.slug,
            "release_id": submission.release_id, "submitted_at": submission.created_at,
            "accepted_at": submission.accepted_at,
            "holes": len((submission.holes or {}).get("pairs") or []), "holes_k": (submission.holes or {}).get("k"),
            "text": f"the holes of submission {submission.pk} ({submission.name}) to release {submission.release.slug}"}
