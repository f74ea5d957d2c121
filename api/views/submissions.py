"""Submissions to a release (annotation/services/submissions): a run file submitted, scored by a job
against the release's qrels.txt (measures, Judged@K, holes per query). Who may call what is
annotation/selectors/submissions.py's rule: admins everything; readers of releases submit and see
their own; visitors submit only where an admin allowed it (throttled as uploads, by address);
raters never. The policy (anonymous allowed) is an admin's PATCH."""
from __future__ import annotations

from django.http import Http404
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.generics import ListAPIView, RetrieveAPIView
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import roles
from annotation.models import Job, Release, ReleaseSubmissionPolicy, Submission
from annotation.selectors.submissions import (submission_readers_may_submit, submission_release_for,
                                              submissions_visible_to)
from annotation.services.jobs import job_live_progress
from annotation.services.submissions.accept import SubmissionAcceptError, submission_accept_start
from annotation.services.submissions.operations import (FILL_SUBMISSION, SCORE_SUBMISSION, SubmissionError,
                                                        submission_fill_start, submission_start)
from annotation.services.submissions.policy import submission_policy_set
from api.operations import declared_serializer, given, refused
from api.parsers import JSONParser
from api.permissions import CanReadReleases, IsAdmin
from api.params import idempotency_key
from api.views.jobs import job_accepted_response
from api.views.pools import JudgingSettingsFields
from config.throttling import AnonThrottle, UploadThrottle, UserThrottle


class CanSubmitRuns(BasePermission):
    """Reading submissions: admins and readers of releases (their own). Submitting: those, and
    anyone but a rater where the release allows anonymous submissions (the view checks the
    release: a 403 where it does not)."""

    message = "Only admins and readers of releases may see submissions; submitting without an account needs a " \
              "release that allows it."

    def has_permission(self, request, view) -> bool:
        if submission_readers_may_submit(request.user):
            return True
        return request.method == "POST" and not roles.is_rater(request.user)


class SubmissionJobSerializer(serializers.ModelSerializer):
    progress = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = ["id", "status", "progress", "message", "errors", "created_at", "finished_at"]

    def get_progress(self, job) -> dict:
        live = job_live_progress(job=job)
        return {"done": live.get("done", 0), "total": live.get("total")}


class SubmissionOutputSerializer(serializers.ModelSerializer):
    release = serializers.CharField(source="release.slug", read_only=True)
    submitted_by = serializers.SerializerMethodField()
    state = serializers.CharField(read_only=True, help_text="status, or 'failed' when the scoring job failed (its "
                                                            "errors name file, line and field)")
    job = SubmissionJobSerializer(read_only=True)
    url = serializers.SerializerMethodField()

    class Meta:
        model = Submission
        fields = ["id", "release", "release_id", "name", "source_name", "submitted_by", "created_at", "status", "state",
                  "summary", "job", "url", "pool", "accepted_at"]
        extra_kwargs = {"pool": {"help_text": "once accepted: the pool its holes are judged in"}}

    def get_submitted_by(self, submission) -> str | None:
        return submission.submitted_by.get_username() if submission.submitted_by else None

    def get_url(self, submission) -> str:
        return reverse("api:submission-detail", args=[submission.pk])


class ReleaseSubmissionListApi(ListAPIView):
    """GET: the release's submissions (admins: all; a reader: their own), newest first.
    POST (multipart: `file`, a TREC run; `name`, the model's name; optional `max_depth`, `holes_depth`):
    submit a run; it is scored by a job (202 with the submission; poll its `url`). Send an
    `Idempotency-Key` header to make a retried request return the first submission (200)."""

    permission_classes = [CanSubmitRuns]
    throttle_classes = [AnonThrottle, UserThrottle, UploadThrottle]
    parser_classes = [MultiPartParser, FormParser]
    serializer_class = SubmissionOutputSerializer
    InputSerializer = declared_serializer("SubmissionInput", SCORE_SUBMISSION.params,
                                          extra={"file": serializers.FileField()})

    def get_queryset(self):
        release = get_object_or_404(roles.releases_readable_by(self.request.user, Release.objects.all()),
                                    pk=self.kwargs["release_id"])
        return submissions_visible_to(self.request.user, release=release)

    @extend_schema(request=InputSerializer, responses={202: SubmissionOutputSerializer})
    def post(self, request, release_id: int):
        release = submission_release_for(user=request.user, release_id=release_id)
        if release is None:
            if submission_readers_may_submit(request.user):
                raise Http404("no such release")
            raise PermissionDenied("this release takes no submissions without an account")
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = given(data.validated_data)
        submitter = request.user if submission_readers_may_submit(request.user) else None
        try:
            submission, created = submission_start(release=release, uploaded_file=v.pop("file"), name=v.pop("name"),
                                                   max_depth=v.get("max_depth"), holes_depth=v.get("holes_depth"),
                                                   submitted_by=submitter,
                                                   idempotency_key=idempotency_key(request) if submitter else None)
        except SubmissionError as exc:
            raise refused(exc) from exc
        body = SubmissionOutputSerializer(submission, context={"request": request}).data
        return Response(body, status=202 if created else 200, headers={"Location": body["url"]})


class SubmissionDetailApi(RetrieveAPIView):
    """One submission: its state, its scoring job's progress and errors, and once scored its summary
    (measures with intervals, Judged@K, holes per query). Admins: any; a reader: their own."""

    permission_classes = [CanSubmitRuns]
    serializer_class = SubmissionOutputSerializer
    lookup_url_kwarg = "submission_id"

    def get_queryset(self):
        return submissions_visible_to(self.request.user)


class SubmissionPolicySerializer(serializers.Serializer):
    anonymous_allowed = serializers.BooleanField(help_text="visitors without an account may submit runs to this "
                                                           "release (throttled by address)")


class ReleaseSubmissionPolicyApi(APIView):
    """GET (readers of the release): whether it takes anonymous submissions. PATCH (admins): change it."""

    permission_classes = [CanReadReleases]

    def _release(self, request, release_id: int) -> Release:
        return get_object_or_404(roles.releases_readable_by(request.user, Release.objects.all()), pk=release_id)

    @extend_schema(responses={200: SubmissionPolicySerializer})
    def get(self, request, release_id: int):
        release = self._release(request, release_id)
        policy = ReleaseSubmissionPolicy.objects.filter(release=release).first()
        return Response({"anonymous_allowed": bool(policy and policy.anonymous_allowed)})

    @extend_schema(request=SubmissionPolicySerializer, responses={200: SubmissionPolicySerializer})
    def patch(self, request, release_id: int):
        release = self._release(request, release_id)
        data = SubmissionPolicySerializer(data=request.data)
        data.is_valid(raise_exception=True)
        policy = submission_policy_set(release=release, anonymous_allowed=data.validated_data["anonymous_allowed"])
        return Response({"anonymous_allowed": policy.anonymous_allowed})


class SubmissionAcceptApi(APIView):
    """Admins only (staff: the admins of every pool; raters, researchers, the submitter and visitors
    are refused): accept a scored submission. Its holes become the pairs of a new pool, seeded from
    the release's verdicts so only the holes are queued, judged with the strategy and settings given
    flat as in a pool build (`strategy`, `sample_rate`, `top_stratum_depth`, ...; a strategy setting
    not given is the release's pool's). A job (202 with its status URL); the submission's status
    becomes `accepted` and its `pool` the new pool. Send an `Idempotency-Key` header to make a
    retried request return the first job (200)."""

    permission_classes = [IsAdmin]
    parser_classes = [JSONParser, FormParser, MultiPartParser]

    class InputSerializer(JudgingSettingsFields):
        pass

    @extend_schema(request=InputSerializer, responses={202: None})
    def post(self, request, submission_id: int):
        submission = get_object_or_404(Submission.objects.select_related("release__dataset", "job", "pool"),
                                       pk=submission_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        judging = {name: value for name, value in data.validated_data.items() if value != ""}
        try:
            job, created = submission_accept_start(submission=submission, judging=judging, accepted_by=request.user,
                                                   idempotency_key=idempotency_key(request))
        except SubmissionAcceptError as exc:
            raise refused(exc) from exc
        return job_accepted_response(job, created)


class MaySeeSubmissions(BasePermission):
    """Admins and readers of releases; the view then finds the submission among those they may see."""

    message = "Only the release's admins and the submitter may score a submission again."

    def has_permission(self, request, view) -> bool:
        return submission_readers_may_submit(request.user)


class SubmissionRescoreApi(APIView):
    """The release's admins (staff) and the submitter (their own; any other account gets a 404,
    visitors and raters a 403): score a scored submission again, its holes filled with what is
    known now: the machine judge (`judge`: the id of a machine judge of the release's pools; by
    default their only one) asked for the holes it has not answered yet, and the human labels its
    pool holds (once accepted). A job; when it succeeds the submission's `summary.fill` is replaced
    (its `job_id` names the job). Send an `Idempotency-Key` header to make a retried request return
    the first job (200)."""

    permission_classes = [MaySeeSubmissions]
    InputSerializer = declared_serializer("SubmissionRescoreInput", FILL_SUBMISSION.params)

    @extend_schema(request=InputSerializer, responses={202: SubmissionJobSerializer})
    def post(self, request, submission_id: int):
        submission = get_object_or_404(submissions_visible_to(request.user).select_related("release__dataset"),
                                       pk=submission_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            job, created = submission_fill_start(submission=submission,
                                                 judge_id=given(data.validated_data).get("judge"),
                                                 created_by=request.user, idempotency_key=idempotency_key(request))
        except SubmissionError as exc:
            raise refused(exc) from exc
        url = reverse("api:submission-detail", args=[submission.pk])
        return Response(SubmissionJobSerializer(job).data | {"submission_url": url}, status=202 if created else 200,
                        headers={"Location": url})
