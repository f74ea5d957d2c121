"""Workers arriving by a study link, and their way through consent and guidelines to the work.

"The same person", as far as a server can tell: the same browser (the study's signed cookie, or
the session) or the same account. Either already tied to worker A of a study refuses worker B of
the same study, so one person cannot take a study twice under two platform ids from one browser.
The same platform id arriving again resumes: a Prolific PROLIFIC_PID with a new SESSION_ID (the
study taken up again), an MTurk workerId with a new assignmentId (until they have completed).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation import roles
from annotation.models import CrowdStudy, CrowdWorker, Lease, PooledPair, PoolMembership
from annotation.services.queue.leases import lease_release
from annotation.services.accounts.raters import rater_profile
from annotation.services.accounts.users import user_create

PREVIEW_ASSIGNMENT = "ASSIGNMENT_ID_NOT_AVAILABLE"
# Platform ids: Prolific's are 24 hex digits, MTurk's upper-case letters and digits; both fit.
PARAM_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
# turkSubmitTo is where the finished assignment is posted: only MTurk's own hosts, or the study
# would post a worker's assignment (and send them) wherever a crafted link said.
MTURK_SUBMIT_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")

PROLIFIC_PARAMS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")
MTURK_PARAMS = ("workerId", "assignmentId", "hitId", "turkSubmitTo")


class ArrivalRefused(Exception):
    """The link cannot be honoured; `code` says why, the message is safe to show (it never
    repeats a parameter's value)."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(message)


@dataclass(frozen=True)
class Arrival:
    worker_id: str
    session_id: str
    external_study_id: str
    submit_to: str = ""
    preview: bool = False


def _param(query: Mapping[str, str], name: str) -> str:
    value = query.get(name)
    if value is None or value == "":
        raise ArrivalRefused("invalid", f"The link lacks the parameter {name}. Go back to the platform and open the study again.")
    if not isinstance(value, str) or not PARAM_PATTERN.fullmatch(value):
        raise ArrivalRefused("invalid", f"The parameter {name} is not valid: 1 to 64 letters, digits, '-' or '_'.")
    return value


def arrival_from_query(*, study: CrowdStudy, query: Mapping[str, str]) -> Arrival:
    """The platform's parameters of the link, each checked for length and characters."""
    if study.platform == CrowdStudy.Platform.PROLIFIC:
        worker, study_id, session = (_param(query, name) for name in PROLIFIC_PARAMS)
        return Arrival(worker_id=worker, session_id=session, external_study_id=study_id)
    if query.get("assignmentId") == PREVIEW_ASSIGNMENT:
        return Arrival(worker_id="", session_id="", external_study_id="", preview=True)
    worker, assignment, hit = (_param(query, name) for name in MTURK_PARAMS[:3])
    submit_to = (query.get("turkSubmitTo") or "").rstrip("/")
    if submit_to not in MTURK_SUBMIT_HOSTS:
        raise ArrivalRefused("invalid", "The parameter turkSubmitTo is not an MTurk address.")
    return Arrival(worker_id=worker, session_id=assignment, external_study_id=hit, submit_to=submit_to)


def study_arrive(*, study: CrowdStudy, arrival: Arrival, known_worker_ids=(), signed_in_user=None,
                 now=None) -> CrowdWorker:
    """Creates or resumes the worker's account in the study. `known_worker_ids`: the platform
    ids this browser already came with to this study (its cookie and session)."""
    now = now or timezone.now()
    if arrival.preview:
        raise ValueError("a preview creates nothing")
    others = {known for known in known_worker_ids if known and known != arrival.worker_id}
    account_worker = getattr(signed_in_user, "crowd_worker", None) if getattr(signed_in_user, "is_authenticated", False) else None
    if account_worker is not None and account_worker.study_id == study.pk and account_worker.worker_id != arrival.worker_id:
        others.add(account_worker.worker_id)
    if others:
        raise ArrivalRefused("other_worker", "This browser has already taken part in this study under another worker id. "
                                             "Each person takes part once.")
    worker = CrowdWorker.objects.filter(study=study, worker_id=arrival.worker_id).select_related("user").first()
    if worker is None:
        if not study.is_open:
            raise ArrivalRefused("closed", "This study is closed to new participants.")
        try:
            with transaction.atomic():
                worker, created = _worker_create(study, arrival, now)
        except IntegrityError:
            # The same worker id arrived twice at once (a double click): the other request made it.
            worker, created = CrowdWorker.objects.select_related("user").get(study=study, worker_id=arrival.worker_id), False
        if created:
            return worker
    return _worker_resume(worker, arrival, now)


def _worker_create(study: CrowdStudy, arrival: Arrival, now) -> tuple[CrowdWorker, bool]:
    # New accounts of a study are made one at a time: a rater's pseudonym is the highest so far
    # plus one, which 40 workers arriving at once would otherwise all read alike (rater_profile
    # retries a few times only; the 40-worker test ran out of retries).
    CrowdStudy.objects.select_for_update().filter(pk=study.pk).values_list("pk", flat=True).first()
    made_meanwhile = CrowdWorker.objects.select_related("user").filter(study=study, worker_id=arrival.worker_id).first()
    if made_meanwhile is not None:  # the same id arrived twice at once (a double click, two tabs)
        return made_meanwhile, False
    user = user_create(username=f"crowd{study.pk}-{study.platform}-{arrival.worker_id}", password=None, role=roles.RATER)
    rater_profile(user=user)
    # The pool's own training gate runs the training; a study that does not require it lets its
    # workers past the gate from the start.
    training = PoolMembership.Training.PENDING if study.training_required else PoolMembership.Training.PASSED
    PoolMembership.objects.create(pool_id=study.pool_id, rater=user, training=training)
    return CrowdWorker.objects.create(study=study, user=user, worker_id=arrival.worker_id, session_id=arrival.session_id,
                                      external_study_id=arrival.external_study_id, submit_to=arrival.submit_to,
                                      last_seen_at=now), True


def _worker_resume(worker: CrowdWorker, arrival: Arrival, now) -> CrowdWorker:
    with transaction.atomic():
        worker = CrowdWorker.objects.select_for_update().select_related("user", "study").get(pk=worker.pk)
        if (worker.stage == CrowdWorker.Stage.DONE and worker.study.platform == CrowdStudy.Platform.MTURK
                and arrival.session_id != worker.completed_session_id):
            raise ArrivalRefused("done", "You have already completed this study's work under another assignment. "
                                         "Please return this assignment.")
        if worker.stage != CrowdWorker.Stage.DONE:
            worker.session_id, worker.external_study_id = arrival.session_id, arrival.external_study_id
            worker.submit_to = arrival.submit_to
        if worker.stage == CrowdWorker.Stage.DECLINED:
            worker.stage = CrowdWorker.Stage.CONSENT  # they may have changed their mind
        worker.arrivals += 1
        worker.last_seen_at = now
        worker.save()
    return worker


@transaction.atomic
def worker_consent(*, worker: CrowdWorker, agree: bool, now=None) -> CrowdWorker:
    now = now or timezone.now()
    worker = CrowdWorker.objects.select_for_update().get(pk=worker.pk)
    if worker.stage in (CrowdWorker.Stage.CONSENT, CrowdWorker.Stage.DECLINED):
        worker.stage = CrowdWorker.Stage.GUIDELINES if agree else CrowdWorker.Stage.DECLINED
        worker.consented_at = now if agree else None
        worker.save(update_fields=["stage", "consented_at"])
    return worker


@transaction.atomic
def worker_guidelines_read(*, worker: CrowdWorker, now=None) -> CrowdWorker:
    """The work starts: training if the pool has it, then judging. Minutes of the quota count
    from here (training is paid time too)."""
    now = now or timezone.now()
    worker = CrowdWorker.objects.select_for_update().get(pk=worker.pk)
    if worker.stage == CrowdWorker.Stage.GUIDELINES:
        worker.stage, worker.guidelines_read_at, worker.work_started_at = CrowdWorker.Stage.WORK, now, now
        worker.save(update_fields=["stage", "guidelines_read_at", "work_started_at"])
    return worker


def worker_release_held(*, worker: CrowdWorker, now=None) -> int:
    """Gives back every pair the worker holds in the study's pool (leaving, timing out, done)."""
    tokens = list(Lease.objects.filter(rater_id=worker.user_id, state=Lease.State.ACTIVE, pair__pool_id=worker.study.pool_id)
                  .values_list("token", flat=True))
    for token in tokens:
        lease_release(token=token, rater=worker.user, now=now)
    return len(tokens)


def worker_training_state(worker: CrowdWorker) -> str:
    """'none' (the pool has no training), or the membership's pending / passed / failed."""
    if not PooledPair.objects.filter(pool_id=worker.study.pool_id, role=PooledPair.Role.TRAINING).exists():
        return "none"
    return PoolMembership.objects.filter(pool_id=worker.study.pool_id, rater_id=worker.user_id).values_list(
        "training", flat=True).first() or "none"
