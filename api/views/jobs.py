from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Job, JobAttempt
from annotation.services.jobs import job_live_progress
from annotation.services.jobs.recovery import JobRetryRefused, job_retry, job_retry_refusal
from annotation.services.operations.describe import job_summary, job_title
from api.permissions import IsAdmin


class JobAttemptOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = JobAttempt
        fields = ["number", "outcome", "worker", "started_at", "heartbeat_at", "finished_at", "message"]


class JobOutputSerializer(serializers.ModelSerializer):
    progress = serializers.SerializerMethodField()
    status_url = serializers.SerializerMethodField()
    retryable = serializers.SerializerMethodField()
    retry_refusal = serializers.SerializerMethodField()
    retry_url = serializers.SerializerMethodField()
    attempt_history = JobAttemptOutputSerializer(source="attempt_records", many=True, read_only=True)
    title = serializers.SerializerMethodField()
    summary = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = ["id", "kind", "title", "summary", "status", "progress", "message", "result", "errors", "params", "created_at",
                  "started_at", "finished_at", "status_url", "attempts", "attempt_history", "retryable", "retry_refusal", "retry_url"]

    def get_progress(self, job) -> dict:
        live = job_live_progress(job=job)
        total = live.get("total")
        fraction = (min(1.0, live["done"] / total) if total else (1.0 if job.status == Job.Status.SUCCEEDED else None))
        return {"done": live.get("done", 0), "total": total, "fraction": fraction}

    def get_title(self, job) -> str:
        """What the job does and to what, in words ("Build a pool: main")."""
        return job_title(job)

    def get_summary(self, job) -> str | None:
        """A job that succeeded: its result in a sentence, for operations that say one."""
        return job_summary(job)

    def get_status_url(self, job) -> str:
        return reverse("api:job-detail", args=[job.pk])

    def get_retryable(self, job) -> bool:
        return job.status == Job.Status.FAILED and job_retry_refusal(job=job) is None

    def get_retry_refusal(self, job) -> str | None:
        """Why a failed job cannot be retried (None for jobs that are not failed)."""
        return job_retry_refusal(job=job) if job.status == Job.Status.FAILED else None

    def get_retry_url(self, job) -> str:
        return reverse("api:job-retry", args=[job.pk])


def job_accepted_response(job: Job, created: bool) -> Response:
    """202 with the job and where to poll it (200 when an identical request had already started it)."""
    body = JobOutputSerializer(job).data
    return Response(body, status=202 if created else 200, headers={"Location": body["status_url"]})


class JobListApi(ListAPIView):
    """Admin: recent jobs, newest first."""

    permission_classes = [IsAdmin]
    serializer_class = JobOutputSerializer
    queryset = Job.objects.prefetch_related("attempt_records")


class JobDetailApi(APIView):
    """Admin: one job's status, progress, result, the problems that failed it, and its attempts
    (each execution by a worker, with how it ended)."""

    permission_classes = [IsAdmin]

    @extend_schema(responses=JobOutputSerializer)
    def get(self, request, job_id: int):
        return Response(JobOutputSerializer(get_object_or_404(Job, pk=job_id)).data)


class JobRetryApi(APIView):
    """Admin: queue a failed job again (202 + status URL). 409 naming the reason when it cannot be
    retried: not failed, its file was refused, or its upload is gone."""

    permission_classes = [IsAdmin]

    @extend_schema(request=None, responses={202: JobOutputSerializer})
    def post(self, request, job_id: int):
        try:
            job = job_retry(job=get_object_or_404(Job, pk=job_id), requested_by=request.user)
        except JobRetryRefused as exc:
            return Response({"detail": str(exc)}, status=409)
        return job_accepted_response(job, True)
