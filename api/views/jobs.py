from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Job
from annotation.services.jobs import job_live_progress
from api.permissions import IsAdmin


class JobOutputSerializer(serializers.ModelSerializer):
    progress = serializers.SerializerMethodField()
    status_url = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = ["id", "kind", "status", "progress", "message", "result", "errors", "params", "created_at",
                  "started_at", "finished_at", "status_url"]

    def get_progress(self, job) -> dict:
        live = job_live_progress(job=job)
        total = live.get("total")
        fraction = (min(1.0, live["done"] / total) if total else (1.0 if job.status == Job.Status.SUCCEEDED else None))
        return {"done": live.get("done", 0), "total": total, "fraction": fraction}

    def get_status_url(self, job) -> str:
        return reverse("api:job-detail", args=[job.pk])


def job_accepted_response(job: Job, created: bool) -> Response:
    """202 with the job and where to poll it (200 when an identical request had already started it)."""
    body = JobOutputSerializer(job).data
    return Response(body, status=202 if created else 200, headers={"Location": body["status_url"]})


class JobListApi(ListAPIView):
    """Admin: recent jobs, newest first."""

    permission_classes = [IsAdmin]
    serializer_class = JobOutputSerializer
    queryset = Job.objects.all()


class JobDetailApi(APIView):
    """Admin: one job's status, progress, result, and the problems that failed it."""

    permission_classes = [IsAdmin]

    @extend_schema(responses=JobOutputSerializer)
    def get(self, request, job_id: int):
        return Response(JobOutputSerializer(get_object_or_404(Job, pk=job_id)).data)
