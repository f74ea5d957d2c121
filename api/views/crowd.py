"""Crowd studies: the admin's study and quality-rule settings and QC table, and the worker's side
of a study (arrive by the platform's link, consent, guidelines, progress, leave, return).

A worker is signed in by session when they arrive by a browser that can keep one (their account
has no password). A platform id alone never signs anyone in (services/crowd/arrivals, identity):
taking up an existing worker needs this browser's session or the study's signed cookie, or the
worker's resume code. Someone already signed in as another account is never signed out by an
arrival: the pages let them choose, the API refuses (409 `signed_in`). Every worker endpoint
answers 404 to anyone who is not a worker of that study, so a study's existence is not told to
other accounts."""
from __future__ import annotations

import math

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import CrowdStudy, CrowdWorker, Pool, QualityRule
from annotation.selectors.crowd_quality import pool_rater_quality
from annotation.services.crowd.arrivals import (ArrivalRefused, arrival_from_query, study_places_taken, worker_consent,
                                                worker_guidelines_read, worker_release_held, worker_return)
from annotation.services.crowd.browser import (REFUSAL_STATUS, arrive_in_browser, completion_json, csrf_passes,
                                               signed_in_elsewhere)
from annotation.services.crowd.identity import resume_code
from annotation.services.crowd.quota import crowd_idle_release, worker_progress, worker_seen
from annotation.services.crowd.studies import (RULE_FIELDS, STUDY_FIELDS, StudyInvalid, crowd_study_warnings,
                                              quality_rule_save, quality_rule_warnings, study_save)
from annotation.services.crowd.worker_tokens import worker_token_issue
from api.permissions import IsAdmin
from config.throttling import CrowdArrivalThrottle

SIGNED_IN_MESSAGE = "You are signed in as another account. Sign out first, then open the study link again."


def worker_for(request, token: str) -> CrowdWorker:
    """The signed-in worker of the study with this token; 404 for anyone else."""
    worker = (CrowdWorker.objects.select_related("study__pool", "user")
              .filter(study__token=token, user_id=request.user.pk).first()) if request.user.is_authenticated else None
    if worker is None:
        raise NotFound("no such study")
    return worker


def progress_json(worker: CrowdWorker) -> dict:
    progress = worker_progress(worker=worker)
    worker.refresh_from_db(fields=["stage", "completed_at", "completed_session_id"])
    return {"stage": progress.stage, "judged": progress.judged, "quota_pairs": progress.quota_pairs,
            "quota_minutes": progress.quota_minutes, "seconds_left": progress.seconds_left,
            "training": progress.training, "done": progress.done, "pool_id": worker.study.pool_id,
            "completion": completion_json(worker), "resume_code": resume_code(worker)}


def _nan_to_none(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    return value


# ---- admin ---------------------------------------------------------------------------------

class CrowdStudySerializer(serializers.Serializer):
    platform = serializers.ChoiceField(choices=CrowdStudy.Platform.values)
    title = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, max_length=20000)
    completion_code = serializers.RegexField(r"^[A-Za-z0-9_-]*$", required=False, allow_blank=True, max_length=64)
    quota_pairs = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=100000)
    quota_minutes = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=24 * 60)
    consent_text = serializers.CharField(max_length=50000)
    guidelines_extra = serializers.CharField(required=False, allow_blank=True, max_length=50000)
    training_required = serializers.BooleanField(required=False)
    idle_timeout_seconds = serializers.IntegerField(required=False, min_value=30, max_value=24 * 3600)
    is_open = serializers.BooleanField(required=False)
    places = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=1_000_000,
                                      help_text="How many workers may take part; null: no cap.")


def study_json(study: CrowdStudy, request) -> dict:
    data = {field: getattr(study, field) for field in STUDY_FIELDS}
    query = ("PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
             if study.platform == CrowdStudy.Platform.PROLIFIC else "")
    link = request.build_absolute_uri(f"/study/{study.token}/")
    return data | {"token": study.token, "pool_id": study.pool_id, "entry_url": f"{link}?{query}" if query else link,
                   "workers": study.workers.count(), "places_taken": study_places_taken(study),
                   "workers_done": study.workers.filter(stage=CrowdWorker.Stage.DONE).count(),
                   # Settings of the study that cannot act on its pool, with the numbers.
                   "warnings": crowd_study_warnings(pool=study.pool, study=study)}


class CrowdStudyApi(APIView):
    """Admin: the pool's crowd study (GET; 404 when it has none), create or change it (PUT: every
    field on creation, any of them after; the link's token never changes)."""

    permission_classes = [IsAdmin]

    def get(self, request, pool_id: int):
        study = get_object_or_404(CrowdStudy, pool_id=pool_id)
        return Response(study_json(study, request))

    @extend_schema(request=CrowdStudySerializer)
    def put(self, request, pool_id: int):
        pool = get_object_or_404(Pool, pk=pool_id)
        exists = CrowdStudy.objects.filter(pool=pool).exists()
        data = CrowdStudySerializer(data=request.data, partial=exists)
        data.is_valid(raise_exception=True)
        try:
            study = study_save(pool=pool, **data.validated_data)
        except StudyInvalid as bad:
            raise ValidationError({bad.field: [str(bad)]}) from bad
        return Response(study_json(study, request), status=status.HTTP_200_OK if exists else status.HTTP_201_CREATED)


class QualityRuleSerializer(serializers.Serializer):
    enabled = serializers.BooleanField(required=False)
    min_gold_answers = serializers.IntegerField(required=False, min_value=1, max_value=10000)
    min_gold_accuracy = serializers.FloatField(required=False, min_value=0, max_value=1)
    set_aside_labels = serializers.BooleanField(required=False)
    too_fast_seconds = serializers.FloatField(required=False, min_value=0, max_value=3600)


class QualityRuleApi(APIView):
    """Admin: the pool's gold rule (GET; 404 when it has none), create or change it (PUT)."""

    permission_classes = [IsAdmin]

    def get(self, request, pool_id: int):
        rule = get_object_or_404(QualityRule.objects.select_related("pool"), pool_id=pool_id)
        return Response(_rule_data(rule))

    @extend_schema(request=QualityRuleSerializer)
    def put(self, request, pool_id: int):
        pool = get_object_or_404(Pool, pk=pool_id)
        data = QualityRuleSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            rule = quality_rule_save(pool=pool, **data.validated_data)
        except StudyInvalid as bad:
            raise ValidationError({bad.field: [str(bad)]}) from bad
        return Response(_rule_data(rule))


def _rule_data(rule: QualityRule) -> dict:
    """The rule's settings and, when it cannot act on its pool, why (`warnings`, with the numbers)."""
    return {field: getattr(rule, field) for field in RULE_FIELDS} | {
        "warnings": quality_rule_warnings(pool=rule.pool, rule=rule)}


class RaterQualityApi(APIView):
    """Admin: per rater of the pool, gold accuracy with its 95% Wilson interval, agreement with
    the consensus, time per label and too-fast answers, drift (first against last half), whether
    paused and what the pool's rule did. Undefined figures are null."""

    permission_classes = [IsAdmin]

    def get(self, request, pool_id: int):
        pool = get_object_or_404(Pool, pk=pool_id)
        table = pool_rater_quality(pool=pool)
        rule = table["rule"]
        return Response({
            "rule": None if rule is None else {field: getattr(rule, field) for field in RULE_FIELDS},
            "too_fast_seconds": table["too_fast_seconds"],
            "raters": [_nan_to_none(row) for row in table["raters"]],
        })


# ---- the worker ----------------------------------------------------------------------------

class StudyArriveApi(APIView):
    """Anyone: arrive in a study with the platform's parameters (Prolific: PROLIFIC_PID, STUDY_ID,
    SESSION_ID; MTurk: workerId, assignmentId, hitId, turkSubmitTo), as the study link's form does.
    A new worker id gets an account (while the study is open and has a place); an existing one
    only from the browser its work started in (session or study cookie) or with its
    `resume_code`. Signs them in (session; the call needs Django's CSRF token, as a form does);
    an MTurk worker also gets `worker_token`, for `Authorization: StudyWorker <token>` where no
    cookie is sent (MTurk's iframe; a call there without CSRF cookie signs nobody in and goes on
    by the token alone). Refusals: 400 invalid, 403 resume_code_wrong, 409 other_worker /
    other_assignment / done / full / resume_needed / signed_in (someone else is signed in), 410
    closed, 429 too many arrivals from this address. An MTurk preview
    (assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE) creates nothing and returns the description."""

    permission_classes = [AllowAny]
    throttle_classes = [*APIView.throttle_classes, CrowdArrivalThrottle]

    @extend_schema(request=inline_serializer("StudyArrival", {name: serializers.CharField(required=False) for name in (
        "PROLIFIC_PID", "STUDY_ID", "SESSION_ID", "workerId", "assignmentId", "hitId", "turkSubmitTo", "resume_code")}))
    def post(self, request, token: str):
        study = CrowdStudy.objects.filter(token=token[:64]).first()
        if study is None:
            raise NotFound("no such study")
        query = {k: v for k, v in request.data.items() if isinstance(v, str)} if hasattr(request.data, "items") else {}
        keep_session = csrf_passes(request)
        if not keep_session and study.platform != CrowdStudy.Platform.MTURK:
            raise PermissionDenied("CSRF token missing or incorrect: arrive from the study's page, or send its CSRF token.")
        try:
            arrival = arrival_from_query(study=study, query=query)
            if arrival.preview:
                return Response({"preview": True, "title": study.title, "description": study.description})
            if keep_session and signed_in_elsewhere(request, study):
                return Response({"detail": SIGNED_IN_MESSAGE, "code": "signed_in"}, status=REFUSAL_STATUS["signed_in"])
            worker, mark = arrive_in_browser(request, study, arrival, create=True, resume_code=query.get("resume_code", ""),
                                             keep_session=keep_session)
        except ArrivalRefused as refused:
            return Response({"detail": str(refused), "code": refused.code}, status=REFUSAL_STATUS.get(refused.code, 400))
        body = {"preview": False, **progress_json(worker)}
        if study.platform == CrowdStudy.Platform.MTURK:
            # For MTurk's iframe, where the session cookie just set is never sent back.
            body["worker_token"] = worker_token_issue(worker=worker)
        return mark(Response(body))


class StudyProgressApi(APIView):
    """The study's worker: where I am (stage, pairs judged of the quota, time left, training) and,
    once done, how I am sent back (the completion code, or the MTurk form). Also says the page is
    still open, so the worker is not taken for idle."""

    permission_classes = [IsAuthenticated]

    def get(self, request, token: str):
        worker = worker_for(request, token)
        worker_seen(worker=worker)
        crowd_idle_release(study=worker.study)
        return Response(progress_json(worker))


class StudyConsentApi(APIView):
    """The study's worker: agree (or not) to the consent text."""

    permission_classes = [IsAuthenticated]

    class InputSerializer(serializers.Serializer):
        agree = serializers.BooleanField()

    def post(self, request, token: str):
        worker = worker_for(request, token)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        worker_consent(worker=worker, agree=data.validated_data["agree"])
        return Response(progress_json(worker_for(request, token)))


class StudyGuidelinesReadApi(APIView):
    """The study's worker: I have read the guidelines; the work (training, then judging) starts."""

    permission_classes = [IsAuthenticated]

    def post(self, request, token: str):
        worker = worker_for(request, token)
        if worker.stage not in (CrowdWorker.Stage.GUIDELINES, CrowdWorker.Stage.WORK, CrowdWorker.Stage.DONE):
            return Response({"detail": "agree to the consent text first", "code": "consent"}, status=409)
        worker_guidelines_read(worker=worker)
        return Response(progress_json(worker_for(request, token)))


class StudyLeaveApi(APIView):
    """The study's worker: I stop for now; the pairs I hold go back to the queue at once. Coming
    back by the study link resumes."""

    permission_classes = [IsAuthenticated]

    def post(self, request, token: str):
        worker = worker_for(request, token)
        released = worker_release_held(worker=worker)
        return Response({"released": released})


class StudyReturnApi(APIView):
    """The study's worker: I return the task (as on the platform). The pairs I hold go back; if I
    have judged nothing my place in the study is freed (`freed`), else I keep it and my answers."""

    permission_classes = [IsAuthenticated]

    def post(self, request, token: str):
        worker = worker_for(request, token)
        freed = worker_return(worker=worker)
        return Response({"freed": freed, **progress_json(worker_for(request, token))})
