"""URL routes of the moments area, included under /api/v1/: moment pools, sampled pools, their
reports and the per-query chart."""
from django.urls import path

from api.views import moments

urlpatterns = [
    path("moment-pools/", moments.MomentPoolBuildApi.as_view(), name="moment-pool-build"),
    path("sampled-pools/", moments.SampledPoolBuildApi.as_view(), name="sampled-pool-build"),
    path("pools/<id:pool_id>/moment-design/", moments.MomentPoolDesignApi.as_view(), name="moment-pool-design"),
    path("pools/<id:pool_id>/moment-spans/", moments.MomentSpanListApi.as_view(), name="moment-spans"),
    path("pools/<id:pool_id>/sampled-design/", moments.SampledPoolDesignApi.as_view(), name="sampled-pool-design"),
    path("pools/<id:pool_id>/moment-metrics/", moments.MomentMetricsApi.as_view(), name="moment-metrics"),
    path("pools/<id:pool_id>/moment-metrics/<id:report_id>/", moments.MomentMetricsDetailApi.as_view(),
         name="moment-metrics-detail"),
    path("pools/<id:pool_id>/moment-metrics/<id:report_id>.csv", moments.MomentMetricsCsvApi.as_view(),
         name="moment-metrics-csv"),
    path("pools/<id:pool_id>/infap/", moments.InfapApi.as_view(), name="infap"),
    path("pools/<id:pool_id>/infap/<id:report_id>/", moments.InfapDetailApi.as_view(), name="infap-detail"),
    path("pools/<id:pool_id>/infap/<id:report_id>.csv", moments.InfapCsvApi.as_view(), name="infap-csv"),
    path("pools/<id:pool_id>/query-chart.svg", moments.QueryChartApi.as_view(), name="query-chart"),
]
