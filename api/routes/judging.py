"""Routes of a pool's judging order and stopping, included under /api/v1/."""
from django.urls import path

from api.views import judging

urlpatterns = [
    path("pools/<id:pool_id>/queries/", judging.PoolQueriesApi.as_view(), name="pool-queries"),
    path("pools/<id:pool_id>/queries/<id:caption_id>/resume/", judging.QueryResumeApi.as_view(), name="pool-query-resume"),
    path("pools/<id:pool_id>/judging/resume/", judging.PoolJudgingResumeApi.as_view(), name="pool-judging-resume"),
]
