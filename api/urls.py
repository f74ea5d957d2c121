from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from api import docs
from api.views import accounts, datasets, jobs

app_name = "api"

urlpatterns = [
    # First: every judged pair makes two requests here (next, label), and Django tries the patterns in order.
    path("", include("api.routes.queue")),
    path("schema/", SpectacularAPIView.as_view(permission_classes=[]), name="schema"),
    path("docs/", docs.swagger_page, name="docs"),
    path("redoc/", docs.redoc_page, name="redoc"),
    path("redoc/redoc.standalone.js", docs.redoc_bundle, name="redoc-bundle"),
    path("me/", accounts.MeApi.as_view(), name="me"),
    path("datasets/", datasets.DatasetListApi.as_view(), name="dataset-list"),
    path("datasets/import/", datasets.DatasetImportApi.as_view(), name="dataset-import"),
    path("datasets/<id:dataset_id>/", datasets.DatasetDetailApi.as_view(), name="dataset-detail"),
    path("datasets/<id:dataset_id>/runs/", datasets.RunListApi.as_view(), name="run-list"),
    path("datasets/<id:dataset_id>/runs/import/", datasets.RunImportApi.as_view(), name="run-import"),
    path("jobs/", jobs.JobListApi.as_view(), name="job-list"),
    path("jobs/<id:job_id>/", jobs.JobDetailApi.as_view(), name="job-detail"),
    path("jobs/<id:job_id>/retry/", jobs.JobRetryApi.as_view(), name="job-retry"),
    path("", include("api.routes.judging")),
    path("", include("api.routes.reports")),
    path("", include("api.routes.judging_reports")),
    path("", include("api.routes.judgment_sets")),
    path("", include("api.routes.proxies")),
    path("", include("api.routes.moments")),
    path("", include("api.routes.researchers")),
    path("", include("api.routes.crowd")),
    path("", include("api.routes.machine_judges")),
    path("", include("api.routes.releases")),
    path("", include("api.routes.media")),
]
