"""Judgment sets over REST: list, detail and download, import, a set from a pool, and the jobs that
score stored runs against a set or measure a rater_labels set's agreement (each stores a report)."""
from __future__ import annotations

from pathlib import PurePosixPath

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.generics import ListAPIView, RetrieveAPIView
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.views import APIView

from annotation.models import Dataset, Pool
from annotation.selectors.reports import judgment_set_list
from annotation.services.evaluation import CONVENTIONS, EvaluationError
from annotation.services.jobs.judgment_sets import (evaluation_start, judgment_set_agreement_start,
                                                    judgment_set_from_pool_start)
from annotation.services.jobs.judgment_sets import judgments_import_start
from annotation.services.judgment_sets.agreement import LEVELS, AgreementOptionsError
from annotation.services.judgment_sets.imports import JUDGMENT_FORMATS, REPEAT_RULES, JudgmentsImportError
from api.downloads import stored_file_download
from api.permissions import IsAdmin, IsAdminOrResearcherReadOnly
from api.views.jobs import JobOutputSerializer, job_accepted_response
from api.views.reports import FILE_RENDERERS


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

    class InputSerializer(serializers.Serializer):
        file = serializers.FileField()
        format = serializers.ChoiceField(choices=JUDGMENT_FORMATS, required=False, allow_blank=True)
        name = serializers.CharField(max_length=200, required=False, allow_blank=True)
        only_dataset = serializers.CharField(max_length=50, required=False, allow_blank=True)
        columns = serializers.CharField(max_length=300, required=False, allow_blank=True,
                                        help_text="rater_labels: e.g. unit=pair_id,rater=worker,value=relevance")
        repeats = serializers.ChoiceField(choices=REPEAT_RULES, required=False, allow_blank=True)
        file_format = serializers.ChoiceField(choices=("csv", "jsonl"), required=False, allow_blank=True)
        seeds_pools = serializers.BooleanField(required=False, allow_null=True, default=None)

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request, dataset_id: int):
        dataset = get_object_or_404(Dataset, pk=dataset_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        key = (request.headers.get("Idempotency-Key") or "").strip()[:100] or None
        try:
            options = {name: v.get(name) or None for name in ("columns", "repeats", "file_format")}
            job, created = judgments_import_start(dataset=dataset, uploaded_file=v["file"], fmt=v.get("format") or None,
                                                  name=v.get("name") or None, only_dataset=v.get("only_dataset") or None,
                                                  options=options, seeds_pools=v.get("seeds_pools"),
                                                  created_by=request.user, idempotency_key=key)
        except JudgmentsImportError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        return job_accepted_response(job, created)


class JudgmentSetFromPoolApi(APIView):
    """Admin: a new judgment set holding the pool's resolved labels as they stand (its corrected
    qrels; `originals`: every caption's original clip counts as relevant, FIRE's convention), as a
    job. The set seeds no pool."""

    permission_classes = [IsAdmin]

    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=200, required=False, allow_blank=True)
        originals = serializers.BooleanField(default=True)

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request, pool_id: int):
        pool = get_object_or_404(Pool.objects.select_related("dataset"), pk=pool_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            job = judgment_set_from_pool_start(pool=pool, name=data.validated_data.get("name") or None,
                                               originals=data.validated_data["originals"], created_by=request.user)
        except EvaluationError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
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

    class InputSerializer(serializers.Serializer):
        runs = serializers.ListField(child=serializers.IntegerField(min_value=1), min_length=1, max_length=50)
        conventions = serializers.ChoiceField(choices=list(CONVENTIONS), required=False, allow_blank=True)
        measures = serializers.ListField(child=serializers.CharField(max_length=50), required=False, max_length=50)

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request, judgment_set_id: int):
        judgment_set = get_object_or_404(judgment_set_list(), pk=judgment_set_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        try:
            job = evaluation_start(judgment_set=judgment_set, run_ids=v["runs"], conventions=v.get("conventions") or None,
                                   measures=v.get("measures") or None, created_by=request.user)
        except EvaluationError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        return job_accepted_response(job, True)


class JudgmentSetAgreementApi(APIView):
    """Admin: the agreement of a rater_labels set (percent agreement, Krippendorff's alpha with a
    bootstrap interval, per rater), as a job that stores a Report(kind="judgment_set_agreement").
    `repeats` defaults to the rule the set was imported with."""

    permission_classes = [IsAdmin]

    class InputSerializer(serializers.Serializer):
        level = serializers.ChoiceField(choices=LEVELS, default="nominal")
        # Grades are small numbers (0-3, 0-100): a threshold beyond a million binarizes nothing.
        binarize_at = serializers.FloatField(required=False, allow_null=True, default=None, min_value=-1_000_000,
                                             max_value=1_000_000)
        repeats = serializers.ChoiceField(choices=REPEAT_RULES, required=False, allow_blank=True)

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request, judgment_set_id: int):
        judgment_set = get_object_or_404(judgment_set_list(), pk=judgment_set_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        try:
            job = judgment_set_agreement_start(judgment_set=judgment_set, level=v["level"],
                                               binarize_at=v.get("binarize_at"), repeats=v.get("repeats") or None,
                                               created_by=request.user)
        except AgreementOptionsError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        return job_accepted_response(job, True)
