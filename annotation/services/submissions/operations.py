"""The submissions area's background operations (services/operations/): scoring a run submitted to
a release (`score_submission`), and scoring a submission again once labels of its holes arrive
(`fill_submission`). Declared once here: their parameters (the model's name, the depth a run may
rank, the K of its holes; the machine judge that fills the holes, fill.py), the checks, and the
work that calls score.py and fill.py. The run file itself is stored by the start (`inputs`) in
the submissions folder (storage.py), beside the parameters.

Both work in two phases (`phases`), as a machine judge's run does: first, outside the job's
transaction, the run is scored and the judge asked for the holes (each answer committed as it
arrives, so a failed job keeps what it paid for); then the scores and the fill are stored on the
submission with the job."""
from __future__ import annotations

from collections.abc import Callable

from django.db import transaction

from annotation.analysis.params import REQUIRED, Param
from annotation.models import Job, Release, Submission
from annotation.roles import is_admin
from annotation.services.machine_judges.errors import MachineJudgeError
from annotation.services.operations.operation import Operation, refusal_naming
from annotation.services.operations.start import operation_start
from annotation.services.submissions.accept import ACCEPT_SUBMISSION
from annotation.services.submissions.fill import FILL_PARAMS, HoleVerdicts, fill_judge_check, fill_summary
from annotation.services.submissions.score import submission_scored, submission_scored_save
from annotation.services.submissions.storage import submission_file_remove, submission_file_store

#: The largest run file accepted (bytes): 1,000 clips for each of 27,750 queries is about 1.4 GB of
#: TREC lines, so a release of that size takes runs cut at depth 100 or less (about 140 MB).
MAX_FILE_BYTES = 200 * 2**20


class SubmissionError(ValueError):
    """A submission refused before its file is stored; `param` names the field to blame."""


PARAMS = {
    "name": Param(str, REQUIRED, "the model's name, as the submission list shows it", max_length=200),
    "max_depth": Param(int, 1000, "refuse a run that ranks more clips than this for a query", 1, 1000),
    "holes_depth": Param(int, 10, "K of the holes: the pairs of each query's top K without a verdict in the "
                         "release are counted and kept", 1, 1000),
    **FILL_PARAMS,
}


def _judge_check(release: Release, params: dict) -> None:
    try:
        fill_judge_check(release=release, judge_id=params.get("judge"))
    except MachineJudgeError as exc:
        raise refusal_naming(SubmissionError(f"judge: {exc}"), "judge") from exc


def _check(*, target, params: dict) -> dict:
    name = " ".join(params["name"].split())
    if not name:
        raise refusal_naming(SubmissionError("name: give the model's name"), "name")
    _judge_check(target, params)
    return params | {"name": name}


def _phases(submission_of: Callable[[Job], Submission], depths_of: Callable[[Job, Submission], tuple[int, int]]):
    """The factory of an operation's (outside, work) over the submission `submission_of(job)`."""

    def factory() -> tuple[Callable, Callable]:
        asked: dict = {}

        def outside(job: Job, progress) -> None:
            submission = submission_of(job)
            max_depth, holes_k = depths_of(job, submission)
            scored = submission_scored(submission, max_depth=max_depth, holes_k=holes_k, progress=progress)
            holes = [(q, c) for q, c in scored.hole_pairs]
            verdicts = HoleVerdicts()
            verdicts.ask(job=job, release=submission.release, holes=holes, judge_id=job.params.get("judge"),
                         progress=progress, may_pay=job.created_by is not None and is_admin(job.created_by))
            asked.update(submission_id=submission.pk, scored=scored, holes=holes, verdicts=verdicts)

        def work(job: Job, progress) -> dict:
            # Read again: an acceptance may have given it its pool (the human labels) meanwhile.
            submission = Submission.objects.select_related("release", "pool").get(pk=asked["submission_id"])
            scored = asked["scored"]
            settings = scored.settings
            fill = fill_summary(submission=submission, verdicts=asked["verdicts"], ranked=scored.ranked,
                                qrels=scored.qrels, holes=asked["holes"], ks=settings["ks"],
                                release_depth=settings["depth"], holes_k=scored.holes_k,
                                confidence=settings["confidence"]) | {"job_id": job.pk}
            summary = submission_scored_save(submission, scored, fill=fill)
            judge = fill.get("judge")
            return {"submission_id": submission.pk, "release": summary["release"], "values": summary["values"],
                    "judged": summary["judged"],
                    "holes": {k: v for k, v in summary["holes"].items() if k != "per_query"},
                    "fill": {"judge": judge["name"] if judge else None, "reason": fill["reason"],
                             "machine_verdicts": fill.get("machine_verdicts", 0), "unanswered": fill.get("unanswered"),
                             "interval": bool(fill.get("estimate"))}}

        return outside, work

    return factory


def _both(factory) -> Callable:
    """Both phases in one call (the runner calls them apart, asking outside the job's transaction)."""

    def run(job: Job, progress) -> dict:
        outside, work = factory()
        outside(job, progress)
        return work(job, progress)

    return run


def _submission_of_scoring(job: Job) -> Submission:
    return Submission.objects.select_related("release__dataset").get(job=job)


def _scoring_depths(job: Job, submission: Submission) -> tuple[int, int]:
    return job.params["max_depth"], job.params["holes_depth"]


_SCORE_PHASES = _phases(_submission_of_scoring, _scoring_depths)

SCORE_SUBMISSION = Operation(
    name="score_submission", title="Score a submission", params=PARAMS, check=_check, run=_both(_SCORE_PHASES),
    phases=_SCORE_PHASES, target=Release, target_field="release_id", error=SubmissionError)


# --- a submission scored again, its holes filled with what is known now --------------------------

def _fill_check(*, target: Submission, params: dict) -> None:
    if target.status == Submission.Status.SUBMITTED:
        raise SubmissionError(f"submission {target.pk} is not scored yet (its scoring job is queued, running or "
                              "failed): there is nothing to score again")
    _judge_check(target.release, params)


def _submission_of_fill(job: Job) -> Submission:
    return Submission.objects.select_related("release__dataset", "job").get(pk=job.params["submission_id"])


def _fill_depths(job: Job, submission: Submission) -> tuple[int, int]:
    """The depths it was first scored with (the run passed that max_depth; its holes have that K)."""
    first = submission.job.params if submission.job is not None else {}
    return (first.get("max_depth", PARAMS["max_depth"].high),
            (submission.holes or {}).get("k") or first.get("holes_depth", PARAMS["holes_depth"].default))


_FILL_PHASES = _phases(_submission_of_fill, _fill_depths)

FILL_SUBMISSION = Operation(
    name="fill_submission", title="Score a submission again, its holes filled", params=FILL_PARAMS,
    check=_fill_check, run=_both(_FILL_PHASES), phases=_FILL_PHASES, target=Submission,
    target_field="submission_id", error=SubmissionError)


def submission_fill_start(*, submission: Submission, judge_id: int | None = None, created_by=None,
                          idempotency_key: str | None = None) -> tuple[Job, bool]:
    """Queues the submission's scoring again, its holes filled by the machine judge and by the
    human labels its pool holds now. Raises SubmissionError (not scored yet; a judge that is not
    the release's, or whose scores are no probabilities), naming the parameter."""
    return operation_start(FILL_SUBMISSION, target=submission, params={"judge": judge_id}, created_by=created_by,
                           idempotency_key=idempotency_key)


# An admin's acceptance (its holes judged in a pool) is declared beside its service.
OPERATIONS = (SCORE_SUBMISSION, FILL_SUBMISSION, ACCEPT_SUBMISSION)


def submission_start(*, release: Release, uploaded_file, name: str, max_depth: int | None = None,
                     holes_depth: int | None = None, submitted_by=None,
                     idempotency_key: str | None = None) -> tuple[Submission, bool]:
    """Stores the run file and queues its scoring. Returns (submission, created): a request sent
    again with the same idempotency key (by the same user) gets the first submission."""
    size = getattr(uploaded_file, "size", None)
    if size is not None and size > MAX_FILE_BYTES:
        raise refusal_naming(SubmissionError(f"file: {size} bytes; at most {MAX_FILE_BYTES} are accepted "
                                             f"(cut the run at a smaller depth)"), "file")
    params = {"name": name} | ({"max_depth": max_depth} if max_depth is not None else {}) | (
        {"holes_depth": holes_depth} if holes_depth is not None else {})
    stored: list[str] = []

    def inputs() -> dict:
        stored.append(submission_file_store(uploaded_file=uploaded_file))
        return {"run_file": stored[0], "source_name": (uploaded_file.name or "")[:300]}

    try:
        with transaction.atomic():
            job, created = operation_start(SCORE_SUBMISSION, target=release, params=params, created_by=submitted_by,
                                           inputs=inputs, idempotency_key=idempotency_key)
            if created:
                submission = Submission.objects.create(
                    release=release, name=job.params["name"], run_file=job.params["run_file"],
                    source_name=job.params["source_name"], submitted_by=submitted_by, job=job)
            else:
                submission = Submission.objects.filter(job=job, release=release).first()
    except BaseException:
        # Nothing was written: the run file stored for it belongs to no submission.
        for name in stored:
            submission_file_remove(name)
        raise
    if not created and stored and stored[0] != job.params.get("run_file"):
        submission_file_remove(stored[0])  # a retried request: the first copy's file stands
    if submission is None:
        raise refusal_naming(SubmissionError("Idempotency-Key: this key was used for another request"),
                             "idempotency_key")
    return submission, created
