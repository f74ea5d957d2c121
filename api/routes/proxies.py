"""URL routes of the proxies area, included under /api/v1/: ranking studies and proxy matrices."""
from django.urls import path

from api.views import proxies, ranking

urlpatterns = [
    # rater
    path("my/ranking-studies/", ranking.MyRankingStudiesApi.as_view(), name="my-ranking-studies"),
    path("ranking-studies/<id:study_id>/next/", ranking.RankingNextApi.as_view(), name="ranking-next"),
    path("ranking-leases/<str:lease_id>/heartbeat/", ranking.RankingLeaseHeartbeatApi.as_view(),
         name="ranking-lease-heartbeat"),
    path("ranking-leases/<str:lease_id>/release/", ranking.RankingLeaseReleaseApi.as_view(), name="ranking-lease-release"),
    path("ranking-submissions/", ranking.RankingSubmissionApi.as_view(), name="ranking-submission"),
    # admin (and researchers reading)
    path("ranking-studies/", ranking.RankingStudyListCreateApi.as_view(), name="ranking-study-list"),
    path("ranking-studies/<id:study_id>/", ranking.RankingStudyDetailApi.as_view(), name="ranking-study-detail"),
    path("ranking-studies/<id:study_id>/members/", ranking.RankingStudyMembersApi.as_view(),
         name="ranking-study-members"),
    path("ranking-studies/<id:study_id>/report/", ranking.RankingStudyReportApi.as_view(), name="ranking-study-report"),
    path("datasets/<id:dataset_id>/proxies/", proxies.DatasetProxyMatricesApi.as_view(), name="dataset-proxies"),
    path("datasets/<id:dataset_id>/proxy-analysis/", proxies.DatasetProxyAnalysisApi.as_view(),
         name="dataset-proxy-analysis"),
    path("proxy-matrices/<id:artefact_id>/download/", proxies.ProxyMatrixDownloadApi.as_view(),
         name="proxy-matrix-download"),
    path("runs/<id:run_id>/proxy-ndcg/", proxies.RunProxyNdcgApi.as_view(), name="run-proxy-ndcg"),
]
