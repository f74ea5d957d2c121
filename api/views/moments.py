"""Moment pools, sampled deep pools, and their reports (moment metrics, inferred AP, per-query chart).

Building a pool or a report is a background job (202 + the job's URL); the job's result names the
pool or report it made. Admins do everything; researchers read designs, reports, CSVs and charts.
"""
from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Dataset, MomentMember, Pool, PooledPair, Report
from annotation.selectors.moments import (infap_csv, moment_metrics_csv, moment_pool_summary, moment_spans, pool_reports,
                                          query_chart_svg, sampled_pool_summary)
from annotation.services.operations.start import operation_job
from annotation.services.pools.build import PoolError
from annotation.services.pools.operations import MOMENT_POOL_BUILD, SAMPLED_POOL_BUILD
from annotation.services.reports.kind import ReportError
from annotation.services.reports.kinds.infap import INFAP
from annotation.services.reports.kinds.moment_metrics import MOMENT_METRICS
from annotation.services.reports.operations import INFAP_REPORT, MOMENT_METRICS_REPORT
from api.bounds import id_field
from api.operations import declared_serializer, refused
from api.permissions import IsAdmin, IsAdminOrResearcherReadOnly
from api.views.jobs import JobOutputSerializer, job_accepted_response


#: The request calls the runs `runs` (the operations: `run_ids`).
RUNS = {"run_ids": "runs"}


def _validated(serializer, request) -> dict:
    """The request's declared fields. A refused field is answered as the start service's refusal
    is (api/operations.py `refused`): keyed by the field, with the reason also as `detail`."""
    data = serializer(data=request.data)
    if not data.is_valid():
        field, reasons = next(iter(data.errors.items()))
        raise ValidationError({**data.errors, "detail": f"{field}: {_first(reasons)}"})
    return dict(data.validated_data)


def _first(reasons) -> str:
    while isinstance(reasons, (list, dict)) and reasons:
        reasons = next(iter(reasons.values())) if isinstance(reasons, dict) else reasons[0]
    return str(reasons)


def _build(request, operation, serializer):
    """A pool build of `operation` from the request: the dataset by id, the declared fields."""
    params = _validated(serializer, request)
    dataset = get_object_or_404(Dataset, pk=params.pop("dataset"))
    try:
        job = operation_job(operation, target=dataset, params=params, created_by=request.user)
    except PoolError as exc:
        raise refused(exc, rename=RUNS) from exc
    return job_accepted_response(job, True)


class MomentPoolBuildApi(APIView):
    """Admin: pool the top-`depth` moments per caption of moment runs, merging spans of one caption
    and clip whose temporal IoU reaches `iou_threshold` (a background job; 202 + status URL)."""

    permission_classes = [IsAdmin]
    InputSerializer = declared_serializer("MomentPoolBuildInputSerializer", MOMENT_POOL_BUILD.params, rename=RUNS,
                                          extra={"dataset": id_field()})

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request):
        return _build(request, MOMENT_POOL_BUILD, self.InputSerializer)


class SampledPoolBuildApi(APIView):
    """Admin: a pool of deep runs that judges a seeded random sample of each rank stratum, e.g.
    strata [[1, 10, 1.0], [11, 100, 0.2], [101, 1000, 0.05]] (a background job; 202 + status URL)."""

    permission_classes = [IsAdmin]
    InputSerializer = declared_serializer("SampledPoolBuildInputSerializer", SAMPLED_POOL_BUILD.params, rename=RUNS,
                                          extra={"dataset": id_field()})

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request):
        return _build(request, SAMPLED_POOL_BUILD, self.InputSerializer)


def _report(request, pool: Pool, operation, serializer):
    """A report of `operation` on `pool` from the request's declared fields."""
    params = _validated(serializer, request)
    try:
        job = operation_job(operation, target=pool, params=params, created_by=request.user)
    except ReportError as exc:
        raise refused(exc, rename=RUNS) from exc
    return job_accepted_response(job, True)


def _moment_pool(pool_id: int) -> Pool:
    pool = get_object_or_404(Pool, pk=pool_id)
    if not hasattr(pool, "moment_design"):
        raise NotFound("not a moment pool")
    return pool


def _sampled_pool(pool_id: int) -> Pool:
    pool = get_object_or_404(Pool, pk=pool_id)
    if not hasattr(pool, "sampled_design"):
        raise NotFound("not a sampled pool")
    return pool


class MomentPoolDesignApi(APIView):
    """Admins and researchers: a moment pool's merge threshold, spans, and spans whose chain of
    merged predictions stretched beyond the threshold."""

    permission_classes = [IsAdminOrResearcherReadOnly]

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, pool_id: int):
        return Response(moment_pool_summary(pool=_moment_pool(pool_id)))


@extend_schema_view(get=extend_schema(parameters=[OpenApiParameter("caption", str, description="a caption's external id")]))
class MomentSpanListApi(ListAPIView):
    """Admins and researchers: a moment pool's judged spans with the predictions merged into each
    (?caption=<external id> for one caption)."""

    permission_classes = [IsAdminOrResearcherReadOnly]

    class MemberSerializer(serializers.ModelSerializer):
        run = serializers.CharField(source="run.name")

        class Meta:
            model = MomentMember
            fields = ["run", "rank", "start", "end", "score"]

    class OutputSerializer(serializers.ModelSerializer):
        caption_id = serializers.CharField(source="caption.external_id")
        clip_id = serializers.CharField(source="clip.external_id")
        members = serializers.SerializerMethodField()

        class Meta:
            model = PooledPair
            fields = ["id", "caption_id", "clip_id", "start", "end", "state", "resolved_label", "is_original_positive",
                      "members"]

        def get_members(self, pair) -> list[dict]:
            return MomentSpanListApi.MemberSerializer(pair.moment_members.all(), many=True).data

    serializer_class = OutputSerializer

    def get_queryset(self):
        return moment_spans(pool=_moment_pool(self.kwargs["pool_id"]),
                            caption_external_id=self.request.query_params.get("caption") or None)


class SampledPoolDesignApi(APIView):
    """Admins and researchers: a sampled pool's strata with pooled, sampled, judged and relevant
    counts, and the judgments saved against judging the whole depth."""

    permission_classes = [IsAdminOrResearcherReadOnly]

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, pool_id: int):
        return Response(sampled_pool_summary(pool=_sampled_pool(pool_id)))


class ReportSummarySerializer(serializers.ModelSerializer):
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)

    class Meta:
        model = Report
        fields = ["id", "kind", "title", "params", "created_by", "created_at"]


class ReportDetailSerializer(ReportSummarySerializer):
    class Meta(ReportSummarySerializer.Meta):
        fields = ReportSummarySerializer.Meta.fields + ["versions", "result"]


class MomentMetricsApi(APIView):
    """Admins and researchers: the pool's moment-metrics reports (GET). Admin: compute a new one
    (POST; a background job whose result names the report): R@K at each IoU threshold and video R@K
    of the pool's runs (or `runs`), with corrected and with original positive moments."""

    permission_classes = [IsAdminOrResearcherReadOnly]

    InputSerializer = declared_serializer("MomentMetricsInputSerializer", MOMENT_METRICS_REPORT.params, rename=RUNS)

    @extend_schema(responses=ReportSummarySerializer(many=True))
    def get(self, request, pool_id: int):
        return Response(ReportSummarySerializer(pool_reports(pool=_moment_pool(pool_id), kind=MOMENT_METRICS), many=True).data)

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request, pool_id: int):
        return _report(request, _moment_pool(pool_id), MOMENT_METRICS_REPORT, self.InputSerializer)


class InfapApi(APIView):
    """Admins and researchers: the pool's inferred-AP reports (GET). Admin: compute a new one (POST;
    a background job whose result names the report): per run and caption xinfAP (and trec_eval's
    infAP when the sample is uniform), mean per run, judgments saved. `max_result_size`: NIST's rule,
    AP rescaled by R_hat/1000 when the estimated relevant count exceeds 1,000 (default 1000, as
    TRECVID scores; null for none)."""

    permission_classes = [IsAdminOrResearcherReadOnly]

    InputSerializer = declared_serializer("InfapInputSerializer", INFAP_REPORT.params, rename=RUNS)

    @extend_schema(responses=ReportSummarySerializer(many=True))
    def get(self, request, pool_id: int):
        return Response(ReportSummarySerializer(pool_reports(pool=_sampled_pool(pool_id), kind=INFAP), many=True).data)

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request, pool_id: int):
        return _report(request, _sampled_pool(pool_id), INFAP_REPORT, self.InputSerializer)


def _stored_report(pool_id: int, kind: str, report_id: int) -> Report:
    return get_object_or_404(pool_reports(pool=get_object_or_404(Pool, pk=pool_id), kind=kind), pk=report_id)


def _download(content: str, content_type: str, filename: str, *, attachment: bool = True) -> HttpResponse:
    response = HttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = f'{"attachment" if attachment else "inline"}; filename="{filename}"'
    return response


class MomentMetricsDetailApi(APIView):
    """Admins and researchers: one moment-metrics report (fractions; papers print them x100)."""

    permission_classes = [IsAdminOrResearcherReadOnly]

    @extend_schema(responses=ReportDetailSerializer)
    def get(self, request, pool_id: int, report_id: int):
        return Response(ReportDetailSerializer(_stored_report(pool_id, MOMENT_METRICS, report_id)).data)


class MomentMetricsCsvApi(APIView):
    """Admins and researchers: one moment-metrics report as CSV (a row per run and kind of positives)."""

    permission_classes = [IsAdminOrResearcherReadOnly]

    @extend_schema(responses={(200, "text/csv"): OpenApiTypes.STR})
    def get(self, request, pool_id: int, report_id: int):
        report = _stored_report(pool_id, MOMENT_METRICS, report_id)
        return _download(moment_metrics_csv(report=report), "text/csv; charset=utf-8", f"moment-metrics-{report.pk}.csv")


class InfapDetailApi(APIView):
    """Admins and researchers: one inferred-AP report."""

    permission_classes = [IsAdminOrResearcherReadOnly]

    @extend_schema(responses=ReportDetailSerializer)
    def get(self, request, pool_id: int, report_id: int):
        return Response(ReportDetailSerializer(_stored_report(pool_id, INFAP, report_id)).data)


class InfapCsvApi(APIView):
    """Admins and researchers: one inferred-AP report as CSV (a row per run and caption, 'all' = mean)."""

    permission_classes = [IsAdminOrResearcherReadOnly]

    @extend_schema(responses={(200, "text/csv"): OpenApiTypes.STR})
    def get(self, request, pool_id: int, report_id: int):
        report = _stored_report(pool_id, INFAP, report_id)
        return _download(infap_csv(report=report), "text/csv; charset=utf-8", f"infap-{report.pk}.csv")


class QueryChartApi(APIView):
    """Admins and researchers: TRECVID's per-caption chart of one run of an inferred-AP report as
    SVG: the run's score (dot), the median over runs (line), the best run (box). Shown inline;
    `download=1` sends it as a file."""

    permission_classes = [IsAdminOrResearcherReadOnly]

    class InputSerializer(serializers.Serializer):
        report = id_field()
        run = id_field()
        download = serializers.BooleanField(default=False)

    @extend_schema(parameters=[OpenApiParameter("report", int, required=True), OpenApiParameter("run", int, required=True),
                               OpenApiParameter("download", bool)],
                   responses={(200, "image/svg+xml"): OpenApiTypes.STR})
    def get(self, request, pool_id: int):
        data = self.InputSerializer(data=request.query_params)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        report = _stored_report(pool_id, INFAP, v["report"])
        try:
            svg = query_chart_svg(report=report, run_id=v["run"])
        except LookupError as exc:
            raise NotFound(str(exc)) from exc
        return _download(svg, "image/svg+xml", f"infap-{report.pk}-run-{v['run']}.svg", attachment=v["download"])
