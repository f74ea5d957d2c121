"""Judgment sets over REST: list, detail and download, import, a set from a pool, and the jobs that
score stored runs against a set or measure a rater_labels set's agreement (each stores a report)."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath

from django.http import QueryDict
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.generics import ListAPIView, RetrieveAPIView
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.views import APIView

from annotation.models import Dataset, Pool
from annotation.selectors.reports import judgment_set_list
from annotation.services.evaluation.errors import EvaluationError
from annotation.services.judgment_sets.agreement import AgreementOptionsError
from annotation.services.judgment_sets.imports import JudgmentsImportError
from annotation.services.judgment_sets.operations import (AGREEMENT, DELETE, EVALUATE, FROM_POOL, IMPORT,
                                                          judgments_import_start)
from annotation.services.operations.start import operation_job
from api.downloads import stored_file_download
from api.operations import declared_serializer, given, refused
from api.permissions import IsAdmin, IsAdminOrResearcherReadOnly
from api.views.deletes import delete_accepted, delete_schema
from api.views.jobs import JobOutputSerializer, job_accepted_response
from api.views.reports import FILE_RENDERERS
from api.params import idempotency_key


class JudgmentSetOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    dataset = serializers.IntegerField(source="dataset_id")
    name = serializers.CharField()
    source_format = serializers.CharField()
    source_name = serializers.CharField()
    checksum = serializers.CharField()
    params = serializers.JSONField(help_text="How the file is read: rater_labels columns and repeat rule, FIRE tag, pool.")
    seeds_pools = serializers.BooleanField()
    pool = serializers.IntegerField(source="pool_id", allow_null=True)
    counts = serializers.JSONField()
    stored = serializers.SerializerMethodField(help_text="Whether the file is kept (sets imported before 2026-11 are not).")
    created_at = serializers.DateTimeField()

    def get_stored(self, obj) -> bool:
        return bool(obj.stored_file)


class JudgmentSetListApi(ListAPIView):
    """Admins and researchers: the judgment sets of a dataset, newest first."""

    permission_classes = [IsAdminOrResearcherReadOnly]
    serializer_class = JudgmentSetOutputSerializer

    def get_queryset(self):
        return judgment_set_list(dataset_id=self.kwargs["dataset_id"])


class JudgmentSetDetailApi(RetrieveAPIView):
    """Admins and researchers: one judgment set."""

    permission_classes = [IsAdminOrResearcherReadOnly]
    serializer_class = JudgmentSetOutputSerializer
    lookup_url_kwarg = "judgment_set_id"

    def get_queryset(self):
        return judgment_set_list()

    @delete_schema("judgment set (its verdicts, its file, the machine judges run against it)")
    def delete(self, request, judgment_set_id: int):
        return delete_accepted(request, DELETE, get_object_or_404(judgment_set_list(), pk=judgment_set_id))


class JudgmentSetDownloadApi(APIView):
    """Admins and researchers: the set's file as it was imported (a pool's set: its qrels)."""

    permission_classes = [IsAdminOrResearcherReadOnly]
    renderer_classes = FILE_RENDERERS

    @extend_schema(responses={(200, "application/octet-stream"): bytes})
    def get(self, request, judgment_set_id: int):
        judgment_set = get_object_or_404(judgment_set_list(), pk=judgment_set_id)
        if not judgment_set.stored_file:
            raise NotFound("this set was imported before files were kept")
        return stored_file_download(area="judgments", name=judgment_set.stored_file,
                                    filename=PurePosixPath(judgment_set.stored_file).name,
                                    content_type="application/octet-stream",
                                    missing="the set's file is missing from its storage",
                                    headers={"X-Content-SHA256": judgment_set.checksum})


def _blank_is_default(data):
    """The request's fields without the blank ones: a form's empty field chooses nothing, so the
    declared default applies (a blank choice would be refused as none of the choices)."""
    if isinstance(data, QueryDict):  # a form: a name may repeat (runs=1&runs=2)
        kept = QueryDict(mutable=True)
        for name, values in data.lists():
            if values := [value for value in values if value != ""]:
                kept.setlist(name, values)
        return kept
    if not isinstance(data, Mapping):
        return data  # the serializer refuses a body that is not an object
    return {name: value for name, value in data.items() if value != ""}


class JudgmentsImportApi(APIView):
    """Admin: import a named judgment set for a dataset, as a job: TREC qrels, TRECVID sample_eval
    qrels, FIRE dataset JSON, raw multi-rater labels (`rater_labels`) or QVHighlights/TVR/DiDeMo
    moment ground truth. The file is kept as imported.

    Pools built afterwards take the verdicts of qrels, sample_eval and FIRE sets instead of queueing
    the pairs, unless `seeds_pools` is false. `only_dataset` keeps only FIRE records of that
    "dataset" tag (e.g. MSVD from a file covering both); `columns`, `repeats` and `file_format` say
    how to read a rater_labels file. Send an `Idempotency-Key` header to make a retried upload
    return the first job."""

    permission_classes = [IsAdmin]
    parser_classes = [MultiPartParser, FormParser]

    # The import's declared parameters (services/judgment_sets/operations.py) and the file.
    InputSerializer = declared_serializer("JudgmentsImportInputSerializer", IMPORT.params,
                                          extra={"file": serializers.FileField()})

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request, dataset_id: int):
        dataset = get_object_or_404(Dataset, pk=dataset_id)
        data = self.InputSerializer(data=_blank_is_default(request.data))
        data.is_valid(raise_exception=True)
        params = given(data.validated_data)
        upload = params.pop("file")
        key = idempotency_key(request)
        try:
            job, created = judgments_import_start(dataset=dataset, uploaded_file=upload, params=params,
                                                  created_by=request.user, idempotency_key=key)
        except JudgmentsImportError as exc:
            raise refused(exc) from exc
        return job_accepted_response(job, created)


class JudgmentSetFromPoolApi(APIView):
    """Admin: a new judgment set holding the pool's resolved labels as they stand (its corrected
    qrels; `originals`: every caption's original clip counts as relevant, FIRE's convention), as a
    job. The set seeds no pool."""

    permission_classes = [IsAdmin]

    InputSerializer = declared_serializer("JudgmentSetFromPoolInputSerializer", FROM_POOL.params)

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request, pool_id: int):
        pool = get_object_or_404(Pool.objects.select_related("dataset"), pk=pool_id)
        data = self.InputSerializer(data=_blank_is_default(request.data))
        data.is_valid(raise_exception=True)
        try:
            job = operation_job(FROM_POOL, target=pool, params=given(data.validated_data), created_by=request.user)
        except EvaluationError as exc:
            raise refused(exc) from exc
        return job_accepted_response(job, True)


class JudgmentSetEvaluateApi(APIView):
    """Admin: score stored runs of the dataset against the set as the official tool of its format
    does (trec_eval for qrels and pool sets, sample_eval.pl for sample_eval, the benchmark's own
    evaluation for a moment set), exactly as `evaluate --judgment-set NAME --run NAME` does: ranked
    clip runs, score-matrix runs and moment runs of the set's format (services.judgment_sets.scoring
    says which a set can score; any other is a 400 naming the run). A job that stores a
    Report(kind="evaluation") with the conventions, the runs' checksums and the library versions.
    `measures`: trec_eval / ir_measures names, or sample_eval's; default the format's set."""

    permission_classes = [IsAdmin]

    RENAME = {"run_ids": "runs"}
    InputSerializer = declared_serializer("JudgmentSetEvaluateInputSerializer", EVALUATE.params, rename=RENAME)

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request, judgment_set_id: int):
        judgment_set = get_object_or_404(judgment_set_list(), pk=judgment_set_id)
        data = self.InputSerializer(data=_blank_is_default(request.data))
        data.is_valid(raise_exception=True)
        try:
            job = operation_job(EVALUATE, target=judgment_set, params=given(data.validated_data),
                                created_by=request.user)
        except EvaluationError as exc:
            raise refused(exc, rename=self.RENAME) from exc
        return job_accepted_response(job, True)


class JudgmentSetAgreementApi(APIView):
    """Admin: the agreement of a rater_labels set (percent agreement, Krippendorff's alpha with a
    bootstrap interval, per rater), as a job that stores a Report(kind="judgment_set_agreement").
    `repeats` defaults to the rule the set was imported with."""

    permission_classes = [IsAdmin]

    InputSerializer = declared_serializer("JudgmentSetAgreementInputSerializer", AGREEMENT.params)

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request, judgment_set_id: int):
        judgment_set = get_object_or_404(judgment_set_list(), pk=judgment_set_id)
        data = self.InputSerializer(data=_blank_is_default(request.data))
        data.is_valid(raise_exception=True)
        try:
            job = operation_job(AGREEMENT, target=judgment_set, params=given(data.validated_data),
                                created_by=request.user)
        except AgreementOptionsError as exc:
            raise refused(exc) from exc
        return job_accepted_response(job, True)
