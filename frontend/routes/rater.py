"""Page routes of the rater area."""
from django.urls import path

from frontend.views import rater

urlpatterns = [
    path("judge/<id:pool_id>/", rater.judge, name="judge"),
    path("rank/<id:study_id>/", rater.rank, name="rank"),
]
