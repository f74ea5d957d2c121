from django.contrib import admin
from django.urls import include, path

from config.metrics import metrics_view

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("api.urls")),
    path("metrics", metrics_view, name="metrics"),
    path("", include("frontend.urls")),
]
