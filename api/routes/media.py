"""URL routes of the media area, included under /api/v1/: a dataset's media check and playable copies."""
from django.urls import path

from api.views import media

urlpatterns = [
    path("datasets/<id:dataset_id>/media-check/", media.DatasetMediaCheckApi.as_view(), name="dataset-media-check"),
    path("datasets/<id:dataset_id>/media-prepare/", media.DatasetMediaPrepareApi.as_view(),
         name="dataset-media-prepare"),
]
