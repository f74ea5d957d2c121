"""The release page's submissions section (frontend/templates/frontend/releases/_submissions.html):
a form to submit a run, the release's submissions (admins: all; a reader: their own) and, for
admins, whether the release takes anonymous submissions. The rule of who may do what is the API's
(annotation/selectors/submissions.py); the scoring is services/submissions."""
from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation import roles
from annotation.analysis.judging.settings import JUDGING_PARAMS
from annotation.models import Job, Submission
from annotation.selectors.submissions import (release_anonymous_submissions_allowed, submission_readers_may_submit,
                                              submission_release_for, submissions_visible_to)
from annotation.services.submissions.accept import ACCEPT_SUBMISSION, SubmissionAcceptError, submission_accept_start
from annotation.services.submissions.operations import SCORE_SUBMISSION, SubmissionError, submission_start
from annotation.services.submissions.policy import submission_policy_set
from config.throttling import UploadThrottle

#: How many submissions the page lists (newest first); the API lists every one.
SHOWN = 200


def _state(submission: Submission) -> str:
    return "being scored" if submission.state == Submission.Status.SUBMITTED else submission.state


def _row(submission: Submission, accepting: set[int]) -> dict:
    summary = submission.summary or {}
    values = summary.get("values") or {}
    judged = summary.get("judged") or {}
    holes = summary.get("holes") or {}
    return {"submission": submission, "state": _state(submission),
            "measures": [(m, _percent((values.get(m) or {}).get("value"))) for m in summary.get("measures", [])],
            "judged": [(name, _percent(value)) for name, value in judged.items()],
            "holes": holes.get("total"), "holes_k": holes.get("k"),
            "queries_with_holes": holes.get("queries_with_holes"), "queries": summary.get("queries_answered"),
            "errors": (submission.job.errors or [])[:5] if submission.job and _state(submission) == "failed" else [],
            "acceptable": submission.state == Submission.Status.SCORED and submission.pk not in accepting,
            "accepting": submission.pk in accepting}


def _accepting(submission_ids: list[int]) -> set[int]:
    """The submissions whose acceptance job is queued or running (the row says so, not the form)."""
    return set(Job.objects.filter(operation=ACCEPT_SUBMISSION.name, params__submission_id__in=submission_ids,
                                  status__in=[Job.Status.QUEUED, Job.Status.RUNNING])
               .values_list("params__submission_id", flat=True))


def _percent(value) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def submissions_context(request, release) -> dict:
    """What the release page's submissions section shows (a dict merged into the page's context)."""
    listed = list(submissions_visible_to(request.user, release=release).select_related("pool")[:SHOWN])
    accepting = _accepting([s.pk for s in listed])
    rows = [_row(s, accepting) for s in listed]
    return {"submissions": {
        "rows": rows,
        "may_submit": submission_release_for(user=request.user, release_id=release.pk) is not None,
        "is_admin": roles.is_admin(request.user),
        "anonymous_allowed": release_anonymous_submissions_allowed(release_id=release.pk),
        "max_depth": SCORE_SUBMISSION.params["max_depth"],
        "holes_depth": SCORE_SUBMISSION.params["holes_depth"].default,
        "strategies": JUDGING_PARAMS["strategy"].choices, "sample_rate": JUDGING_PARAMS["sample_rate"],
    }}


def _back(release_id: int):
    return redirect(reverse("frontend:release-detail", args=[release_id]) + "#release-submissions")


@require_POST
def release_submit(request, release_id: int):
    """The form's POST: stores the run and queues its scoring, then back to the release page."""
    release = submission_release_for(user=request.user, release_id=release_id)
    if release is None:
        raise Http404("no release that takes your submissions")
    # The API's upload limit (by user, or by address without an account) counts the page's too.
    if not UploadThrottle().allow_request(request, None):
        return HttpResponse("Too many uploads; try again later.", status=429, content_type="text/plain")
    uploaded = request.FILES.get("file")
    if uploaded is None:
        messages.error(request, "Choose a run file (TREC run: query Q0 clip rank score tag).")
        return _back(release_id)
    submitter = request.user if submission_readers_may_submit(request.user) else None
    try:
        submission, _ = submission_start(release=release, uploaded_file=uploaded, name=request.POST.get("name", ""),
                                         submitted_by=submitter)
    except SubmissionError as exc:
        messages.error(request, str(exc))
        return _back(release_id)
    messages.success(request, f"Submitted {submission.name}: it is being scored against {release.slug}.")
    return _back(release_id)


@require_POST
def release_submission_policy(request, release_id: int):
    """An admin's form: whether the release takes submissions without an account."""
    if not roles.is_admin(request.user):
        raise Http404("admins only")
    release = submission_release_for(user=request.user, release_id=release_id)
    if release is None:
        raise Http404("no such release")
    policy = submission_policy_set(release=release, anonymous_allowed=request.POST.get("anonymous_allowed") == "on")
    messages.success(request, "Anonymous submissions are " + ("allowed." if policy.anonymous_allowed else "off."))
    return _back(release_id)


@require_POST
def release_submission_accept(request, release_id: int, submission_id: int):
    """An admin's form (the API's rule: admins only): accept a scored submission, its holes judged in
    a new pool with the strategy chosen (empty: the release's pool's); the job runs in the background."""
    if not roles.is_admin(request.user):
        raise Http404("admins only")
    submission = get_object_or_404(Submission.objects.select_related("release__dataset", "job", "pool"),
                                   pk=submission_id, release_id=release_id)
    judging = {}
    if request.POST.get("strategy"):
        judging["strategy"] = request.POST["strategy"]
    if request.POST.get("sample_rate"):
        try:
            judging["sample_rate"] = float(request.POST["sample_rate"])
        except ValueError:
            messages.error(request, f"Sample rate: '{request.POST['sample_rate']}' is not a number.")
            return _back(release_id)
    try:
        submission_accept_start(submission=submission, judging=judging, accepted_by=request.user)
    except SubmissionAcceptError as exc:
        messages.error(request, str(exc))
        return _back(release_id)
    messages.success(request, f"Accepting {submission.name}: its holes are being queued in a new pool.")
    return _back(release_id)
