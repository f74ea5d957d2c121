"""Judging simulation reports over REST (issue 15): start a simulation of a fully judged pool or of
stored runs against a judgment set, and download a simulation report's files (the curves as CSV,
the four charts as SVG). The `judging_estimates` report is a pool report like the others
(POST pools/{id}/reports/ with kind judging_estimates); both kinds are read through reports/.

Admins start simulations; researchers read and download with their read-only token; raters have
no access (reports rest on every rater's labels)."""
from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.views import APIView

from annotation.models import Pool
from annotation.selectors.reports import judgment_set_list, report_list
from annotation.services.judging.operations import JUDGING_SIMULATION, judging_simulation_start
from annotation.services.judging.simulation import SIMULATION_PARAMS, SimulationError, judging_report_file
from annotation.services.operations.start import operation_job
from api.operations import declared_serializer, given, refused
from api.permissions import IsAdmin, IsAdminOrResearcherReadOnly
from api.views.jobs import JobOutputSerializer, job_accepted_response
from api.views.reports import FILE_RENDERERS


#: The simulation's request fields, built from its declared parameters (services/judging/simulation.py
#: SIMULATION_PARAMS): the same bounds, errors and descriptions as the job and the command.
SimulationParamsSerializer = declared_serializer("SimulationParamsSerializer", SIMULATION_PARAMS)
RENAME = {"run_ids": "runs"}


def _start(request, **where):
    data = SimulationParamsSerializer(data=request.data)
    data.is_valid(raise_exception=True)
    try:
        job = judging_simulation_start(params=given(data.validated_data), created_by=request.user, **where)
    except SimulationError as exc:
        raise refused(exc, rename=RENAME) from exc
    return job_accepted_response(job, True)


class PoolJudgingSimulationApi(APIView):
    """Admin: replay a fully judged pool under each judging strategy with seeded repeats, as a job
    that stores a Report(kind="judging_simulation") with the curves (CSV) and charts (SVG). A pool
    with pairs not resolved yet is refused with their count."""

    permission_classes = [IsAdmin]

    @extend_schema(request=SimulationParamsSerializer, responses={202: JobOutputSerializer})
    def post(self, request, pool_id: int):
        return _start(request, pool=get_object_or_404(Pool, pk=pool_id))


class JudgmentSetJudgingSimulationApi(APIView):
    """Admin: replay stored runs' top-`depth` pool judged by the set under each judging strategy,
    as a job that stores a Report(kind="judging_simulation"). Pooled pairs the set does not judge
    count as not relevant; the report says how many."""

    permission_classes = [IsAdmin]

    InputSerializer = declared_serializer("JudgmentSetSimulationInputSerializer", JUDGING_SIMULATION.params,
                                          rename=RENAME)

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request, judgment_set_id: int):
        judgment_set = get_object_or_404(judgment_set_list(), pk=judgment_set_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            job = operation_job(JUDGING_SIMULATION, target=judgment_set, params=given(data.validated_data),
                                created_by=request.user)
        except SimulationError as exc:
            raise refused(exc, rename=RENAME) from exc
        return job_accepted_response(job, True)


class ReportFileApi(APIView):
    """Admins and researchers: one file of a report by name (?name=curves.csv, relevant_found.svg,
    metric_error.svg, kendall_tau.svg, ci_coverage.svg for a judging simulation)."""

    permission_classes = [IsAdminOrResearcherReadOnly]
    renderer_classes = FILE_RENDERERS

    @extend_schema(parameters=[OpenApiParameter("name", str, required=True)],
                   responses={(200, "application/octet-stream"): bytes})
    def get(self, request, report_id: int):
        report = get_object_or_404(report_list(), pk=report_id)
        name = request.query_params.get("name") or ""
        try:
            found = judging_report_file(report=report, name=name)
        except FileNotFoundError as exc:
            raise NotFound(f"the file '{name}' of report {report.pk} is missing") from exc
        if found is None:
            names = ", ".join(report.artefacts.values_list("name", flat=True)) or "none"
            raise NotFound(f"report {report.pk} has no file '{name}' (files: {names})")
        artefact, data = found
        response = HttpResponse(data, content_type=artefact.content_type)
        response["Content-Disposition"] = f'attachment; filename="report-{report.pk}-{artefact.name}"'
        response["X-Content-SHA256"] = artefact.sha256
        return response
