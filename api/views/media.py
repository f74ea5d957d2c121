"""A dataset's media check and playable copies (annotation/services/media/): the findings, and
starting either as a job. Admins start them; admins and researchers read the findings; raters and
anonymous callers are refused (the permission classes below; tests/api/test_media_api.py)."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Dataset
from annotation.services.media.check import dataset_media_state
from annotation.services.media.operations import (MEDIA_PREPARE, MediaCheckError, media_check_start,
                                                  media_prepare_start)
from annotation.services.media.prepare import PrepareError
from api.operations import declared_serializer, given, refused
from api.params import idempotency_key
from api.permissions import IsAdmin, IsAdminOrResearcherReadOnly
from api.views.jobs import JobOutputSerializer, job_accepted_response


class MediaProblemSerializer(serializers.Serializer):
    clip_id = serializers.CharField(help_text="the clip's id in the dataset")
    media = serializers.CharField()
    code = serializers.CharField()
    problem = serializers.CharField()
    fix = serializers.CharField()
    preparable = serializers.BooleanField(help_text="prepare_media fixes it")


class MediaStateSerializer(serializers.Serializer):
    summary = serializers.DictField()
    problems = MediaProblemSerializer(many=True)
    truncated = serializers.BooleanField()
    check_job = serializers.DictField(allow_null=True)
    prepare_job = serializers.DictField(allow_null=True)
    pools_without_failed_clips = serializers.ListField(child=serializers.DictField(),
                                                       help_text="pools built leaving failed clips out, and which")


class DatasetMediaCheckApi(APIView):
    """GET (admins, researchers): the media check's summary and every problem (clip, problem, fix).
    POST (admins): check the dataset's media again, as a job (202 + status URL)."""

    permission_classes = [IsAdminOrResearcherReadOnly]

    @extend_schema(responses=MediaStateSerializer)
    def get(self, request, dataset_id: int):
        dataset = get_object_or_404(Dataset, pk=dataset_id)
        return Response(dataset_media_state(dataset))

    @extend_schema(request=None, responses={202: JobOutputSerializer})
    def post(self, request, dataset_id: int):
        dataset = get_object_or_404(Dataset, pk=dataset_id)
        try:
            job, created = media_check_start(dataset=dataset, created_by=request.user,
                                             idempotency_key=idempotency_key(request))
        except MediaCheckError as exc:
            raise refused(exc) from exc
        return job_accepted_response(job, created)


class DatasetMediaPrepareApi(APIView):
    """Admins: make copies browsers play of the clips that failed the check for their container,
    codecs or index (optionally cut to spans and scaled), as a job (202 + status URL)."""

    permission_classes = [IsAdmin]
    InputSerializer = declared_serializer("MediaPrepareInput", MEDIA_PREPARE.params)

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request, dataset_id: int):
        dataset = get_object_or_404(Dataset, pk=dataset_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            job, created = media_prepare_start(dataset=dataset, params=given(data.validated_data),
                                               created_by=request.user, idempotency_key=idempotency_key(request))
        except PrepareError as exc:
            raise refused(exc) from exc
        return job_accepted_response(job, created)
