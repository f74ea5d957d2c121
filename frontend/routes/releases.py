"""Page routes of releases."""
from django.urls import path

from frontend.views import releases, submissions

urlpatterns = [
    path("releases/", releases.release_index, name="release-index"),
    path("releases/<id:release_id>/", releases.release_detail, name="release-detail"),
    path("releases/<id:release_id>/submissions/", submissions.release_submit, name="release-submit"),
    path("releases/<id:release_id>/submission-policy/", submissions.release_submission_policy,
         name="release-submission-policy"),
    path("releases/<id:release_id>/submissions/<id:submission_id>/accept/", submissions.release_submission_accept,
         name="release-submission-accept"),
]
