"""Workers arriving by a study link, and their way through consent and guidelines to the work.

A platform worker id is in every link and proves nothing (services/crowd/identity). So:
- A new id makes an account only by a POST (the study link's form), and only while the study is
  open and has a place (`places`, counted under the study's row lock: race-free).
- An existing id is taken up only by the browser the work started in (signed in as the worker,
  the session, or the study's signed cookie, passed here as `known_worker_ids`), by the entry
  form that created it posted again (its nonce), or with the worker's resume code. Anything else
  is refused with `resume_needed` (or `resume_code_wrong`): never signed in by the id alone.
- The same browser tied to worker A of a study refuses worker B of the same study, so one person
  cannot take a study twice under two platform ids from one browser.
- Prolific: a new SESSION_ID for the same PROLIFIC_PID (the study taken up again) resumes. MTurk:
  the assignment the work started under is the one paid, so once the worker has judged a pair a
  second assignmentId is refused (`other_assignment`); before that, the new assignment replaces
  the old (which they returned or abandoned: nothing was done under it).
- Places: a worker holds one from their account's creation until they complete, or return the
  task having judged nothing (`worker_return`, or silent longer than the idle timeout while the
  study is full); then their place goes to the next arrival. A returning worker keeps their place
  (a second arrival never takes another); one who had returned needs a free place again.
"""
from __future__ import annotations

import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from annotation import roles
from annotation.models import CrowdStudy, CrowdWorker, Label, Lease, PooledPair, PoolMembership
from annotation.services.queue.leases import lease_release
from annotation.services.accounts.raters import rater_profile
from annotation.services.accounts.users import user_create
from annotation.services.crowd.identity import resume_code_matches

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


REFUSALS = {
    "unknown": "No one has started this study under this worker id yet: open the study link from the platform and "
               "agree to take part.",
    "other_worker": "This browser has already taken part in this study under another worker id. Each person takes part once.",
    "closed": "This study is closed to new participants.",
    "full": "This study is full: every place has been taken. Please return the study on the platform.",
    "resume_needed": "This worker id has already started this study in another browser. To go on here, enter the "
                     "resume code you were shown on the study's pages.",
    "resume_code_wrong": "That is not the resume code of this worker id. Check it and try again.",
    "other_assignment": "You have started this HIT's work under another assignment, and your answers belong to it. "
                        "Go back to that assignment, or return this one.",
    "done": "You have already completed this study's work under another assignment. Please return this assignment.",
}


def _refuse(code: str) -> ArrivalRefused:
    return ArrivalRefused(code, REFUSALS[code])


def study_places_taken(study: CrowdStudy) -> int:
    return CrowdWorker.objects.filter(study=study).exclude(stage=CrowdWorker.Stage.RETURNED).count()


def study_is_full(study: CrowdStudy, now=None) -> bool:
    """Whether a new worker would be turned away now (the page's display; the POST decides under
    the lock), counting the places of silent workers who judged nothing as free, as the POST will."""
    if study.places is None:
        return False
    return study_places_taken(study) - _silent_without_work(study, now or timezone.now()).count() >= study.places


def arrival_check(*, study: CrowdStudy, arrival: Arrival, known_worker_ids=(), signed_in_user=None) -> CrowdWorker | None:
    """What an arrival would meet, changing nothing (the study link's GET): the worker this browser
    may take up, or None for a new worker id; ArrivalRefused otherwise."""
    if arrival.preview:
        raise ValueError("a preview creates nothing")
    known = _browser_worker_ids(study, known_worker_ids, signed_in_user)
    if known - {arrival.worker_id}:
        raise _refuse("other_worker")
    worker = CrowdWorker.objects.select_related("user", "study").filter(study=study, worker_id=arrival.worker_id).first()
    if worker is None:
        if not study.is_open:
            raise _refuse("closed")
        if study_is_full(study):
            raise _refuse("full")
        return None
    if arrival.worker_id not in known:
        raise _refuse("resume_needed")
    return worker


def _browser_worker_ids(study: CrowdStudy, known_worker_ids, signed_in_user) -> set[str]:
    known = {known for known in known_worker_ids if known}
    account_worker = getattr(signed_in_user, "crowd_worker", None) if getattr(signed_in_user, "is_authenticated", False) else None
    if account_worker is not None and account_worker.study_id == study.pk:
        known.add(account_worker.worker_id)
    return known


def study_arrive(*, study: CrowdStudy, arrival: Arrival, known_worker_ids=(), signed_in_user=None, resume_code: str = "",
                 entry_nonce: str = "", create: bool = True, now=None) -> CrowdWorker:
    """Creates (when `create`: a POST) or takes up the worker's account in the study.
    `known_worker_ids`: the platform ids this browser already came with (its cookie and session);
    `resume_code`: what the worker typed; `entry_nonce`: the nonce of the entry form posted."""
    now = now or timezone.now()
    if arrival.preview:
        raise ValueError("a preview creates nothing")
    known = _browser_worker_ids(study, known_worker_ids, signed_in_user)
    if known - {arrival.worker_id}:
        raise _refuse("other_worker")
    worker = CrowdWorker.objects.filter(study=study, worker_id=arrival.worker_id).first()
    if worker is None:
        if not create:
            raise _refuse("unknown")
        with transaction.atomic():
            worker, created = _worker_create(study, arrival, entry_nonce, now)
        if created:
            return worker
    proven = (arrival.worker_id in known or (entry_nonce and hmac.compare_digest(worker.entry_nonce, entry_nonce))
              or (resume_code and resume_code_matches(worker, resume_code)))
    if not proven:
        raise _refuse("resume_code_wrong" if resume_code else "resume_needed")
    return _worker_resume(worker, arrival, now)


def _worker_create(study: CrowdStudy, arrival: Arrival, entry_nonce: str, now) -> tuple[CrowdWorker, bool]:
    # New accounts of a study are made one at a time, under the study's row lock: the places are
    # counted and taken there (40 arrivals at once for 10 places make 10 workers), and a rater's
    # pseudonym is the highest so far plus one, which arrivals at once would otherwise all read alike.
    study = CrowdStudy.objects.select_for_update().get(pk=study.pk)
    made_meanwhile = CrowdWorker.objects.filter(study=study, worker_id=arrival.worker_id).first()
    if made_meanwhile is not None:  # the same id arrived twice at once: the caller checks the proof
        return made_meanwhile, False
    if not study.is_open:
        raise _refuse("closed")
    _take_place(study, now)
    user = user_create(username=f"crowd{study.pk}-{study.platform}-{arrival.worker_id}", password=None, role=roles.RATER)
    rater_profile(user=user)
    # The pool's own training gate runs the training; a study that does not require it lets its
    # workers past the gate from the start.
    training = PoolMembership.Training.PENDING if study.training_required else PoolMembership.Training.PASSED
    PoolMembership.objects.create(pool_id=study.pool_id, rater=user, training=training)
    return CrowdWorker.objects.create(study=study, user=user, worker_id=arrival.worker_id, session_id=arrival.session_id,
                                      external_study_id=arrival.external_study_id, submit_to=arrival.submit_to,
                                      last_seen_at=now, entry_nonce=entry_nonce), True


def _take_place(study: CrowdStudy, now) -> None:
    """Under the study's row lock: raises `full` when no place is left, after giving back the places
    of workers who judged nothing and have been silent longer than the idle timeout (they returned
    the task on the platform, or never started: the platforms do not tell us which)."""
    if study.places is None or study_places_taken(study) < study.places:
        return
    for worker in _silent_without_work(study, now).select_related("study", "user"):
        _mark_returned(worker, now)
    if study_places_taken(study) >= study.places:
        raise _refuse("full")


def _silent_without_work(study: CrowdStudy, now):
    cutoff = now - timedelta(seconds=study.idle_timeout_seconds)
    return (CrowdWorker.objects.filter(study=study, last_seen_at__lt=cutoff)
            .exclude(stage__in=(CrowdWorker.Stage.RETURNED, CrowdWorker.Stage.DONE))
            .exclude(Exists(_judged(study.pool_id).filter(rater_id=OuterRef("user_id")))))


def _mark_returned(worker: CrowdWorker, now) -> None:
    CrowdWorker.objects.filter(pk=worker.pk).update(stage=CrowdWorker.Stage.RETURNED)
    worker_release_held(worker=worker, now=now)


def _worker_resume(worker: CrowdWorker, arrival: Arrival, now) -> CrowdWorker:
    with transaction.atomic():
        # The study's row, then the worker's (the order of _worker_create and _take_place), and only
        # then a look at whether they had returned: a return committed between a look and the locks
        # (and a newcomer taking the freed place) would let them back in without a place.
        study = CrowdStudy.objects.select_for_update().get(pk=worker.study_id)
        worker = CrowdWorker.objects.select_for_update(of=("self",)).select_related("user", "study").get(pk=worker.pk)
        if worker.stage == CrowdWorker.Stage.RETURNED:
            # They had given their place back: they need a free one again.
            if not study.is_open:
                raise _refuse("closed")
            _take_place(study, now)
        mturk = worker.study.platform == CrowdStudy.Platform.MTURK
        if worker.stage == CrowdWorker.Stage.DONE and mturk and arrival.session_id != worker.completed_session_id:
            raise _refuse("done")
        if (mturk and worker.stage != CrowdWorker.Stage.DONE and arrival.session_id != worker.session_id
                and _judged_any(worker)):
            raise _refuse("other_assignment")
        if worker.stage != CrowdWorker.Stage.DONE:
            worker.session_id, worker.external_study_id = arrival.session_id, arrival.external_study_id
            worker.submit_to = arrival.submit_to
        if worker.stage in (CrowdWorker.Stage.DECLINED, CrowdWorker.Stage.RETURNED):
            # They may have changed their mind; consent once given stands.
            worker.stage = CrowdWorker.Stage.GUIDELINES if worker.consented_at else CrowdWorker.Stage.CONSENT
        worker.arrivals += 1
        worker.last_seen_at = now
        worker.save()
    return worker


def _judged(pool_id: int):
    """Labels that count as judging (the quota's: training is not)."""
    return Label.objects.filter(pair__pool_id=pool_id).exclude(pair__role=PooledPair.Role.TRAINING)


def _judged_any(worker: CrowdWorker) -> bool:
    return _judged(worker.study.pool_id).filter(rater_id=worker.user_id).exists()


def worker_return(*, worker: CrowdWorker, now=None) -> bool:
    """The worker returns the task (as on Prolific or MTurk): what they hold goes back, and if they
    judged nothing their place is freed (True). A worker who judged keeps their place and answers:
    they may come back and finish."""
    now = now or timezone.now()
    with transaction.atomic():
        worker = CrowdWorker.objects.select_for_update(of=("self",)).select_related("study", "user").get(pk=worker.pk)
        freed = worker.stage not in (CrowdWorker.Stage.DONE, CrowdWorker.Stage.RETURNED) and not _judged_any(worker)
        if freed:
            worker.stage = CrowdWorker.Stage.RETURNED
            worker.save(update_fields=["stage"])
    worker_release_held(worker=worker, now=now)
    return freed


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
