from django.contrib import admin
from django.urls import include, path, register_converter

from api.bounds import IdConverter
from config.metrics import metrics_view

# `<id:...>` is Django's `<int:...>` bounded to what the database holds (a larger id is a 404, not a
# 500 on SQLite); registered before the included route modules are read. Use it for every id.
register_converter(IdConverter, "id")

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("api.urls")),
    path("metrics", metrics_view, name="metrics"),
    path("", include("frontend.urls")),
]
