"""Routes of releases, included under /api/v1/."""
from django.urls import path

from api.views import releases

urlpatterns = [
    path("releases/", releases.ReleaseListApi.as_view(), name="release-list"),
    path("releases/<id:release_id>/", releases.ReleaseDetailApi.as_view(), name="release-detail"),
    path("releases/<id:release_id>/archive/", releases.ReleaseArchiveApi.as_view(), name="release-archive"),
]
