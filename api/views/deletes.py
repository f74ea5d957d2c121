"""The DELETE of a dataset, a pool or a judgment set (their detail views call `delete_accepted`):
the delete runs as a job (services/deletes.py), so the answer is 202 with the job and where to poll
it; 200 with the same job when the request was sent again (its Idempotency-Key, or while that
delete is still queued or running); 409 when a release refers to the row (releases are kept)."""
from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response

from annotation.services.deletes import DeleteRefused, delete_start
from annotation.services.operations.operation import Operation
from api.params import idempotency_key
from api.views.jobs import JobOutputSerializer, job_accepted_response


def delete_schema(what: str):
    return extend_schema(
        description=f"Admin: delete the {what} and everything that depends on it, as a background job.",
        responses={202: JobOutputSerializer, 200: JobOutputSerializer,
                   409: OpenApiResponse(description="a release refers to it")})


def delete_accepted(request, operation: Operation, target) -> Response:
    try:
        job, created = delete_start(operation, target=target, created_by=request.user,
                                    idempotency_key=idempotency_key(request))
    except DeleteRefused as exc:
        return Response({"detail": str(exc)}, status=409)
    return job_accepted_response(job, created)
