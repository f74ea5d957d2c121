"""Page routes of crowd studies (the worker's pages) and the admin's quality-control page."""
from django.urls import path

from frontend.views import crowd

urlpatterns = [
    path("study/<str:token>/", crowd.study_entry, name="study-entry"),
    path("study/<str:token>/enter/", crowd.study_enter, name="study-enter"),
    path("study/<str:token>/switch/", crowd.study_switch, name="study-switch"),
    path("study/<str:token>/go/", crowd.study_stage, name="study-stage"),
    path("study/<str:token>/consent/", crowd.study_consent, name="study-consent"),
    path("study/<str:token>/start/", crowd.study_start, name="study-start"),
    path("study/<str:token>/work/", crowd.study_work, name="study-work"),
    path("study/<str:token>/leave/", crowd.study_leave, name="study-leave"),
    path("study/<str:token>/return/", crowd.study_return, name="study-return"),
    path("admin-ui/pools/<id:pool_id>/quality/", crowd.pool_quality, name="admin-pool-quality"),
]
