"""Reports and exports over REST.

Admins start reports and exports (background jobs); researchers read reports and download exports
with their read-only token. Raters have no access: reports and exports show other raters' labels.
"""
from __future__ import annotations

import io
import json

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import renderers, serializers
from rest_framework.exceptions import NotFound
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.formats.csv_safe import safe_csv_writer
from annotation.models import Artefact, Pool, Report
from annotation.selectors.exports import artefact_list
from annotation.selectors.reports import report_list
from annotation.services.exports.labels import AGGREGATION, ExportError
from annotation.services.exports.operations import EXPORT_LABELS, export_start
from annotation.services.reports.kind import ReportError
from annotation.services.reports.operations import COMPUTE_REPORT, report_start
from annotation.services.reports.registry import report_tables
from api.downloads import stored_file_download
from api.operations import declared_serializer, param_field, refused
from api.params import query_int
from api.renderers import JSONRenderer
from api.permissions import IsAdmin, IsAdminOrResearcherReadOnly
from api.views.jobs import JobOutputSerializer, job_accepted_response


class FileRenderer(renderers.BaseRenderer):
    """Lets a client that asks for the file's own type (Accept: text/csv, application/x-ndjson...)
    through content negotiation; the views send the file themselves. Error bodies become JSON."""

    media_type = "*/*"
    format = "file"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data if isinstance(data, (bytes, str)) else json.dumps(data).encode()


FILE_RENDERERS = [JSONRenderer, FileRenderer]


_BY_DATASET_AND_POOL = [OpenApiParameter("dataset", int, description="only this dataset's"),
                        OpenApiParameter("pool", int, description="only this pool's")]


class ReportOutputSerializer(serializers.ModelSerializer):
    dataset_name = serializers.CharField(source="dataset.name", read_only=True)
    pool_name = serializers.CharField(source="pool.name", default=None, read_only=True)
    url = serializers.SerializerMethodField()
    csv_tables = serializers.SerializerMethodField()

    class Meta:
        model = Report
        fields = ["id", "kind", "title", "dataset", "dataset_name", "pool", "pool_name", "params", "versions",
                  "job", "created_at", "url", "csv_tables"]

    def get_url(self, report) -> str:
        return reverse("api:report-detail", args=[report.pk])

    def get_csv_tables(self, report) -> dict[str, str]:
        """Each table of the report and where to download it as CSV."""
        base = reverse("api:report-csv", args=[report.pk])
        return {table.name: f"{base}?table={table.name}" for table in report_tables(report=report)}


class ReportDetailOutputSerializer(ReportOutputSerializer):
    class Meta(ReportOutputSerializer.Meta):
        fields = ReportOutputSerializer.Meta.fields + ["result"]


def _inside_params(exc: Exception, top_level: str) -> dict:
    """A refused parameter other than `top_level` was sent inside the `params` object: that is the
    request field the 400 names (its message names the parameter)."""
    param = getattr(exc, "param", None)
    return {param: "params"} if param and param != top_level else {}


class PoolReportCreateApi(APIView):
    """Admin: compute a report of a pool as a background job (202 + job status URL).

    kind: agreement | metrics | sample_estimate; params as the report kind documents
    (e.g. {"n_boot": 1000, "seed": 0} or {"depth": 10, "ks": [1, 5, 10]})."""

    permission_classes = [IsAdmin]

    # The fields are those of the report operation that takes any kind (services/reports/operations.py).
    InputSerializer = declared_serializer("PoolReportInputSerializer", COMPUTE_REPORT.params)

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request, pool_id: int):
        pool = get_object_or_404(Pool, pk=pool_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            job = report_start(pool=pool, kind=data.validated_data["kind"], params=data.validated_data.get("params"),
                               created_by=request.user)
        except ReportError as exc:
            raise refused(exc, rename=_inside_params(exc, "kind")) from exc
        return job_accepted_response(job, True)


@extend_schema_view(get=extend_schema(parameters=[
    *_BY_DATASET_AND_POOL, OpenApiParameter("kind", str, description="e.g. agreement, metrics, infap")]))
class ReportListApi(ListAPIView):
    """Admins and researchers: stored reports, newest first; filter with ?pool=, ?dataset=, ?kind=."""

    permission_classes = [IsAdminOrResearcherReadOnly]
    serializer_class = ReportOutputSerializer

    def get_queryset(self):
        return report_list(dataset_id=query_int(self.request, "dataset"), pool_id=query_int(self.request, "pool"),
                           kind=self.request.query_params.get("kind") or None)


class ReportDetailApi(APIView):
    """Admins and researchers: one report with its full result, parameters and library versions.

    `?download=1` sends it as a file (report-<id>.json)."""

    permission_classes = [IsAdminOrResearcherReadOnly]

    @extend_schema(responses=ReportDetailOutputSerializer)
    def get(self, request, report_id: int):
        report = get_object_or_404(report_list(), pk=report_id)
        response = Response(ReportDetailOutputSerializer(report).data)
        if request.query_params.get("download"):
            response["Content-Disposition"] = f'attachment; filename="report-{report.pk}.json"'
        return response


class ReportCsvApi(APIView):
    """Admins and researchers: one table of a report as CSV (?table=<name>; the first by default)."""

    permission_classes = [IsAdminOrResearcherReadOnly]
    renderer_classes = FILE_RENDERERS

    @extend_schema(responses={(200, "text/csv"): bytes})
    def get(self, request, report_id: int):
        report = get_object_or_404(Report, pk=report_id)
        tables = {table.name: table for table in report_tables(report=report)}
        if not tables:
            raise NotFound(f"a {report.kind} report has no tables")
        name = request.query_params.get("table") or next(iter(tables))
        if name not in tables:
            raise NotFound(f"no table '{name}'; tables: {', '.join(tables)}")
        table = tables[name]
        text = io.StringIO()
        writer = safe_csv_writer(text)
        writer.writeheader(table.columns)
        writer.writerows(table.rows)
        response = HttpResponse(text.getvalue(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="report-{report.pk}-{name}.csv"'
        return response


class ExportOutputSerializer(serializers.ModelSerializer):
    dataset_name = serializers.CharField(source="dataset.name", read_only=True)
    format = serializers.CharField(source="params.format", default=None, read_only=True)
    pool = serializers.IntegerField(source="params.pool_id", default=None, read_only=True)
    download_url = serializers.SerializerMethodField()

    class Meta:
        model = Artefact
        fields = ["id", "kind", "format", "name", "dataset", "dataset_name", "pool", "content_type", "size", "sha256",
                  "params", "job", "created_at", "download_url"]

    def get_download_url(self, artefact) -> str:
        return reverse("api:export-download", args=[artefact.pk])


class PoolExportCreateApi(APIView):
    """Admin: export a pool's labels as a file, as a background job (202 + job status URL).

    format: qrels | fire_json | csv | jsonl. params: qrels {"originals": true}; fire_json
    {"dataset_tag": "MSRVTT", "license": "...", "creator": "..."}. aggregation: majority (default,
    the stored resolution) | dawid_skene | mace, from the same human votes; the file names which."""

    permission_classes = [IsAdmin]

    # The fields are those of the export operation that takes any format (services/exports/operations.py),
    # and the aggregation rule every format declares, also accepted beside the params.
    InputSerializer = declared_serializer("PoolExportInputSerializer", EXPORT_LABELS.params,
                                          extra={"aggregation": param_field("aggregation", AGGREGATION["aggregation"])})

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request, pool_id: int):
        pool = get_object_or_404(Pool.objects.select_related("dataset"), pk=pool_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        params = dict(v.get("params") or {})
        if v.get("aggregation") is not None:
            params.setdefault("aggregation", v["aggregation"])
        try:
            job = export_start(pool=pool, fmt=v["format"], params=params, created_by=request.user)
        except ExportError as exc:
            raise refused(exc, rename=_inside_params(exc, "format")) from exc
        return job_accepted_response(job, True)


@extend_schema_view(get=extend_schema(parameters=_BY_DATASET_AND_POOL))
class ExportListApi(ListAPIView):
    """Admins and researchers: exported files, newest first; filter with ?pool=, ?dataset=."""

    permission_classes = [IsAdminOrResearcherReadOnly]
    serializer_class = ExportOutputSerializer

    def get_queryset(self):
        return artefact_list(dataset_id=query_int(self.request, "dataset"), pool_id=query_int(self.request, "pool"))


class ExportDownloadApi(APIView):
    """Admins and researchers: the exported file, streamed (from a bucket: a redirect to a signed URL)."""

    permission_classes = [IsAdminOrResearcherReadOnly]
    renderer_classes = FILE_RENDERERS

    @extend_schema(responses={(200, "application/octet-stream"): bytes})
    def get(self, request, export_id: int):
        artefact = get_object_or_404(artefact_list(), pk=export_id)
        return stored_file_download(area="exports", name=artefact.path, filename=artefact.name,
                                    content_type=artefact.content_type,
                                    missing=f"the file of export {artefact.pk} is missing",
                                    headers={"X-Content-SHA256": artefact.sha256})
