"""Semantic proxy matrices of a dataset (jobs, list, download), graded nDCG of a run against one,
and proxy statistics (relevant captions per clip by threshold, correlation between proxies)."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Artefact, Dataset, RankingStudy, Run
from annotation.selectors.ranking import proxy_matrix_list
from annotation.services.proxies.matrices import (EMPTY_QUERY_RULES, GAINS, MATRIX_PROXIES, MAX_RANDOM_DRAWS,
                                                  RANDOM_DRAWS_DEFAULT, RANDOM_SEED_DEFAULT, ProxyError,
                                                  proxy_analysis_start, proxy_matrices_start, proxy_ndcg_start,
                                                  proxy_random_baseline_table)
from api.downloads import stored_file_download
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

    class InputSerializer(serializers.Serializer):
        proxy = serializers.ChoiceField(choices=MATRIX_PROXIES + ("all",))
        mode = serializers.ChoiceField(choices=RankingStudy.Mode.choices, default="modern")
        synsets = serializers.ChoiceField(
            choices=RankingStudy.Synsets.choices, required=False, allow_null=True, default=None,
            help_text="SYN's synsets; default the mode's choice: paper mode uses the EPIC-KITCHENS-100 classes for "
                      "a dataset imported as youcook2-json or epic100-csv, as the paper did, WordNet otherwise.")
        min_fraction = serializers.FloatField(min_value=0, max_value=1, default=0.25)

    @extend_schema(responses=ProxyMatrixOutputSerializer(many=True))
    def get(self, request, dataset_id: int):
        dataset = get_object_or_404(Dataset, pk=dataset_id)
        return Response(ProxyMatrixOutputSerializer(proxy_matrix_list(dataset=dataset), many=True).data)

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request, dataset_id: int):
        dataset = get_object_or_404(Dataset, pk=dataset_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        proxies = list(MATRIX_PROXIES) if v["proxy"] == "all" else [v["proxy"]]
        try:
            job = proxy_matrices_start(dataset=dataset, proxies=proxies, mode=v["mode"], synsets=v["synsets"],
                                       min_fraction=v["min_fraction"], created_by=request.user)
        except ProxyError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
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

    class InputSerializer(serializers.Serializer):
        matrix = serializers.IntegerField(help_text="Id of a proxy matrix artefact of the run's dataset.")
        gain = serializers.ChoiceField(choices=GAINS, default="linear")
        empty = serializers.ChoiceField(choices=EMPTY_QUERY_RULES, default="skip")
        random_baseline = serializers.BooleanField(default=False,
                                                   help_text="Add the matrix's random-ranking nDCG to the answer.")
        draws = serializers.IntegerField(min_value=1, max_value=MAX_RANDOM_DRAWS, default=RANDOM_DRAWS_DEFAULT,
                                         help_text="With random_baseline: random rankings drawn.")
        seed = serializers.IntegerField(min_value=0, default=RANDOM_SEED_DEFAULT,
                                        help_text="With random_baseline: seed of numpy.random.default_rng.")

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request, run_id: int):
        run = get_object_or_404(Run, pk=run_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        artefact = Artefact.objects.filter(pk=v["matrix"], kind="proxy_matrix", dataset=run.dataset_id).first()
        if artefact is None:
            raise ValidationError({"matrix": [f"no proxy matrix {v['matrix']} for the run's dataset"]})
        try:
            baseline = proxy_random_baseline_table(
                dataset=run.dataset, artefacts=[artefact], draws=v["draws"], seed=v["seed"], gain=v["gain"],
                empty=v["empty"]) if v["random_baseline"] else None
            job = proxy_ndcg_start(run=run, artefact=artefact, gain=v["gain"], empty=v["empty"], created_by=request.user)
        except ProxyError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        response = job_accepted_response(job, True)
        if baseline is not None:
            response.data["random_baseline"] = baseline
        return response


class DatasetProxyAnalysisApi(APIView):
    """Admin: for the chosen proxy matrices, the mean number of captions with S >= t per clip for
    each threshold t, and the Pearson correlation between each pair of proxies averaged over clips
    (a job producing a Report(kind="proxy_analysis"))."""

    permission_classes = [IsAdmin]

    class InputSerializer(serializers.Serializer):
        matrices = serializers.ListField(child=serializers.IntegerField(), min_length=1, max_length=10)
        thresholds = serializers.ListField(child=serializers.FloatField(min_value=0, max_value=2), required=False,
                                           min_length=1, max_length=200)

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request, dataset_id: int):
        dataset = get_object_or_404(Dataset, pk=dataset_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        by_pk = Artefact.objects.filter(kind="proxy_matrix", dataset=dataset).in_bulk(v["matrices"])
        missing = [pk for pk in v["matrices"] if pk not in by_pk]
        if missing:
            raise ValidationError({"matrices": [f"no proxy matrices {missing} for dataset '{dataset.name}'"]})
        try:
            job = proxy_analysis_start(dataset=dataset, artefacts=[by_pk[pk] for pk in dict.fromkeys(v["matrices"])],
                                       thresholds=sorted(v["thresholds"]) if v.get("thresholds") else None,
                                       created_by=request.user)
        except ProxyError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        return job_accepted_response(job, True)
