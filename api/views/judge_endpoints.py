"""Machine judges the platform runs (JudgeEndpoint) over REST, admins only: register, read, change
and remove them, and start a run over a pool or a judgment set as a job.

The base URL is an outbound request the admin chooses (http or https only). The API key is never
accepted, stored or shown: `key_env` (write-only) names the worker's environment variable
REJUDGE_JUDGE_KEY_<NAME> that holds it (or whose _FILE twin names a file holding it); reads say
only `has_key`."""
from __future__ import annotations

from django.db.models.deletion import ProtectedError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import JudgeEndpoint, Pool
from annotation.models.judgment_sets import JudgmentSet
from annotation.services.machine_judges.runner.endpoints import JudgeEndpointError, judge_endpoint_create, \
    judge_endpoint_update
from annotation.services.machine_judges.runner.client import CONCURRENCY_MAX
from annotation.services.machine_judges.operations import MACHINE_JUDGE_RUN, machine_judge_run_start
from annotation.services.machine_judges.runner.run import JudgeRunError
from api.operations import declared_serializer, refused
from api.permissions import IsAdmin
from api.views.jobs import JobOutputSerializer, job_accepted_response


class JudgeEndpointOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    base_url = serializers.CharField()
    model = serializers.CharField()
    prompt_version = serializers.CharField()
    frames_per_clip = serializers.IntegerField()
    concurrency = serializers.IntegerField()
    max_requests = serializers.IntegerField(allow_null=True)
    max_tokens = serializers.IntegerField(allow_null=True)
    temperature = serializers.FloatField()
    timeout_seconds = serializers.FloatField()
    max_retries = serializers.IntegerField()
    has_key = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()

    def get_has_key(self, endpoint) -> bool:
        return bool(endpoint.key_env)


class JudgeEndpointInputSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    base_url = serializers.CharField(max_length=500, help_text="http(s)://host[:port][/prefix] of an OpenAI-compatible "
                                                                "server; the worker will send clip frames there.")
    model = serializers.CharField(max_length=300)
    prompt_version = serializers.CharField(max_length=40, required=False)
    frames_per_clip = serializers.IntegerField(required=False, min_value=1, max_value=64)
    concurrency = serializers.IntegerField(required=False, min_value=1, max_value=CONCURRENCY_MAX)
    max_requests = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=2**31 - 1,
                                            help_text="Per run: HTTP requests, retries included.")
    max_tokens = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=2**63 - 1,
                                          help_text="Per run: prompt + completion tokens the server reports.")
    temperature = serializers.FloatField(required=False, min_value=0, max_value=2)
    timeout_seconds = serializers.FloatField(required=False, min_value=1, max_value=3600)
    max_retries = serializers.IntegerField(required=False, min_value=0, max_value=10)
    key_env = serializers.CharField(max_length=100, required=False, allow_blank=True, write_only=True,
                                    help_text="NAME of the worker's environment variable REJUDGE_JUDGE_KEY_<NAME> "
                                              "holding the key (never the key itself).")


def _refused(exc: Exception):
    return ValidationError({"detail": str(exc)})


class JudgeEndpointListApi(APIView):
    """Admin: the registered machine judges (GET), or register one (POST)."""

    permission_classes = [IsAdmin]

    @extend_schema(responses={200: JudgeEndpointOutputSerializer(many=True)})
    def get(self, request):
        return Response(JudgeEndpointOutputSerializer(JudgeEndpoint.objects.all(), many=True).data)

    @extend_schema(request=JudgeEndpointInputSerializer, responses={201: JudgeEndpointOutputSerializer})
    def post(self, request):
        data = JudgeEndpointInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            endpoint = judge_endpoint_create(created_by=request.user, **data.validated_data)
        except JudgeEndpointError as exc:
            raise _refused(exc) from exc
        return Response(JudgeEndpointOutputSerializer(endpoint).data, status=status.HTTP_201_CREATED)


class JudgeEndpointDetailApi(APIView):
    """Admin: one registered machine judge: read, change (PATCH any registration field), remove
    (the judges it ran stay, with their verdicts)."""

    permission_classes = [IsAdmin]

    @extend_schema(responses={200: JudgeEndpointOutputSerializer})
    def get(self, request, endpoint_id: int):
        return Response(JudgeEndpointOutputSerializer(get_object_or_404(JudgeEndpoint, pk=endpoint_id)).data)

    @extend_schema(request=JudgeEndpointInputSerializer(partial=True), responses={200: JudgeEndpointOutputSerializer})
    def patch(self, request, endpoint_id: int):
        endpoint = get_object_or_404(JudgeEndpoint, pk=endpoint_id)
        data = JudgeEndpointInputSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        try:
            endpoint = judge_endpoint_update(endpoint=endpoint, changed_by=request.user, **data.validated_data)
        except JudgeEndpointError as exc:
            raise _refused(exc) from exc
        return Response(JudgeEndpointOutputSerializer(endpoint).data)

    @extend_schema(responses={204: None})
    def delete(self, request, endpoint_id: int):
        endpoint = get_object_or_404(JudgeEndpoint, pk=endpoint_id)
        try:
            endpoint.delete()
        except ProtectedError as exc:
            raise _refused(exc) from exc
        return Response(status=status.HTTP_204_NO_CONTENT)


#: The request names the judge `endpoint`.
_RUN_FIELDS = {"endpoint_id": "endpoint"}
_RunInput = declared_serializer("MachineJudgeRunInput", MACHINE_JUDGE_RUN.params, rename=_RUN_FIELDS)


def _start(request, *, pool=None, judgment_set=None) -> Response:
    data = _RunInput(data=request.data)
    data.is_valid(raise_exception=True)
    try:
        job = machine_judge_run_start(endpoint_id=data.validated_data["endpoint_id"], pool=pool,
                                      judgment_set=judgment_set, created_by=request.user)
    except JudgeRunError as exc:
        raise refused(exc, rename=_RUN_FIELDS) from exc
    return job_accepted_response(job, True)


class PoolMachineJudgeRunApi(APIView):
    """Admin: run a registered machine judge over the pool's pairs, as a job; its result names the
    MachineJudge made (verdicts, requests and tokens spent, errors)."""

    permission_classes = [IsAdmin]

    @extend_schema(request=_RunInput, responses={202: JobOutputSerializer})
    def post(self, request, pool_id: int):
        return _start(request, pool=get_object_or_404(Pool, pk=pool_id))


class JudgmentSetMachineJudgeRunApi(APIView):
    """Admin: run a registered machine judge over the pairs a judgment set has verdicts on, as a job."""

    permission_classes = [IsAdmin]

    @extend_schema(request=_RunInput, responses={202: JobOutputSerializer})
    def post(self, request, judgment_set_id: int):
        return _start(request, judgment_set=get_object_or_404(JudgmentSet, pk=judgment_set_id))
