from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.generics import ListAPIView
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.formats.datasets import DATASET_FORMATS, MediaTemplate
from annotation.formats.runs import RUN_FORMATS
from annotation.models import Dataset, Run
from annotation.services.jobs.imports import dataset_import_start, run_import_start
from api.permissions import IsAdmin, IsAdminOrResearcherReadOnly
from api.views.jobs import JobOutputSerializer, job_accepted_response


class DatasetOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = Dataset
        fields = ["id", "name", "description", "source_format", "source_name", "created_at", "clip_count", "caption_count",
                  "original_positive_count"]


def _datasets():
    # The counts are stored on the row (services/datasets.py): a page costs the same at any dataset size.
    return Dataset.objects.order_by("name")


class DatasetListApi(ListAPIView):
    """Admins and researchers: the datasets."""

    permission_classes = [IsAdminOrResearcherReadOnly]
    serializer_class = DatasetOutputSerializer

    def get_queryset(self):
        return _datasets()


class DatasetDetailApi(APIView):
    permission_classes = [IsAdminOrResearcherReadOnly]

    @extend_schema(responses=DatasetOutputSerializer)
    def get(self, request, dataset_id: int):
        return Response(DatasetOutputSerializer(get_object_or_404(_datasets(), pk=dataset_id)).data)


def _idempotency_key(request) -> str | None:
    return (request.headers.get("Idempotency-Key") or "").strip()[:100] or None


class DatasetImportApi(APIView):
    """Admin: upload a dataset file; it is imported by a background job (202 + status URL).

    Send an `Idempotency-Key` header to make a retried upload return the first job."""

    permission_classes = [IsAdmin]
    parser_classes = [MultiPartParser, FormParser]

    class InputSerializer(serializers.Serializer):
        file = serializers.FileField()
        name = serializers.CharField(max_length=200)
        format = serializers.ChoiceField(choices=DATASET_FORMATS, required=False, allow_blank=True)
        media_template = serializers.CharField(required=False, allow_blank=True, default="", max_length=1000)
        description = serializers.CharField(required=False, allow_blank=True, default="")

        def validate_media_template(self, value: str) -> str:
            # Refused now, naming the field, rather than by the job after the upload.
            try:
                MediaTemplate(value)
            except ValueError as exc:
                raise serializers.ValidationError(str(exc)) from exc
            return value

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        job, created = dataset_import_start(uploaded_file=v["file"], name=v["name"], fmt=v.get("format") or None,
                                            media_template=v["media_template"], description=v["description"],
                                            created_by=request.user, idempotency_key=_idempotency_key(request))
        return job_accepted_response(job, created)


class RunOutputSerializer(serializers.ModelSerializer):
    uploader = serializers.CharField(source="uploader.username", default=None, read_only=True)

    class Meta:
        model = Run
        fields = ["id", "dataset", "name", "kind", "uploader", "source_name", "source_format", "checksum", "depth",
                  "prediction_count", "caption_count", "created_at"]


class RunListApi(ListAPIView):
    """Admins and researchers: the runs of a dataset."""

    permission_classes = [IsAdminOrResearcherReadOnly]
    serializer_class = RunOutputSerializer

    def get_queryset(self):
        return Run.objects.filter(dataset_id=self.kwargs["dataset_id"]).select_related("uploader")


class MaxDepthField(serializers.CharField):
    """A positive whole number, or "all" (also 0) for full rankings (given to the service as 0).
    Left blank in a form, the default applies."""

    def to_internal_value(self, data):
        text = super().to_internal_value(data).strip().lower()
        if text == "all":
            return 0
        try:
            value = int(text)
        except ValueError:
            value = -1
        if not 0 <= value < 2**31:
            raise serializers.ValidationError("a positive whole number, or 'all' (or 0) to keep full rankings")
        return value


class RunImportApi(APIView):
    """Admin: upload a run file (TREC, CSV, JSONL, JSON, or an .npz score matrix) for a dataset;
    imported by a background job."""

    permission_classes = [IsAdmin]
    parser_classes = [MultiPartParser, FormParser]

    class InputSerializer(serializers.Serializer):
        file = serializers.FileField()
        name = serializers.CharField(max_length=200, required=False, allow_blank=True)
        format = serializers.ChoiceField(choices=RUN_FORMATS, required=False, allow_blank=True)
        max_depth = MaxDepthField(required=False,
                                  help_text="Line files: refuse ranks deeper than this (default REJUDGE_MAX_RUN_DEPTH, "
                                            "1000); score matrices: keep each caption's top N (default all). 'all' or 0: "
                                            "full rankings.")

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request, dataset_id: int):
        dataset = get_object_or_404(Dataset, pk=dataset_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        job, created = run_import_start(dataset=dataset, uploaded_file=v["file"], name=v.get("name") or None,
                                        fmt=v.get("format") or None, max_depth=v.get("max_depth"),
                                        created_by=request.user, idempotency_key=_idempotency_key(request))
        return job_accepted_response(job, created)
