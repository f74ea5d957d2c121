"""Semantic proxy matrices of a dataset (jobs, list, download), graded nDCG of a run against one,
and proxy statistics (relevant captions per clip by threshold, correlation between proxies)."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Artefact, Dataset, Run
from annotation.selectors.ranking import proxy_matrix_list
from annotation.services.operations.start import operation_job
from annotation.services.proxies.matrices import MATRIX_PROXIES, RANDOM_BASELINE_PARAMS, ProxyError
from annotation.services.proxies.operations import PROXY_ANALYSIS, PROXY_MATRICES, PROXY_NDCG, proxy_ndcg_start
from api.downloads import stored_file_download
from api.operations import declared_serializer, given, param_field, refused
from api.permissions import IsAdmin, IsAdminOrResearcherReadOnly
from api.views.jobs import JobOutputSerializer, job_accepted_response


class ProxyMatrixOutputSerializer(serializers.ModelSerializer):
    proxy = serializers.CharField(source="params.proxy")
    mode = serializers.CharField(source="params.mode")
    synsets = serializers.CharField(source="params.synsets", allow_null=True)
    min_fraction = serializers.FloatField(source="params.min_fraction")
    download_url = serializers.SerializerMethodField()

    class Meta:
        model = Artefact
        fields = ["id", "name", "proxy", "mode", "synsets", "min_fraction", "size", "sha256", "params", "job",
                  "created_at", "download_url"]

    def get_download_url(self, artefact) -> str:
        return reverse("api:proxy-matrix-download", args=[artefact.pk])


class DatasetProxyMatricesApi(APIView):
    """Admins and researchers: the dataset's stored proxy matrices, newest first. Admin: POST
    computes one (or `all`) as a job: clips x captions relevance stored as .npz with its pipeline."""

    permission_classes = [IsAdminOrResearcherReadOnly]

    # The declared parameters (services/proxies/operations.py), but one proxy (or all) by name.
    InputSerializer = declared_serializer("ProxyMatricesInputSerializer", PROXY_MATRICES.params, exclude=("proxies",),
                                          extra={"proxy": serializers.ChoiceField(choices=MATRIX_PROXIES + ("all",))})

    @extend_schema(responses=ProxyMatrixOutputSerializer(many=True))
    def get(self, request, dataset_id: int):
        dataset = get_object_or_404(Dataset, pk=dataset_id)
        return Response(ProxyMatrixOutputSerializer(proxy_matrix_list(dataset=dataset), many=True).data)

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request, dataset_id: int):
        dataset = get_object_or_404(Dataset, pk=dataset_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = dict(data.validated_data)
        proxy = v.pop("proxy")
        params = given(v) | {"proxies": list(MATRIX_PROXIES) if proxy == "all" else [proxy]}
        try:
            job = operation_job(PROXY_MATRICES, target=dataset, params=params, created_by=request.user)
        except ProxyError as exc:
            raise refused(exc, rename={"proxies": "proxy"}) from exc
        return job_accepted_response(job, True)


class ProxyMatrixDownloadApi(APIView):
    """Admins and researchers: the matrix file (.npz: relevance, clip_ids, caption_ids,
    clip_external_ids, caption_external_ids, params_json)."""

    permission_classes = [IsAdminOrResearcherReadOnly]

    @extend_schema(responses={(200, "application/octet-stream"): OpenApiTypes.BINARY})
    def get(self, request, artefact_id: int):
        artefact = get_object_or_404(Artefact, pk=artefact_id, kind="proxy_matrix")
        return stored_file_download(area="exports", name=artefact.path, filename=artefact.name,
                                    content_type=artefact.content_type,
                                    missing="the matrix file is missing from the export folder")


class RunProxyNdcgApi(APIView):
    """Admin: graded nDCG of a run with a stored proxy matrix as relevance (a job producing a
    Report(kind="proxy_ndcg")). `gain`: linear = S (the reference code's), exponential = 2^S - 1;
    `empty`: skip (default) leaves queries with no S > 0 out of the means, zero scores them 0.
    `random_baseline`: the answer also carries the matrix's random-ranking nDCG (`draws` seeded
    random rankings: mean, std, min, max and the exact expectation, as `proxy_ndcg --random-baseline`
    prints them), computed at once with the same gain and empty rule."""

    permission_classes = [IsAdmin]

    # The declared parameters (the proxy_ndcg report kind's), the matrix by its API name, and the
    # random baseline's declared options (matrices.RANDOM_BASELINE_PARAMS), which start no job.
    RENAME = {"artefact_id": "matrix"}
    InputSerializer = declared_serializer("RunProxyNdcgInputSerializer", PROXY_NDCG.params, rename=RENAME, extra={
        "random_baseline": serializers.BooleanField(default=False,
                                                    help_text="Add the matrix's random-ranking nDCG to the answer."),
        **{name: param_field(name, spec) for name, spec in RANDOM_BASELINE_PARAMS.items()}})

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request, run_id: int):
        run = get_object_or_404(Run, pk=run_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = dict(data.validated_data)
        wanted = v.pop("random_baseline")
        draws = given({name: v.pop(name, None) for name in RANDOM_BASELINE_PARAMS})
        try:
            job, baseline = proxy_ndcg_start(run=run, params=given(v), baseline=draws if wanted else None,
                                             created_by=request.user)
        except ProxyError as exc:
            raise refused(exc, rename=self.RENAME) from exc
        response = job_accepted_response(job, True)
        if baseline is not None:
            response.data["random_baseline"] = baseline
        return response


class DatasetProxyAnalysisApi(APIView):
    """Admin: for the chosen proxy matrices, the mean number of captions with S >= t per clip for
    each threshold t, and the Pearson correlation between each pair of proxies averaged over clips
    (a job producing a Report(kind="proxy_analysis"))."""

    permission_classes = [IsAdmin]

    # The declared parameters (the proxy_analysis report kind's), the matrices by their API name.
    RENAME = {"artefact_ids": "matrices"}
    InputSerializer = declared_serializer("DatasetProxyAnalysisInputSerializer", PROXY_ANALYSIS.params, rename=RENAME)

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request, dataset_id: int):
        dataset = get_object_or_404(Dataset, pk=dataset_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            job = operation_job(PROXY_ANALYSIS, target=dataset, params=given(data.validated_data),
                                created_by=request.user)
        except ProxyError as exc:
            raise refused(exc, rename=self.RENAME) from exc
        return job_accepted_response(job, True)
