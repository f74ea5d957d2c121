"""A pool's judging order and stopping: per-query status (admins and researchers) and an admin's
resume of a stopped query or pool. Strategy settings are changed with PATCH pools/{id}/."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Pool
from annotation.selectors.judging import pool_query_statuses
from annotation.services.judging import JudgingError, pool_resume, query_resume
from api.params import query_int
from api.permissions import IsAdmin, IsAdminOrResearcherReadOnly


def _refusal(exc: JudgingError) -> Response:
    if exc.code == "not_found":
        raise NotFound(str(exc))
    code = status.HTTP_409_CONFLICT if exc.code == "conflict" else status.HTTP_400_BAD_REQUEST
    return Response({"detail": str(exc), "code": exc.code}, status=code)


class PoolQueriesApi(APIView):
    """Admins and researchers: the pool's queries in their turn, each with pairs, judged,
    relevant found, left to judge, the query budget, and whether and why it stopped.
    ?stopped=1 lists only stopped queries; ?offset=&limit= (at most 1000) page."""

    permission_classes = [IsAdminOrResearcherReadOnly]

    @extend_schema(parameters=[OpenApiParameter("stopped", bool, description="only stopped queries"),
                               OpenApiParameter("offset", int), OpenApiParameter("limit", int, description="1 to 1000")])
    def get(self, request, pool_id: int):
        pool = get_object_or_404(Pool, pk=pool_id)
        stopped = request.query_params.get("stopped", "").lower() in ("1", "true", "yes")
        return Response(pool_query_statuses(
            pool=pool, stopped_only=stopped, offset=query_int(request, "offset", default=0, min_value=0, max_value=10**9),
            limit=query_int(request, "limit", default=100, min_value=1, max_value=1000)))


class QueryResumeApi(APIView):
    """Admin: resume a stopped query; its stopped pairs come back to the queue in the order the
    strategy gives now, and its budget and misses in a row count again from here. 409 if the
    query is not stopped."""

    permission_classes = [IsAdmin]

    @extend_schema(request=None)
    def post(self, request, pool_id: int, caption_id: int):
        pool = get_object_or_404(Pool, pk=pool_id)
        try:
            query = query_resume(pool=pool, caption_id=caption_id)
        except JudgingError as exc:
            return _refusal(exc)
        return Response({"caption": query.caption_id, "stopped": False, "resumed_at": query.resumed_at,
                         "judged": query.judged})


class PoolJudgingResumeApi(APIView):
    """Admin: resume a pool its budget stopped; the pool budget counts again from here (raise it
    with PATCH pools/{id}/ to judge more than one more budget's worth). 409 if not stopped."""

    permission_classes = [IsAdmin]

    @extend_schema(request=None)
    def post(self, request, pool_id: int):
        pool = get_object_or_404(Pool, pk=pool_id)
        try:
            result = pool_resume(pool=pool)
        except JudgingError as exc:
            return _refusal(exc)
        return Response({"stopped": False} | result)
