from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.generics import ListAPIView
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.analysis.params import param_value
from annotation.models import Dataset, Run
from annotation.services.datasets.operations import (DATASET_DELETE, DATASET_IMPORT, RUN_IMPORT, ImportRequestError,
                                                     dataset_import_start, run_import_start)
from annotation.services.datasets.runs import ALL_RANKS
from api.operations import declared_serializer, given, refused
from api.permissions import IsAdmin, IsAdminOrResearcherReadOnly
from api.views.deletes import delete_accepted, delete_schema
from api.views.jobs import JobOutputSerializer, job_accepted_response
from api.params import idempotency_key


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

    @delete_schema("dataset")
    def delete(self, request, dataset_id: int):
        return delete_accepted(request, DATASET_DELETE, get_object_or_404(Dataset, pk=dataset_id))


class DatasetImportApi(APIView):
    """Admin: upload a dataset file; it is imported by a background job (202 + status URL).

    Send an `Idempotency-Key` header to make a retried upload return the first job."""

    permission_classes = [IsAdmin]
    parser_classes = [MultiPartParser, FormParser]

    InputSerializer = declared_serializer("DatasetImportInput", DATASET_IMPORT.params,
                                          extra={"file": serializers.FileField()})

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = given(data.validated_data)
        try:
            job, created = dataset_import_start(uploaded_file=v["file"], name=v["name"],
                                                fmt=v.get("format") or None, media_template=v.get("media_template", ""),
                                                description=v.get("description", ""), created_by=request.user,
                                                idempotency_key=idempotency_key(request))
        except ImportRequestError as exc:
            raise refused(exc) from exc
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
    """The declared `max_depth` (services/datasets/operations.py), or "all" for full rankings (given
    to the service as 0). Left blank in a form, the default applies."""

    SPEC = RUN_IMPORT.params["max_depth"]

    def __init__(self, **kwargs) -> None:
        super().__init__(required=False, help_text=f"{self.SPEC.description} 'all' also keeps full rankings.",
                         **kwargs)

    def to_internal_value(self, data):
        text = super().to_internal_value(data).strip().lower()
        if text == "all":
            return ALL_RANKS
        try:
            return param_value("max_depth", self.SPEC, int(text))
        except ValueError:  # not a whole number (or too many digits to read), or out of the declared bounds
            raise serializers.ValidationError("a positive whole number, or 'all' (or 0) to keep full rankings") from None


class RunImportApi(APIView):
    """Admin: upload a run file (TREC, CSV, JSONL, JSON, or an .npz score matrix) for a dataset;
    imported by a background job."""

    permission_classes = [IsAdmin]
    parser_classes = [MultiPartParser, FormParser]

    InputSerializer = declared_serializer("RunImportInput", RUN_IMPORT.params, exclude=("max_depth",),
                                          extra={"file": serializers.FileField(), "max_depth": MaxDepthField()})

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request, dataset_id: int):
        dataset = get_object_or_404(Dataset, pk=dataset_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = given(data.validated_data)
        try:
            job, created = run_import_start(dataset=dataset, uploaded_file=v["file"], name=v.get("name") or None,
                                            fmt=v.get("format") or None, max_depth=v.get("max_depth"),
                                            created_by=request.user, idempotency_key=idempotency_key(request))
        except ImportRequestError as exc:
            raise refused(exc) from exc
        return job_accepted_response(job, created)
