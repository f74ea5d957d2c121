"""Routes of crowd studies (admin settings and QC; the worker's side of a study)."""
from django.urls import path

from api.views import crowd

urlpatterns = [
    path("pools/<id:pool_id>/crowd-study/", crowd.CrowdStudyApi.as_view(), name="pool-crowd-study"),
    path("pools/<id:pool_id>/quality-rule/", crowd.QualityRuleApi.as_view(), name="pool-quality-rule"),
    path("pools/<id:pool_id>/rater-quality/", crowd.RaterQualityApi.as_view(), name="pool-rater-quality"),
    path("study/<str:token>/arrive/", crowd.StudyArriveApi.as_view(), name="study-arrive"),
    path("study/<str:token>/progress/", crowd.StudyProgressApi.as_view(), name="study-progress"),
    path("study/<str:token>/consent/", crowd.StudyConsentApi.as_view(), name="study-consent"),
    path("study/<str:token>/guidelines-read/", crowd.StudyGuidelinesReadApi.as_view(), name="study-guidelines-read"),
    path("study/<str:token>/leave/", crowd.StudyLeaveApi.as_view(), name="study-leave"),
    path("study/<str:token>/return/", crowd.StudyReturnApi.as_view(), name="study-return"),
]
