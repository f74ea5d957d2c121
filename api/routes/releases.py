"""Routes of releases, included under /api/v1/."""
from django.urls import path

from api.views import releases, submissions

urlpatterns = [
    path("releases/", releases.ReleaseListApi.as_view(), name="release-list"),
    path("releases/<id:release_id>/", releases.ReleaseDetailApi.as_view(), name="release-detail"),
    path("releases/<id:release_id>/archive/", releases.ReleaseArchiveApi.as_view(), name="release-archive"),
    path("releases/<id:release_id>/submissions/", submissions.ReleaseSubmissionListApi.as_view(),
         name="release-submissions"),
    path("releases/<id:release_id>/submission-policy/", submissions.ReleaseSubmissionPolicyApi.as_view(),
         name="release-submission-policy"),
    path("submissions/<id:submission_id>/", submissions.SubmissionDetailApi.as_view(), name="submission-detail"),
    path("submissions/<id:submission_id>/accept/", submissions.SubmissionAcceptApi.as_view(),
         name="submission-accept"),
    path("submissions/<id:submission_id>/rescore/", submissions.SubmissionRescoreApi.as_view(),
         name="submission-rescore"),
]
