"""Machine judges over REST: an admin uploads an automatic assessor's judgments onto a pool or a
judgment set; admins and researchers read them. The report that measures a judge against people
(kind `machine_judge`) is a pool report for a pool's judge (POST /pools/{pool_id}/reports/ with
params.judge) and POST /judgment-sets/{id}/machine-judge-report/ for a set's judge.

An upload is imported as a job, like every other import: stored first, read by a worker with
progress, all or nothing, the file's problems on the job with their lines and fields."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.generics import ListAPIView, RetrieveAPIView
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import MachineJudge, Pool
from annotation.roles import is_admin
from annotation.models.judgment_sets import JudgmentSet
from annotation.selectors.reports import judgment_set_list
from annotation.services.machine_judges.errors import MachineJudgeError
from annotation.services.machine_judges.operations import (MACHINE_JUDGE_SET_REPORT, MACHINE_JUDGMENTS_IMPORT,
                                                           machine_judge_set_report_start,
                                                           machine_judgments_import_start)
from api.operations import declared_serializer, given, refused
from api.params import idempotency_key, query_int
from api.permissions import IsAdmin, IsAdminOrResearcherReadOnly
from api.views.jobs import JobOutputSerializer, job_accepted_response


class MachineJudgeOutputSerializer(serializers.Serializer):
    """A judge's name, model and prompt for everyone who may read it; where a judge the platform ran
    sent its requests (its base URL, kept in `source_name`) for admins only: researchers get ''."""

    id = serializers.IntegerField()
    kind = serializers.CharField()
    dataset = serializers.IntegerField(source="dataset_id")
    pool = serializers.IntegerField(source="pool_id", allow_null=True)
    judgment_set = serializers.IntegerField(source="judgment_set_id", allow_null=True)
    name = serializers.CharField()
    model_name = serializers.CharField()
    prompt_version = serializers.CharField()
    source_name = serializers.SerializerMethodField()
    checksum = serializers.CharField()
    counts = serializers.JSONField()
    created_at = serializers.DateTimeField()

    def get_source_name(self, judge) -> str:
        request = self.context.get("request")
        if judge.ran_by_platform and not (request is not None and is_admin(request.user)):
            return ""
        return judge.source_name


_UploadInput = declared_serializer("MachineJudgmentsUploadInput", MACHINE_JUDGMENTS_IMPORT.params,
                                   extra={"file": serializers.FileField()})


def _import(request, *, pool=None, judgment_set=None) -> Response:
    data = _UploadInput(data=request.data)
    data.is_valid(raise_exception=True)
    v = given(data.validated_data)
    key = idempotency_key(request)
    try:
        job, created = machine_judgments_import_start(
            uploaded_file=v["file"], name=v.get("name") or None, pool=pool, judgment_set=judgment_set,
            file_format=v.get("file_format") or None, model_name=v.get("model") or "",
            prompt_version=v.get("prompt") or "", created_by=request.user, idempotency_key=key)
    except MachineJudgeError as exc:
        raise refused(exc) from exc
    return job_accepted_response(job, created)


class PoolMachineJudgeImportApi(APIView):
    """Admin: import a machine judge of the pool's pairs (CSV or JSON Lines: query, item, label
    [, score, model, prompt]), as a job; its result names the judge. A bad file fails the job whole,
    each problem with its line and field on the job. Send an `Idempotency-Key` header to make a
    retried upload return the first job."""

    permission_classes = [IsAdmin]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(request=_UploadInput, responses={202: JobOutputSerializer})
    def post(self, request, pool_id: int):
        pool = get_object_or_404(Pool.objects.select_related("dataset"), pk=pool_id)
        return _import(request, pool=pool)


class JudgmentSetMachineJudgeImportApi(APIView):
    """Admin: import a machine judge of the pairs a judgment set has verdicts on, as a job (see the
    pool's upload)."""

    permission_classes = [IsAdmin]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(request=_UploadInput, responses={202: JobOutputSerializer})
    def post(self, request, judgment_set_id: int):
        judgment_set = get_object_or_404(JudgmentSet.objects.select_related("dataset"), pk=judgment_set_id)
        return _import(request, judgment_set=judgment_set)


class MachineJudgeListApi(ListAPIView):
    """Admins and researchers: machine judges, newest first (`?pool=` or `?dataset=` to filter)."""

    permission_classes = [IsAdminOrResearcherReadOnly]
    serializer_class = MachineJudgeOutputSerializer

    def get_queryset(self):
        qs = MachineJudge.objects.all()
        for name in ("pool", "dataset"):
            value = query_int(self.request, name, min_value=1)
            if value is not None:
                qs = qs.filter(**{f"{name}_id": value})
        return qs


class MachineJudgeDetailApi(RetrieveAPIView):
    """Admins and researchers: one machine judge."""

    permission_classes = [IsAdminOrResearcherReadOnly]
    serializer_class = MachineJudgeOutputSerializer
    lookup_url_kwarg = "judge_id"
    queryset = MachineJudge.objects.all()


class JudgmentSetMachineJudgeReportApi(APIView):
    """Admin: measure a machine judge of the set against the set's verdicts ('disagreement' verdicts
    are no label), as a job that stores a Report(kind="machine_judge"): Cohen's kappa with its
    interval, the confusion matrix, per-query disagreement, and Kendall's tau and tau_AP between
    the dataset's clip runs ranked by AP@`depth` with the set's and with the machine's verdicts.
    `judge` may be left out when the set has one machine judge."""

    permission_classes = [IsAdmin]

    InputSerializer = declared_serializer("MachineJudgeSetReportInput", MACHINE_JUDGE_SET_REPORT.params)

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request, judgment_set_id: int):
        judgment_set = get_object_or_404(judgment_set_list(), pk=judgment_set_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        params = given(data.validated_data)
        judge_id = params.pop("judge", None)
        try:
            job = machine_judge_set_report_start(judgment_set=judgment_set, judge_id=judge_id, params=params,
                                                 created_by=request.user)
        except MachineJudgeError as exc:
            raise refused(exc) from exc
        return job_accepted_response(job, True)
