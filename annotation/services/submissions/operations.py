"""The submissions area's background operation (services/operations/): scoring a run submitted to
a release. Declared once here: its parameters (the model's name, the depth a run may rank, the K
of its holes), the check, and the run that calls score.py. The run file itself is stored by the
start (`inputs`) in the submissions folder (storage.py), beside the parameters."""
from __future__ import annotations

from django.db import transaction

from annotation.analysis.params import REQUIRED, Param
from annotation.models import Job, Release, Submission
from annotation.services.operations.operation import Operation, refusal_naming
from annotation.services.operations.start import operation_start
from annotation.services.submissions.score import submission_score
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
}


def _check(*, target, params: dict) -> dict:
    name = " ".join(params["name"].split())
    if not name:
        raise refusal_naming(SubmissionError("name: give the model's name"), "name")
    return params | {"name": name}


def _run(job: Job, progress) -> dict:
    p = job.params
    submission = Submission.objects.select_related("release__dataset").get(job=job)
    summary = submission_score(submission, max_depth=p["max_depth"], holes_k=p["holes_depth"], progress=progress)
    return {"submission_id": submission.pk, "release": summary["release"], "values": summary["values"],
            "judged": summary["judged"], "holes": {k: v for k, v in summary["holes"].items() if k != "per_query"}}


SCORE_SUBMISSION = Operation(
    name="score_submission", title="Score a submission", params=PARAMS, check=_check, run=_run, target=Release,
    target_field="release_id", error=SubmissionError)

OPERATIONS = (SCORE_SUBMISSION,)


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
