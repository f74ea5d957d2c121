"""Page routes of releases."""
from django.urls import path

from frontend.views import releases

urlpatterns = [
    path("releases/", releases.release_index, name="release-index"),
    path("releases/<id:release_id>/", releases.release_detail, name="release-detail"),
]
